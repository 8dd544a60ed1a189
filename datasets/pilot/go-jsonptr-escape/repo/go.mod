module jsonptr

go 1.19
