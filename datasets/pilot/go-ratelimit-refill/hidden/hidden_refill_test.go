package ratelimit

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func hiddenLimiter(interval time.Duration, burst int) (*Limiter, *ManualClock) {
	clock := NewManualClock(time.Date(2024, 5, 1, 8, 0, 0, 0, time.UTC))
	return New(interval, burst, WithClock(clock)), clock
}

func TestHiddenFrequentPollingKeepsConfiguredRate(t *testing.T) {
	l, clock := hiddenLimiter(100*time.Millisecond, 5)
	if !l.AllowN(5) {
		t.Fatal("initial burst")
	}
	allowed := 0
	for i := 0; i < 100; i++ { // polls at 30ms, 60ms, ..., 3000ms
		clock.Advance(30 * time.Millisecond)
		if l.Allow() {
			allowed++
		}
	}
	// one token is earned at every 100ms mark; the bucket never fills up
	if allowed != 30 {
		t.Fatalf("allowed %d events in 3s at 1 per 100ms, want 30", allowed)
	}
}

func TestHiddenPollingRateForSeveralPeriods(t *testing.T) {
	for _, poll := range []time.Duration{7, 13, 45, 99, 101, 150} {
		poll *= time.Millisecond
		l, clock := hiddenLimiter(100*time.Millisecond, 3)
		l.AllowN(3)
		allowed := 0
		var now time.Duration
		for now+poll <= 10*time.Second {
			clock.Advance(poll)
			now += poll
			if l.Allow() {
				allowed++
			}
		}
		// polled faster than tokens arrive: every token is taken as soon
		// as it exists; polled slower: every poll finds a token
		want := int(now / (100 * time.Millisecond))
		if poll > 100*time.Millisecond {
			want = int(now / poll)
		}
		if allowed != want {
			t.Errorf("polling every %v for %v: allowed %d, want %d", poll, now, allowed, want)
		}
	}
}

func TestHiddenDelayCountsPartialProgress(t *testing.T) {
	l, clock := hiddenLimiter(time.Second, 2)
	l.AllowN(2)
	clock.Advance(1500 * time.Millisecond)
	if !l.Allow() {
		t.Fatal("token earned at 1s not available at 1.5s")
	}
	if d := l.Delay(); d != 500*time.Millisecond {
		t.Fatalf("Delay = %v, want 500ms (next token is due at 2s)", d)
	}
	clock.Advance(500 * time.Millisecond)
	if !l.Allow() {
		t.Fatal("token due at 2s not available at 2s")
	}
}

func TestHiddenObservingDoesNotSlowRefill(t *testing.T) {
	l, clock := hiddenLimiter(time.Second, 2)
	l.AllowN(2)
	clock.Advance(1500 * time.Millisecond)
	if got := l.Tokens(); got != 1 {
		t.Fatalf("tokens at 1.5s = %d, want 1", got)
	}
	clock.Advance(500 * time.Millisecond)
	if got := l.Tokens(); got != 2 {
		t.Fatalf("tokens at 2s = %d, want 2", got)
	}
}

func TestHiddenFullBucketDoesNotBank(t *testing.T) {
	l, clock := hiddenLimiter(time.Second, 2)
	clock.Advance(10500 * time.Millisecond)
	if !l.AllowN(2) {
		t.Fatal("full bucket")
	}
	clock.Advance(500 * time.Millisecond)
	if got := l.Tokens(); got != 0 {
		t.Fatalf("tokens = %d, want 0: time spent full must not count", got)
	}
	clock.Advance(500 * time.Millisecond)
	if got := l.Tokens(); got != 1 {
		t.Fatalf("tokens = %d, want 1", got)
	}
}

func TestHiddenRetryAfterUsesPartialProgress(t *testing.T) {
	clock := NewManualClock(time.Date(2024, 5, 1, 8, 0, 0, 0, time.UTC))
	k := NewKeyed(2*time.Second, 2, clock)
	h := Middleware(k, ClientIP(false), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	do := func() *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "203.0.113.9:4000"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for i := 0; i < 2; i++ {
		if w := do(); w.Code != http.StatusOK {
			t.Fatalf("request %d: %d", i, w.Code)
		}
	}
	clock.Advance(3 * time.Second)
	if w := do(); w.Code != http.StatusOK {
		t.Fatalf("request at 3s: %d", w.Code)
	}
	w := do()
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("request right after: %d, Retry-After %q; want 429 and 1 (next token at 4s)",
			w.Code, w.Header().Get("Retry-After"))
	}
}
