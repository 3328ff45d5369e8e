package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redistest"
	"tollgate/limit"
)

// testTimeout replaces the 50 ms production deadline: tests run many
// goroutines under -race on a shared machine.
const testTimeout = 5 * time.Second

// mustLimiter returns an Engine on the test Redis (one primary) with a
// fresh key prefix, its scripts loaded, reading Redis TIME.
func mustLimiter(tb testing.TB) *Engine {
	tb.Helper()
	rdb, prefix := redistest.MustClient(tb)
	return mustLoaded(tb, New(rdb, Options{Prefix: prefix, Timeout: testTimeout}))
}

// mustLoaded loads e's scripts or fails the test.
func mustLoaded(tb testing.TB, e *Engine) *Engine {
	tb.Helper()
	if err := e.Load(tb.Context()); err != nil {
		tb.Fatalf("Load: %v", err)
	}
	return e
}

// fmtDiff formats a mismatch as "field: got X, want Y".
func fmtDiff(field string, got, want any) string {
	return fmt.Sprintf("%s: got %v, want %v", field, got, want)
}

// decideKeyed decides a resolved request (names built by the test),
// bypassing the refusal memory; along as decideAlong's.
func (e *Engine) decideKeyed(ctx context.Context, req *keyedRequest, along func(context.Context, redis.Pipeliner)) (limit.Decision, error) {
	c := &call{ctx: ctx, req: req, done: make(chan struct{})}
	return e.wait(ctx, c, along)
}
