package ratelimit

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

var epoch = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

func newTestLimiter(interval time.Duration, burst int, opts ...Option) (*Limiter, *ManualClock) {
	clock := NewManualClock(epoch)
	return New(interval, burst, append([]Option{WithClock(clock)}, opts...)...), clock
}

func TestBurstThenDenied(t *testing.T) {
	l, _ := newTestLimiter(time.Second, 3)
	for i := 0; i < 3; i++ {
		if !l.Allow() {
			t.Fatalf("event %d denied within burst", i)
		}
	}
	if l.Allow() {
		t.Fatal("event beyond burst allowed")
	}
	if l.Tokens() != 0 {
		t.Fatalf("tokens = %d", l.Tokens())
	}
}

func TestRefillOneTokenPerInterval(t *testing.T) {
	l, clock := newTestLimiter(100*time.Millisecond, 2)
	l.AllowN(2)
	clock.Advance(100 * time.Millisecond)
	if !l.Allow() || l.Allow() {
		t.Fatal("expected exactly one token after one interval")
	}
	clock.Advance(300 * time.Millisecond)
	if got := l.Tokens(); got != 2 {
		t.Fatalf("tokens = %d, want 2 (capped at burst)", got)
	}
}

func TestSteadyRateAtExactIntervals(t *testing.T) {
	l, clock := newTestLimiter(250*time.Millisecond, 1)
	allowed := 0
	for i := 0; i < 40; i++ {
		if l.Allow() {
			allowed++
		}
		clock.Advance(250 * time.Millisecond)
	}
	if allowed != 40 {
		t.Fatalf("allowed %d of 40", allowed)
	}
}

func TestAllowNIsAllOrNothing(t *testing.T) {
	l, clock := newTestLimiter(time.Second, 5, WithInitialTokens(2))
	if l.AllowN(3) {
		t.Fatal("AllowN(3) with 2 tokens")
	}
	if l.Tokens() != 2 {
		t.Fatal("failed AllowN consumed tokens")
	}
	clock.Advance(time.Second)
	if !l.AllowN(3) || l.Tokens() != 0 {
		t.Fatal("AllowN(3) with 3 tokens")
	}
	if !l.AllowN(0) || !l.AllowN(-1) {
		t.Fatal("AllowN of nothing should succeed")
	}
}

func TestInitialTokensClamped(t *testing.T) {
	if l, _ := newTestLimiter(time.Second, 2, WithInitialTokens(10)); l.Tokens() != 2 {
		t.Error("initial tokens above burst")
	}
	if l, _ := newTestLimiter(time.Second, 2, WithInitialTokens(-4)); l.Tokens() != 0 {
		t.Error("negative initial tokens")
	}
}

func TestDelay(t *testing.T) {
	l, clock := newTestLimiter(time.Second, 2)
	if l.Delay() != 0 {
		t.Fatal("full bucket should not delay")
	}
	l.AllowN(2)
	if d := l.Delay(); d != time.Second {
		t.Fatalf("Delay = %v, want 1s", d)
	}
	if d := l.DelayN(2); d != 2*time.Second {
		t.Fatalf("DelayN(2) = %v, want 2s", d)
	}
	if d := l.DelayN(5); d != 2*time.Second {
		t.Fatalf("DelayN(5) = %v, want 2s (capped at burst)", d)
	}
	clock.Advance(time.Second)
	if d := l.DelayN(2); d != time.Second {
		t.Fatalf("DelayN(2) after 1s = %v, want 1s", d)
	}
}

func TestClockGoingBackwards(t *testing.T) {
	l, clock := newTestLimiter(time.Second, 1)
	l.Allow()
	clock.Advance(-time.Hour)
	if l.Allow() {
		t.Fatal("allowed after the clock went backwards")
	}
	clock.Advance(time.Second)
	if !l.Allow() {
		t.Fatal("should refill one interval after the new reading")
	}
}

func TestLongIdleDoesNotOverflow(t *testing.T) {
	l, clock := newTestLimiter(time.Nanosecond, 1<<40)
	l.AllowN(1 << 40)
	clock.Advance(200 * 365 * 24 * time.Hour)
	if got := l.Tokens(); got != 1<<40 {
		t.Fatalf("tokens = %d", got)
	}
}

func TestConstructorPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"zero interval": func() { New(0, 1) },
		"zero burst":    func() { New(time.Second, 0) },
		"zero rate":     func() { PerSecond(0, 1) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

func TestPerSecondAndString(t *testing.T) {
	l := PerSecond(4, 2)
	if l.Interval() != 250*time.Millisecond || l.Burst() != 2 {
		t.Fatal(l)
	}
	if s := l.String(); s != "ratelimit.Limiter(1 per 250ms, burst 2)" {
		t.Fatal(s)
	}
}

func TestConcurrentAllowNeverExceedsBurst(t *testing.T) {
	l, _ := newTestLimiter(time.Hour, 50)
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				if l.Allow() {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if allowed != 50 {
		t.Fatalf("allowed %d, want 50", allowed)
	}
}

func TestWaitRealClock(t *testing.T) {
	start := time.Now()
	l := New(5*time.Millisecond, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := 0; i < 4; i++ {
		if err := l.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if elapsed := time.Since(start); elapsed < 15*time.Millisecond {
		t.Fatalf("4 events with burst 1 took only %v", elapsed)
	}
	if err := l.WaitN(ctx, 2); !errors.Is(err, ErrExceedsBurst) {
		t.Fatalf("WaitN beyond burst: %v", err)
	}
}

func TestWaitHonoursContext(t *testing.T) {
	l := New(time.Hour, 1)
	l.Allow()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := l.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait = %v", err)
	}
}
