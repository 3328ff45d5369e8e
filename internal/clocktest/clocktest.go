// Package clocktest is the settable clock tests inject where code takes
// its time from a func() time.Time (ledger.Options.Now, engine.Options.Clock,
// gateway.Options.CacheClock): one helper, safe for concurrent use.
package clocktest

import (
	"sync"
	"testing"
	"time"
)

// Clock is a settable time source.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a Clock standing at t.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// Add moves the clock by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Ticking returns a time source that starts at t and moves on by step at
// every reading, so timestamps are predictable and distinct.
func Ticking(t time.Time, step time.Duration) func() time.Time {
	c := New(t)
	return func() time.Time {
		c.mu.Lock()
		defer c.mu.Unlock()
		now := c.t
		c.t = c.t.Add(step)
		return now
	}
}

// Parse returns the RFC 3339 time s, or fails the test.
func Parse(tb testing.TB, s string) time.Time {
	tb.Helper()
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		tb.Fatalf("clocktest: parse %q: %v", s, err)
	}
	return t
}
