package main

import (
	"testing"
	"time"

	"tollgate/internal/clocktest"
)

// useClock sets the stack's clock to at: every node's scripts read it
// from now on in place of Redis TIME (it is injected as the engine's
// Clock; its zero time means Redis TIME, restored at cleanup). The nodes'
// own clocks keep reading the real time, months away from the instants
// the cases use: any use of a node clock in a decision would show.
func (s *stack) useClock(t *testing.T, at time.Time) *clocktest.Clock {
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
