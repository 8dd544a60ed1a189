module ratelimit

go 1.19
