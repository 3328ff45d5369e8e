package gateway

import (
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

// A rotated key's previous value works until its overlap ends, then is
// refused with reason rotated; the current value goes on.
func TestPreviousValueRefusedAfterItsOverlap(t *testing.T) {
	t.Parallel()
	tg := mustGateway(t, keyedSnapshot(), nil)
	const previous = "PreviousValue0123456789ab"
	tg.keys.add(goodKey, &plans.KeyRecord{KeyID: "key0000001", Enabled: true, PlanIDs: []string{"plan01"}})
	tg.keys.add(previous, &plans.KeyRecord{KeyID: "key0000001", Enabled: true, PlanIDs: []string{"plan01"},
		ValueExpiresAt: time.Now().Add(time.Hour)})
	if got := tg.do(t, "GET", "/prod/keyed", "x-api-key", previous); got.status != 200 {
		t.Fatalf("previous value within its overlap: got %d, want 200", got.status)
	}
	tg.keys.add(previous, &plans.KeyRecord{KeyID: "key0000001", Enabled: true, PlanIDs: []string{"plan01"},
		ValueExpiresAt: time.Now().Add(-time.Millisecond)})
	got := tg.do(t, "GET", "/prod/keyed", "x-api-key", previous)
	wantError(t, got, 403, "Forbidden", "ForbiddenException")
	if line := tg.logLine(t, got.header.Get("x-amzn-RequestId")); line["reason"] != ReasonRotated || line["key_id"] != "key0000001" {
		t.Errorf("log reason/key_id: got %v/%v, want %s/key0000001", line["reason"], line["key_id"], ReasonRotated)
	}
	if got := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey); got.status != 200 {
		t.Fatalf("current value: got %d, want 200", got.status)
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

// The clock's estimate is the latest sample, on the late side of Redis's
// time by the decision's wait, and follows a step of Redis's clock at once.
func TestRedisClockFollowsTheLatestDecision(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	c := newRedisClock(nil, func() time.Time { return now })
	if got := c.Now(); !got.Equal(now) {
		t.Fatalf("before any sample: got %v, want the node's %v", got, now)
	}
	c.observe(now, now.Add(3*time.Millisecond))
	if got := c.Now().Sub(now); got != 3*time.Millisecond {
		t.Fatalf("offset: got %v, want 3ms", got)
	}
	c.observe(now, time.Time{}) // no decision time: ignored
	if got := c.Now().Sub(now); got != 3*time.Millisecond {
		t.Fatalf("offset after a zero Now: got %v, want 3ms", got)
	}
	c.observe(now, now.Add(10*time.Minute)) // Redis's clock stepped forward
	if got := c.Now().Sub(now); got != 10*time.Minute {
		t.Fatalf("after a step: got %v, want 10m at once", got)
	}
	c.observe(now, now.Add(-time.Second)) // and back
	if got := c.Now().Sub(now); got != -time.Second {
		t.Fatalf("after a step back: got %v, want -1s", got)
	}
}
