package main

import (
	"sync"
	"testing"
	"time"
)

// fakeClock stands in for Redis TIME in the scripts of every node of a
// stack (injected as the engine's Clock; its zero time means Redis TIME,
// the default). The nodes' own clocks keep reading the real time, months
// away from the instants the cases use: any use of a node clock in a
// decision would show.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// Now returns the clock's time.
func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to at.
func (c *fakeClock) Set(at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = at
}

// useClock sets the stack's clock to at: every node's scripts read it
// from now on. Redis TIME is restored at cleanup.
func (s *stack) useClock(t *testing.T, at time.Time) *fakeClock {
	t.Helper()
	s.clock.Set(at)
	t.Cleanup(func() { s.clock.Set(time.Time{}) })
	return s.clock
}

// utc parses an RFC 3339 instant ("2026-06-15T23:59:50Z") or fails.
func utc(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return at
}
