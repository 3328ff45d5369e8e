package engine

import (
	"testing"
	"time"

	"tollgate/internal/clocktest"
	"tollgate/internal/redistest"
)

// mustClockLimiter returns an Engine on the test Redis whose scripts use a
// fake clock set to start.
func mustClockLimiter(tb testing.TB, start time.Time) (*Engine, *clocktest.Clock) {
	tb.Helper()
	rdb, prefix := redistest.MustClient(tb)
	c := clocktest.New(start)
	return mustLoaded(tb, New(rdb, Options{Prefix: prefix, Timeout: testTimeout, Clock: c.Now})), c
}

// mustClockEngineOn returns an Engine on backend b whose scripts use a
// fake clock set to start.
func mustClockEngineOn(tb testing.TB, b redistest.Backend, start time.Time) (*Engine, *clocktest.Clock) {
	tb.Helper()
	c := clocktest.New(start)
	return mustEngineOn(tb, b, Options{Clock: c.Now}), c
}

// at parses an RFC 3339 time or fails the test.
var at = clocktest.Parse

// absDur returns |d|.
func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
