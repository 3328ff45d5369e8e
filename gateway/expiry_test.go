package gateway

import (
	"math"
	"testing"
	"time"

	"tollgate/engine"
	"tollgate/internal/redistest"
	"tollgate/plans"
)

// An expired key is refused with 403 and its own reason, charging nothing.
func TestExpiredKeyRefusedWithItsReason(t *testing.T) {
	t.Parallel()
	tg := mustGateway(t, keyedSnapshot(), nil)
	tg.keys.add(goodKey, &plans.KeyRecord{KeyID: "key0000001", Enabled: true, PlanIDs: []string{"plan01"},
		ExpiresAt: time.Now().Add(-time.Second)})
	got := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey)
	wantError(t, got, 403, "Forbidden", "ForbiddenException")
	line := tg.logLine(t, got.header.Get("x-amzn-RequestId"))
	if line["reason"] != ReasonExpired || line["key_id"] != "key0000001" {
		t.Errorf("log reason/key_id: got %v/%v, want %s/key0000001", line["reason"], line["key_id"], ReasonExpired)
	}
	if n := tg.engine.calls.Load(); n != 0 {
		t.Errorf("limiter calls: got %d, want 0 (nothing charged)", n)
	}
	if v := counterValue(t, tg.metrics.KeyRefusals.WithLabelValues(testAPI, testStage, "expired")); v != 1 {
		t.Errorf("tollgate_key_refusals_total{reason=expired}: got %v, want 1", v)
	}
}

// Expiry is judged on Redis's clock as the decisions tell it: with the
// limiter's clock two hours ahead of the node's, a key expiring in one
// hour of node time is admitted until the first decision shows the offset,
// then refused.
func TestExpiryIsJudgedOnRedisTime(t *testing.T) {
	t.Parallel()
	ahead := 2 * time.Hour
	tg := mustGateway(t, keyedSnapshot(), func(o *Options) {
		rdb, prefix := redistest.MustClient(t)
		eng := engine.New(rdb, engine.Options{Prefix: prefix, Timeout: 5 * time.Second,
			Clock: func() time.Time { return time.Now().Add(ahead) }})
		o.Engine = &countingEngine{inner: newLimiter(t, eng, false)}
	})
	tg.keys.add(goodKey, &plans.KeyRecord{KeyID: "key0000001", Enabled: true, PlanIDs: []string{"plan01"},
		ExpiresAt: time.Now().Add(time.Hour)})
	if got := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey); got.status != 200 {
		t.Fatalf("first request: got %d %s, want 200 (no decision yet: the node's clock)", got.status, got.body)
	}
	got := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey)
	wantError(t, got, 403, "Forbidden", "ForbiddenException")
	if line := tg.logLine(t, got.header.Get("x-amzn-RequestId")); line["reason"] != ReasonExpired {
		t.Errorf("log reason: got %v, want %s", line["reason"], ReasonExpired)
	}
}

// The clock's estimate is the smallest sample of the current and previous
// windows, never below the true offset, and forgets samples two windows old.
func TestRedisClockTakesTheTightestRecentSample(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	c := newRedisClock(nil, func() time.Time { return now })
	if got := c.Now(); !got.Equal(now) {
		t.Fatalf("before any sample: got %v, want the node's %v", got, now)
	}
	c.observe(now, now.Add(50*time.Millisecond)) // a slow round trip
	c.observe(now, now.Add(3*time.Millisecond))  // a quick one: tighter
	c.observe(now, now.Add(20*time.Millisecond)) // looser again
	if got := c.Now().Sub(now); got != 3*time.Millisecond {
		t.Fatalf("offset: got %v, want 3ms (the smallest sample)", got)
	}
	c.observe(now, time.Time{}) // no decision time: ignored
	if got := c.Now().Sub(now); got != 3*time.Millisecond {
		t.Fatalf("offset after a zero Now: got %v, want 3ms", got)
	}
	now = now.Add(clockWindow)
	c.observe(now, now.Add(time.Second)) // the Redis clock moved on
	if got := c.Now().Sub(now); got != 3*time.Millisecond {
		t.Fatalf("one window later: got %v, want 3ms (the previous window still counts)", got)
	}
	now = now.Add(clockWindow)
	c.observe(now, now.Add(time.Second))
	if got := c.Now().Sub(now); got != time.Second {
		t.Fatalf("two windows later: got %v, want 1s", got)
	}
	if c.cur.Load() == math.MaxInt64 {
		t.Fatal("current window empty after a sample")
	}
}
