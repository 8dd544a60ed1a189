// Package ratelimit provides token-bucket rate limiters: a single Limiter,
// a Keyed set of limiters (one per client, say) and an HTTP middleware.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrExceedsBurst is returned by WaitN when n can never be satisfied.
var ErrExceedsBurst = errors.New("ratelimit: request exceeds burst size")

// Limiter is a token bucket: it holds at most Burst tokens and gains one
// token every Interval. Each allowed event takes one token. A Limiter is
// safe for concurrent use.
type Limiter struct {
	mu       sync.Mutex
	clock    Clock
	interval time.Duration
	burst    int
	tokens   int
	last     time.Time // time of the last refill
}

// Option configures a Limiter.
type Option func(*Limiter)

// WithClock makes the limiter read time from c instead of the system clock.
func WithClock(c Clock) Option {
	return func(l *Limiter) { l.clock = c }
}

// WithInitialTokens starts the bucket with n tokens instead of a full one.
func WithInitialTokens(n int) Option {
	return func(l *Limiter) { l.tokens = n }
}

// New returns a limiter that allows one event per interval on average and
// bursts of up to burst events. The bucket starts full.
func New(interval time.Duration, burst int, opts ...Option) *Limiter {
	if interval <= 0 {
		panic("ratelimit: interval must be positive")
	}
	if burst < 1 {
		panic("ratelimit: burst must be at least 1")
	}
	l := &Limiter{clock: SystemClock, interval: interval, burst: burst, tokens: burst}
	for _, opt := range opts {
		opt(l)
	}
	if l.tokens < 0 {
		l.tokens = 0
	}
	if l.tokens > burst {
		l.tokens = burst
	}
	l.last = l.clock.Now()
	return l
}

// PerSecond is a shorthand for New(time.Second/n, burst, opts...).
func PerSecond(n int, burst int, opts ...Option) *Limiter {
	if n < 1 {
		panic("ratelimit: rate must be at least 1 per second")
	}
	return New(time.Second/time.Duration(n), burst, opts...)
}

// Interval returns the time it takes to gain one token.
func (l *Limiter) Interval() time.Duration { return l.interval }

// Burst returns the bucket size.
func (l *Limiter) Burst() int { return l.burst }

func (l *Limiter) String() string {
	return fmt.Sprintf("ratelimit.Limiter(1 per %v, burst %d)", l.interval, l.burst)
}

// refill adds the tokens earned since the last refill. Callers hold l.mu.
func (l *Limiter) refill(now time.Time) {
	if now.Before(l.last) {
		// the clock went backwards; start counting again from here
		l.last = now
		return
	}
	earned := now.Sub(l.last) / l.interval
	if earned == 0 {
		return
	}
	if earned >= time.Duration(l.burst-l.tokens) {
		l.tokens = l.burst
	} else {
		l.tokens += int(earned)
	}
	l.last = now
}

// Tokens returns the number of whole tokens available now.
func (l *Limiter) Tokens() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill(l.clock.Now())
	return l.tokens
}

// Allow reports whether one event may happen now, and takes a token if so.
func (l *Limiter) Allow() bool { return l.AllowN(1) }

// AllowN takes n tokens if they are all available now; it never takes
// only some of them.
func (l *Limiter) AllowN(n int) bool {
	if n <= 0 {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill(l.clock.Now())
	if l.tokens < n {
		return false
	}
	l.tokens -= n
	return true
}

// delayLocked is how long until n tokens are available. Callers hold l.mu
// and have refilled.
func (l *Limiter) delayLocked(now time.Time, n int) time.Duration {
	if l.tokens >= n {
		return 0
	}
	missing := time.Duration(n - l.tokens)
	next := l.last.Add(missing * l.interval)
	if d := next.Sub(now); d > 0 {
		return d
	}
	return 0
}

// Delay returns how long to wait before Allow would succeed (0 if now).
func (l *Limiter) Delay() time.Duration { return l.DelayN(1) }

// DelayN returns how long to wait before AllowN(n) would succeed. For n
// larger than the burst it returns the time to fill the bucket completely.
func (l *Limiter) DelayN(n int) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	l.refill(now)
	if n > l.burst {
		n = l.burst
	}
	return l.delayLocked(now, n)
}

// Wait blocks until an event may happen (taking its token) or ctx ends.
func (l *Limiter) Wait(ctx context.Context) error { return l.WaitN(ctx, 1) }

// WaitN blocks until n tokens can be taken at once, or ctx ends. Waiting
// uses real timers, so it is meant for limiters on the system clock.
func (l *Limiter) WaitN(ctx context.Context, n int) error {
	if n > l.burst {
		return ErrExceedsBurst
	}
	for {
		if l.AllowN(n) {
			return nil
		}
		d := l.DelayN(n)
		if d <= 0 {
			d = time.Millisecond
		}
		timer := time.NewTimer(d)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
	}
}
