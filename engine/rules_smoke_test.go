package engine

import (
	"testing"
	"time"

	"tollgate/limit"
)

func TestRulesSmoke(t *testing.T) {
	l, c := mustClockLimiter(t, at(t, "2026-06-15T12:00:00Z"))
	req := func() *limit.Request {
		return &limit.Request{API: "a", Stage: "s", Buckets: []limit.Bucket{{Level: limit.LevelAccount, RateLimit: 100, BurstLimit: 100}},
			Rules: []limit.Rule{{Name: "fw", Counter: "c1", Value: "ip=1", Algorithm: limit.FixedWindow, Limit: 2, Window: time.Minute, Private: true}}}
	}
	for i, want := range []bool{true, true, false} {
		d, err := l.Decide(t.Context(), req())
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d: %+v", i, d)
		if d.Allowed != want {
			t.Fatalf("%d: got %v", i, d.Allowed)
		}
	}
	c.Add(time.Minute)
	d, err := l.Decide(t.Context(), req())
	if err != nil || !d.Allowed {
		t.Fatalf("next window: %+v %v", d, err)
	}
}
