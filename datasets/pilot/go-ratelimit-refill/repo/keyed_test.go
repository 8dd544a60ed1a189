package ratelimit

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"
)

func TestKeyedIndependentLimiters(t *testing.T) {
	clock := NewManualClock(epoch)
	k := NewKeyed(time.Second, 2, clock)
	if !k.Allow("a") || !k.Allow("a") || k.Allow("a") {
		t.Fatal("key a should get exactly its burst")
	}
	if !k.Allow("b") {
		t.Fatal("key b is limited by key a")
	}
	if k.Get("a") != k.Get("a") {
		t.Fatal("Get should return the same limiter")
	}
	if got := k.Keys(); !reflect.DeepEqual(got, []string{"a", "b"}) || k.Len() != 2 {
		t.Fatalf("keys %v", got)
	}
}

func TestKeyedPrune(t *testing.T) {
	clock := NewManualClock(epoch)
	k := NewKeyed(time.Second, 3, clock)
	k.Allow("old")
	clock.Advance(2 * time.Second)
	k.Allow("new")
	if n := k.Prune(); n != 0 {
		t.Fatalf("pruned %d too early", n)
	}
	clock.Advance(time.Second)
	if n := k.Prune(); n != 1 || !reflect.DeepEqual(k.Keys(), []string{"new"}) {
		t.Fatalf("pruned %d, keys %v", n, k.Keys())
	}
}

func TestKeyedNilClock(t *testing.T) {
	if !NewKeyed(time.Second, 1, nil).Allow("x") {
		t.Fatal("system clock keyed limiter")
	}
}

func TestClientIP(t *testing.T) {
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "192.0.2.7:5555"
	r.Header.Set("X-Forwarded-For", "198.51.100.1, 10.0.0.1")
	if got := ClientIP(false)(r); got != "192.0.2.7" {
		t.Errorf("ClientIP(false) = %q", got)
	}
	if got := ClientIP(true)(r); got != "198.51.100.1" {
		t.Errorf("ClientIP(true) = %q", got)
	}
	r.RemoteAddr = "not-an-address"
	if got := ClientIP(false)(r); got != "not-an-address" {
		t.Errorf("ClientIP without port = %q", got)
	}
}

func TestMiddleware(t *testing.T) {
	clock := NewManualClock(epoch)
	k := NewKeyed(2*time.Second, 1, clock)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	h := Middleware(k, ClientIP(false), ok)

	do := func(addr string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/thing", nil)
		r.RemoteAddr = addr
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := do("192.0.2.1:1000"); w.Code != http.StatusNoContent {
		t.Fatalf("first request: %d", w.Code)
	}
	w := do("192.0.2.1:1001")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "2" {
		t.Fatalf("second request: %d, Retry-After %q", w.Code, w.Header().Get("Retry-After"))
	}
	if w := do("192.0.2.2:1000"); w.Code != http.StatusNoContent {
		t.Fatalf("other client: %d", w.Code)
	}
	clock.Advance(2 * time.Second)
	if w := do("192.0.2.1:1002"); w.Code != http.StatusNoContent {
		t.Fatalf("after waiting: %d", w.Code)
	}
}
