package engine

import (
	"sync"
	"testing"
	"time"
	"tollgate/internal/redistest"
	"tollgate/limit"
)

// fakeClock is a settable test clock, injected as Options.Clock; its zero
// time means Redis TIME.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// mustClockLimiter returns an Engine on the test Redis whose scripts use a
// fake clock set to start.
func mustClockLimiter(tb testing.TB, start time.Time) (*Engine, *fakeClock) {
	tb.Helper()
	rdb, prefix := redistest.MustClient(tb)
	c := &fakeClock{t: start}
	return mustLoaded(tb, New(rdb, Options{Prefix: prefix, Timeout: testTimeout, Clock: c.Now})), c
}

// mustClockEngineOn returns an Engine on backend b whose scripts use a
// fake clock set to start.
func mustClockEngineOn(tb testing.TB, b backend, start time.Time) (*Engine, *fakeClock) {
	tb.Helper()
	c := &fakeClock{t: start}
	return mustEngineOn(tb, b, Options{Clock: c.Now}), c
}

// at parses an RFC 3339 time or fails the test.
func at(tb testing.TB, s string) time.Time {
	tb.Helper()
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		tb.Fatalf("parse %q: %v", s, err)
	}
	return t
}

// absDur returns |d|.
func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// diffDecision describes how got differs from want, or "" when they agree:
// exactly on admission, level, remaining counts, limits and windows, and to
// within 1 µs on retry-after and resets (float rounding in the script).
func diffDecision(got, want limit.Decision) string {
	switch {
	case got.Allowed != want.Allowed:
		return fmtDiff("Allowed", got.Allowed, want.Allowed)
	case got.Refused != want.Refused:
		return fmtDiff("Refused", got.Refused, want.Refused)
	case got.NoRetry != want.NoRetry:
		return fmtDiff("NoRetry", got.NoRetry, want.NoRetry)
	case absDur(got.RetryAfter-want.RetryAfter) > time.Microsecond:
		return fmtDiff("RetryAfter", got.RetryAfter, want.RetryAfter)
	case !got.Now.Equal(want.Now):
		return fmtDiff("Now", got.Now, want.Now)
	}
	if s := diffState("Plan", got.Plan, want.Plan); s != "" {
		return s
	}
	return diffState("Quota", got.Quota, want.Quota)
}

func diffState(name string, got, want *limit.State) string {
	switch {
	case (got == nil) != (want == nil):
		return fmtDiff(name, got, want)
	case got == nil:
		return ""
	case got.Limit != want.Limit:
		return fmtDiff(name+".Limit", got.Limit, want.Limit)
	case got.Remaining != want.Remaining:
		return fmtDiff(name+".Remaining", got.Remaining, want.Remaining)
	case got.Reset.IsZero() != want.Reset.IsZero() || absDur(got.Reset.Sub(want.Reset)) > time.Microsecond:
		return fmtDiff(name+".Reset", got.Reset, want.Reset)
	case got.Window != want.Window:
		return fmtDiff(name+".Window", got.Window, want.Window)
	}
	return ""
}
