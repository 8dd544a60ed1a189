package ratelimit

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// KeyFunc picks the rate-limiting key for a request.
type KeyFunc func(r *http.Request) string

// ClientIP keys requests by the remote address without its port. When
// trustProxy is set, the first address in X-Forwarded-For wins.
func ClientIP(trustProxy bool) KeyFunc {
	return func(r *http.Request) string {
		if trustProxy {
			if fwd := r.Header.Get("X-Forwarded-For"); fwd != "" {
				first := strings.TrimSpace(strings.Split(fwd, ",")[0])
				if first != "" {
					return first
				}
			}
		}
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			return r.RemoteAddr
		}
		return host
	}
}

// Middleware rejects requests over the limit with 429 Too Many Requests
// and a Retry-After header (whole seconds, rounded up).
func Middleware(k *Keyed, key KeyFunc, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l := k.Get(key(r))
		if l.Allow() {
			next.ServeHTTP(w, r)
			return
		}
		wait := l.Delay()
		secs := int64((wait + time.Second - 1) / time.Second)
		if secs < 1 {
			secs = 1
		}
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		http.Error(w, "rate limit exceeded", http.StatusTooManyRequests)
	})
}
