package engine

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"tollgate/limit"
	"tollgate/plans"
)

// admitN decides n requests of keyID in plan p1 (a stage bucket, a quota
// of quota a DAY when quota > 0) and fails the test unless all are
// admitted.
func admitN(t *testing.T, e *Engine, keyID string, quota int32, n int) {
	t.Helper()
	for i := range n {
		req := &limit.Request{KeyID: keyID, PlanID: "p1", API: "a1", Stage: "prod",
			Buckets: []limit.Bucket{{Level: limit.LevelStage, Method: "GET", Path: "/x", RateLimit: 1000, BurstLimit: 1000}}}
		if quota > 0 {
			req.Quota = &limit.Quota{Limit: quota, Period: "DAY"}
		}
		d, err := e.Decide(t.Context(), req)
		if err != nil || !d.Allowed {
			t.Fatalf("request %d of %s: %+v, %v", i+1, keyID, d, err)
		}
	}
}

// drainAll drains src until a short page and returns the observations by
// key ("key day count quota seq" lines, sorted) and the tokens.
func drainAll(t *testing.T, src *UsageSource, limit int) (map[string]plans.UsageObservation, []string) {
	t.Helper()
	got := map[string]plans.UsageObservation{}
	var tokens []string
	for range 100 {
		obs, tok, err := src.Drain(t.Context(), limit)
		if err != nil {
			t.Fatalf("Drain: %v", err)
		}
		if len(obs) > limit {
			t.Fatalf("Drain(%d) returned %d observations", limit, len(obs))
		}
		if tok != "" {
			tokens = append(tokens, tok)
		}
		for _, o := range obs {
			if _, dup := got[o.KeyID]; dup {
				t.Fatalf("key %s handed out twice while held", o.KeyID)
			}
			got[o.KeyID] = o
		}
		if len(obs) < limit {
			return got, tokens
		}
	}
	t.Fatal("Drain never returned a short page")
	return nil, nil
}

// describe is "day=count,... quota=count" of o.
func describe(o plans.UsageObservation) string {
	var days []string
	for _, d := range o.Days {
		days = append(days, fmt.Sprintf("%s=%d", d.Day.Format(dayLayout), d.Count))
	}
	sort.Strings(days)
	s := fmt.Sprint(days)
	if o.Quota != nil {
		s += fmt.Sprintf(" quota=%d from %s", o.Quota.Count, o.Quota.PeriodStart.Format(dayLayout))
	}
	return s
}

// The limiter hands every key it counted to the flush worker exactly once
// while held, with absolute day counts and quota state, in pages of at most
// the limit (across slots on Redis Cluster); after Ack only keys counted
// again come back, with their new counts.
func TestUsageSourceHandsOutWhatTheLimiterCounted(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e, _ := mustClockEngineOn(t, b, at(t, "2026-06-15T12:00:00Z"))
		src := e.UsageSource()
		want := map[string]string{}
		for i := range 25 {
			key := fmt.Sprintf("key%02d", i)
			admitN(t, e, key, 100, i%3+1)
			want[key] = fmt.Sprintf("[2026-06-15=%d] quota=%d from 2026-06-15", i%3+1, i%3+1)
		}
		got, tokens := drainAll(t, src, 7)
		if len(got) != len(want) {
			t.Fatalf("drained %d keys, want %d", len(got), len(want))
		}
		var lastSeq int64
		for key, o := range got {
			if o.PlanID != "p1" || describe(o) != want[key] {
				t.Errorf("%s: got %s %s, want p1 %s", key, o.PlanID, describe(o), want[key])
			}
			if key == "key04" {
				lastSeq = o.Quota.Seq
			}
		}
		for _, tok := range tokens {
			if err := src.Ack(t.Context(), tok); err != nil {
				t.Fatalf("Ack: %v", err)
			}
		}
		if again, _ := drainAll(t, src, 7); len(again) != 0 {
			t.Fatalf("after Ack, drained %d keys again, want 0", len(again))
		}
		admitN(t, e, "key04", 100, 3)
		again, _ := drainAll(t, src, 7)
		if o, ok := again["key04"]; len(again) != 1 || !ok || describe(o) != "[2026-06-15=5] quota=5 from 2026-06-15" || o.Quota.Seq <= lastSeq {
			t.Fatalf("after counting key04 again: got %v (seq before %d)", again, lastSeq)
		}
	})
}

// A key counted again while held is handed out again (the Ack of the
// first hold leaves it), and a hold that is never acknowledged ends: what
// it held is handed out again, to any worker.
func TestUsageSourceHandsOutAgainWhatChangedOrWasNotAcknowledged(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := mustEngineOn(t, b, Options{})
		src := e.UsageSource()
		src.HoldFor = 300 * time.Millisecond
		admitN(t, e, "kA", 0, 1)
		admitN(t, e, "kB", 0, 2)
		first, tokens := drainAll(t, src, 10)
		if len(first) != 2 || first["kA"].Quota != nil {
			t.Fatalf("first drain: %v", first)
		}
		admitN(t, e, "kA", 0, 1) // counted again while held
		second, _ := drainAll(t, src, 10)
		if len(second) != 1 || len(second["kA"].Days) != 1 || second["kA"].Days[0].Count != 2 {
			t.Fatalf("second drain: got %v, want kA with 2", second)
		}
		for _, tok := range tokens {
			if err := src.Ack(t.Context(), tok); err != nil {
				t.Fatal(err)
			}
		}
		// kB was acknowledged; kA's second hold was not: it ends
		time.Sleep(400 * time.Millisecond)
		other := e.UsageSource() // another admin node
		third, _ := drainAll(t, other, 10)
		if len(third) != 1 || third["kA"].Days[0].Count != 2 {
			t.Fatalf("after the hold ended: got %v, want kA with 2", third)
		}
	})
}

// A drain whose read fails holds nothing: the next drain hands the pairs
// out again.
func TestUsageSourceFailedDrainHoldsNothing(t *testing.T) {
	e := mustLimiter(t)
	src := e.UsageSource()
	admitN(t, e, "kA", 5, 2)
	takes, err := src.hold(t.Context(), []setLimit{{set: e.changes0, limit: 10}})
	if err != nil || len(takes) != 1 || len(takes[0].members) != 1 {
		t.Fatalf("hold: %v, %v", takes, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := src.observe(ctx, takes); err == nil {
		t.Fatal("observe with a cancelled context succeeded")
	}
	if err := src.putBack(ctx, takes); err != nil {
		t.Fatalf("putBack: %v", err)
	}
	got, _ := drainAll(t, src, 10)
	if len(got) != 1 || got["kA"].Quota == nil || got["kA"].Quota.Count != 2 {
		t.Fatalf("after the failed drain: got %v, want kA", got)
	}
}
