package admin

import (
	"sync"
	"time"
)

// Failed-authentication limits per client address: a token bucket of
// failureBurst attempts refilled at failureRate per second. Addresses whose
// bucket is empty get 429 without their credentials being checked.
const (
	failureRate      = 1.0
	failureBurst     = 20
	maxFailureStates = 10000
)

// failureLimiter is a small local token bucket per client address,
// bounded at maxFailureStates addresses (full buckets are forgotten first).
type failureLimiter struct {
	mu      sync.Mutex
	now     func() time.Time
	buckets map[string]*failureBucket
}

type failureBucket struct {
	tokens float64
	at     time.Time
}

func newFailureLimiter(now func() time.Time) *failureLimiter {
	return &failureLimiter{now: now, buckets: map[string]*failureBucket{}}
}

// refill brings b up to now and returns its tokens.
func (b *failureBucket) refill(now time.Time) float64 {
	if d := now.Sub(b.at).Seconds(); d > 0 {
		b.tokens = min(failureBurst, b.tokens+d*failureRate)
		b.at = now
	}
	return b.tokens
}

// allowed reports whether addr has a failed attempt left.
func (l *failureLimiter) allowed(addr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[addr]
	return !ok || b.refill(l.now()) >= 1
}

// fail takes one attempt from addr's bucket.
func (l *failureLimiter) fail(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b, ok := l.buckets[addr]
	if !ok {
		if len(l.buckets) >= maxFailureStates {
			l.prune(now)
		}
		b = &failureBucket{tokens: failureBurst, at: now}
		l.buckets[addr] = b
	}
	b.refill(now)
	b.tokens = max(0, b.tokens-1)
}

// prune forgets addresses whose bucket has refilled; if none has, it
// forgets all (a flood of distinct addresses must not grow memory).
func (l *failureLimiter) prune(now time.Time) {
	for addr, b := range l.buckets {
		if b.refill(now) >= failureBurst {
			delete(l.buckets, addr)
		}
	}
	if len(l.buckets) >= maxFailureStates {
		clear(l.buckets)
	}
}
