package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"tollgate/internal/faultnet"
	"tollgate/limit/limittest"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redistest"
	"tollgate/limit"
	"tollgate/plans"
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

// decideKeyed decides a resolved request (names built by the test); along,
// when not nil, queues commands in the decision's round trip.
func (e *Engine) decideKeyed(ctx context.Context, req *keyedRequest, along func(context.Context, redis.Pipeliner)) (limit.Decision, error) {
	c := &call{ctx: ctx, req: req, done: make(chan struct{})}
	if along != nil {
		c.along = &alongFunc{fn: along}
	}
	return e.wait(ctx, c)
}

// alongFunc is an alongQueue of a test's own commands.
type alongFunc struct {
	fn   func(context.Context, redis.Pipeliner)
	done bool
}

func (a *alongFunc) Done() bool { return a.done }

func (a *alongFunc) queue(ctx context.Context, p redis.Pipeliner) {
	a.done = true
	a.fn(ctx, p)
}

// usageToday returns the requests counted for keyID in planID on the
// limiter's UTC day (the engine's KeyUsage).
func (e *Engine) usageToday(tb testing.TB, keyID, planID string) int64 {
	tb.Helper()
	u, err := e.KeyUsage(tb.Context(), keyID, planID, nil)
	if err != nil {
		tb.Fatalf("KeyUsage: %v", err)
	}
	return u.Today
}

// quotaState returns the state of keyID's quota q in planID now.
func (e *Engine) quotaState(tb testing.TB, keyID, planID string, q plans.Quota) limit.State {
	tb.Helper()
	u, err := e.KeyUsage(tb.Context(), keyID, planID, &limit.Quota{Limit: q.Limit, Period: q.Period, Offset: q.Offset})
	if err != nil {
		tb.Fatalf("KeyUsage: %v", err)
	}
	return *u.Quota
}

// quotaStateErr is quotaState with its error.
func (e *Engine) quotaStateErr(tb testing.TB, keyID, planID string, q plans.Quota) (limit.State, error) {
	u, err := e.KeyUsage(tb.Context(), keyID, planID, &limit.Quota{Limit: q.Limit, Period: q.Period, Offset: q.Offset})
	if err != nil {
		return limit.State{}, err
	}
	return *u.Quota, nil
}

// usageOn returns the usage of keyID in planID on day's UTC date, keyed
// by that date ("YYYY-MM-DD"), as Usage returned it.
func (e *Engine) usageOn(tb testing.TB, keyID, planID string, day time.Time) (map[string]int64, error) {
	d := day.UTC().Format(plans.UsageDateLayout)
	n, err := e.r.rdb.HGet(tb.Context(), e.r.keys.Usage(keyID, planID), d).Int64()
	if errors.Is(err, redis.Nil) {
		err = nil
	}
	return map[string]int64{d: n}, err
}

// silentRedis returns a client of a Redis that accepts connections and
// never answers (a stopped process behind a proxy).
func silentRedis(tb testing.TB) *redis.Client {
	tb.Helper()
	p := faultnet.MustProxy(tb, "127.0.0.1:1")
	p.Stall()
	c := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

var hotRequest = limittest.HotRequest

// usageDays returns every day's count of keyID in planID ("YYYY-MM-DD").
func (e *Engine) usageDays(tb testing.TB, keyID, planID string) map[string]int64 {
	tb.Helper()
	all, err := e.r.rdb.HGetAll(tb.Context(), e.r.keys.Usage(keyID, planID)).Result()
	if err != nil {
		tb.Fatalf("usage: %v", err)
	}
	out := map[string]int64{}
	for d, v := range all {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			tb.Fatalf("usage on %s: %q", d, v)
		}
		out[d] = n
	}
	return out
}
