package ratelimit

import (
	"sort"
	"sync"
	"time"
)

// Keyed keeps an independent Limiter per key (a client address, a user
// id...). Limiters that have been idle for longer than the time it takes
// them to refill completely are forgotten by Prune, since a new full
// limiter behaves the same.
type Keyed struct {
	mu       sync.Mutex
	clock    Clock
	interval time.Duration
	burst    int
	entries  map[string]*keyedEntry
}

type keyedEntry struct {
	limiter  *Limiter
	lastSeen time.Time
}

// NewKeyed returns a Keyed whose limiters all use interval and burst.
func NewKeyed(interval time.Duration, burst int, clock Clock) *Keyed {
	if clock == nil {
		clock = SystemClock
	}
	// fail early on bad settings rather than on the first request
	New(interval, burst, WithClock(clock))
	return &Keyed{
		clock:    clock,
		interval: interval,
		burst:    burst,
		entries:  make(map[string]*keyedEntry),
	}
}

// Get returns the limiter for key, creating it (full) if needed.
func (k *Keyed) Get(key string) *Limiter {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.clock.Now()
	e, ok := k.entries[key]
	if !ok {
		e = &keyedEntry{limiter: New(k.interval, k.burst, WithClock(k.clock))}
		k.entries[key] = e
	}
	e.lastSeen = now
	return e.limiter
}

// Allow takes a token from key's limiter if one is available.
func (k *Keyed) Allow(key string) bool { return k.Get(key).Allow() }

// Len returns the number of keys being tracked.
func (k *Keyed) Len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.entries)
}

// Keys returns the tracked keys in sorted order.
func (k *Keyed) Keys() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	keys := make([]string, 0, len(k.entries))
	for key := range k.entries {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}

// Prune forgets limiters unused for at least the full-refill time and
// returns how many were removed.
func (k *Keyed) Prune() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	idle := time.Duration(k.burst) * k.interval
	now := k.clock.Now()
	removed := 0
	for key, e := range k.entries {
		if now.Sub(e.lastSeen) >= idle {
			delete(k.entries, key)
			removed++
		}
	}
	return removed
}
