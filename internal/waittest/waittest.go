// Package waittest waits in tests for a condition to hold, never for a
// fixed time: the one wait-until helper of the tree. Where the code takes
// an injected clock, step that clock (internal/clocktest) instead.
package waittest

import (
	"testing"
	"time"
)

// Poll bounds: a condition is checked again after 100 µs at first, so a
// wait that measures how soon something happened is precise, and at most
// every 10 ms, so a long wait costs a loaded machine little.
const (
	firstPoll = 100 * time.Microsecond
	maxPoll   = 10 * time.Millisecond
)

// Until checks cond until it holds and returns how long that took. It
// fails tb, naming what it waited for, when cond does not hold within
// limit. Call it from the test's goroutine.
func Until(tb testing.TB, what string, limit time.Duration, cond func() bool) time.Duration {
	tb.Helper()
	took, ok := Poll(limit, cond)
	if !ok {
		tb.Fatalf("%s: not within %v", what, limit)
	}
	return took
}

// Poll checks cond until it holds or limit has passed; it returns how long
// it waited and whether cond held. For goroutines other than the test's,
// and for waits whose failure the caller reports itself.
func Poll(limit time.Duration, cond func() bool) (time.Duration, bool) {
	start := time.Now()
	for pause := firstPoll; ; pause = min(2*pause, maxPoll) {
		if cond() {
			return time.Since(start), true
		}
		if time.Since(start) > limit {
			return time.Since(start), false
		}
		time.Sleep(pause)
	}
}
