package limiter

import (
	"fmt"
	"testing"
	"time"

	"tollgate/internal/redistest"
)

// testTimeout replaces the 50 ms production deadline: tests run many
// goroutines under -race on a shared machine.
const testTimeout = 5 * time.Second

// mustLimiter returns a Limiter on the test Redis with a fresh key prefix,
// its scripts loaded.
func mustLimiter(tb testing.TB) *Limiter {
	tb.Helper()
	rdb, prefix := redistest.MustClient(tb)
	l := New(rdb, Options{Prefix: prefix, Timeout: testTimeout})
	if err := l.Load(tb.Context()); err != nil {
		tb.Fatalf("Load: %v", err)
	}
	return l
}

// fmtDiff formats a mismatch as "field: got X, want Y".
func fmtDiff(field string, got, want any) string {
	return fmt.Sprintf("%s: got %v, want %v", field, got, want)
}
