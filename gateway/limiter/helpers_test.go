package limiter

import (
	"fmt"
	"testing"

	"tollgate/internal/redistest"
)

// mustLimiter returns a Limiter on the test Redis with a fresh key prefix,
// its scripts loaded.
func mustLimiter(tb testing.TB) *Limiter {
	tb.Helper()
	rdb, prefix := redistest.MustClient(tb)
	l := New(rdb, Options{Prefix: prefix})
	if err := l.Load(tb.Context()); err != nil {
		tb.Fatalf("Load: %v", err)
	}
	return l
}

// fmtDiff formats a mismatch as "field: got X, want Y".
func fmtDiff(field string, got, want any) string {
	return fmt.Sprintf("%s: got %v, want %v", field, got, want)
}
