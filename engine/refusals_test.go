package engine

import (
	"fmt"
	"testing"
	"time"

	"tollgate/limit"
	"tollgate/plans"
)

// denyRequest is a request with a plan bucket, a shared stage bucket and
// a quota.
func denyRequest(key string) *keyedRequest {
	return &keyedRequest{
		Buckets: []keyedBucket{
			{Key: "tb:" + key, RateLimit: 1, BurstLimit: 1, Level: limit.LevelPlan},
			{Key: "stage", RateLimit: 1, BurstLimit: 1, Level: limit.LevelStage},
		},
		Quota: &keyedQuota{Key: "q:" + key, Limit: 1, Period: plans.PeriodDay},
	}
}

// of is the limit.Request a denyRequest was resolved from, at version v.
func of(key string, v int64) *limit.Request {
	return &limit.Request{KeyID: key, PlanID: "p1", Version: v}
}

func TestRefusalMemory(t *testing.T) {
	t.Parallel()
	st, other := int64(1), int64(2)
	sent := time.Now()
	refusal := func(level limit.Level, retry time.Duration, noRetry bool) limit.Decision {
		return limit.Decision{Refused: level, RetryAfter: retry, NoRetry: noRetry, Now: sent,
			Plan: &limit.State{Limit: 1}, Quota: &limit.State{Limit: 1, Remaining: 0}}
	}
	for _, c := range []struct {
		name      string
		d         limit.Decision
		stage     int64
		at        time.Duration // after sent
		wantHit   bool
		wantRetry time.Duration
	}{
		{"plan refusal before its moment", refusal(limit.LevelPlan, time.Second, false), st, 300 * time.Millisecond, true, 700 * time.Millisecond},
		{"plan refusal at its moment", refusal(limit.LevelPlan, time.Second, false), st, time.Second, false, 0},
		{"plan method refusal", refusal(limit.LevelPlanMethod, time.Second, false), st, 0, true, time.Second},
		{"quota refusal", refusal(limit.LevelQuota, time.Hour, false), st, time.Minute, true, 59 * time.Minute},
		{"rate 0 refusal stays", refusal(limit.LevelPlan, 0, true), st, 1000 * time.Hour, true, 0},
		{"other config version", refusal(limit.LevelPlan, time.Second, false), other, 0, false, 0},
		{"stage bucket not remembered", refusal(limit.LevelStage, time.Second, false), st, 0, false, 0},
		{"account bucket not remembered", refusal(limit.LevelAccount, time.Second, false), st, 0, false, 0},
		{"decided on another clock", func() limit.Decision {
			d := refusal(limit.LevelPlan, time.Second, false)
			d.Now = sent.Add(-time.Hour)
			return d
		}(), st, 0, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			dc := newRefusals(0)
			req := denyRequest("k1")
			dc.remember(req, of("k1", st), c.d, sent, dc.generation())
			got, hit := dc.lookup(req, c.stage, sent.Add(c.at))
			if hit != c.wantHit {
				t.Fatalf("hit: got %v, want %v", hit, c.wantHit)
			}
			if !hit {
				return
			}
			if got.Refused != c.d.Refused || got.RetryAfter != c.wantRetry || got.NoRetry != c.d.NoRetry {
				t.Errorf("got refused %v retry %v noRetry %v, want %v %v %v", got.Refused, got.RetryAfter, got.NoRetry, c.d.Refused, c.wantRetry, c.d.NoRetry)
			}
			if want := sent.Add(c.at); !got.Now.Equal(want) {
				t.Errorf("Now: got %v, want %v", got.Now, want)
			}
			if got.Plan == c.d.Plan || got.Quota == c.d.Quota {
				t.Error("got the stored states themselves, want copies")
			}
		})
	}
}

func TestRefusalMemoryForget(t *testing.T) {
	t.Parallel()
	st := int64(1)
	now := time.Now()
	d := limit.Decision{Refused: limit.LevelQuota, RetryAfter: time.Hour, Now: now, Quota: &limit.State{}}
	fill := func(dc *refusals) {
		dc.remember(denyRequest("k1"), of("k1", st), d, now, dc.generation())
		dc.remember(denyRequest("k2"), of("k2", st), d, now, dc.generation())
	}
	s := &Engine{refusals: newRefusals(0)}
	for _, c := range []struct {
		name       string
		forget     func()
		wantK1     bool
		wantK2     bool
		wantLength int
	}{
		{"usage of k1", func() { s.ForgetUsage("p1", "k1") }, false, true, 1},
		{"usage of another plan", func() { s.ForgetUsage("p2", "k1") }, true, true, 2},
		{"key records only", func() { s.ForgetChange(plans.Change{KeyHashes: []string{"h"}}) }, true, true, 2},
		{"snapshot change", func() { s.ForgetChange(plans.Change{Snapshot: true}) }, false, false, 0},
		{"plan change", func() { s.ForgetChange(plans.Change{Plans: []string{"p1"}}) }, false, false, 0},
		{"reload", s.ForgetAll, false, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s.refusals = newRefusals(0)
			fill(s.refusals)
			c.forget()
			_, k1 := s.refusals.lookup(denyRequest("k1"), st, now)
			_, k2 := s.refusals.lookup(denyRequest("k2"), st, now)
			if k1 != c.wantK1 || k2 != c.wantK2 || s.refusals.len() != c.wantLength {
				t.Errorf("got k1 %v k2 %v len %d, want %v %v %d", k1, k2, s.refusals.len(), c.wantK1, c.wantK2, c.wantLength)
			}
		})
	}
}

func TestRefusalNotStoredAfterClear(t *testing.T) {
	t.Parallel()
	dc := newRefusals(0)
	st, now := int64(1), time.Now()
	gen := dc.generation() // read before the Redis call
	dc.forget(nil)         // a usage update arrives meanwhile
	dc.remember(denyRequest("k1"), of("k1", st), limit.Decision{Refused: limit.LevelQuota, RetryAfter: time.Hour, Now: now, Quota: &limit.State{}}, now, gen)
	if n := dc.len(); n != 0 {
		t.Errorf("entries: got %d, want 0 (decided before the clear)", n)
	}
}

func TestRefusalMemoryBounded(t *testing.T) {
	t.Parallel()
	const entries = 64
	dc := newRefusals(entries)
	st, now := int64(1), time.Now()
	d := limit.Decision{Refused: limit.LevelPlan, RetryAfter: time.Hour, Now: now, Plan: &limit.State{}}
	for i := range 10 * entries {
		k := fmt.Sprint("k", i)
		dc.remember(denyRequest(k), of(k, st), d, now, dc.generation())
	}
	if n := dc.len(); n > entries || n < entries/2 {
		t.Errorf("entries: got %d, want about %d and never more", n, entries)
	}
	_, hit := dc.lookup(denyRequest(fmt.Sprint("k", 10*entries-1)), st, now)
	if !hit {
		t.Error("newest entry: got a miss, want a hit")
	}
}

// A key run into its quota on the real Redis is refused later from memory,
// with Redis's answer, until a usage update clears the memory.
func TestRefusalMemoryServesWithoutRedis(t *testing.T) {
	t.Parallel()
	l := mustLimiter(t)
	req := &limit.Request{KeyID: "k1", PlanID: "p1", API: "a", Stage: "s", Version: 7,
		Buckets: []limit.Bucket{{Level: limit.LevelPlan, RateLimit: 100, BurstLimit: 100}},
		Quota:   &limit.Quota{Limit: 1, Period: plans.PeriodDay}}
	if d, err := l.Decide(t.Context(), req); err != nil || !d.Allowed {
		t.Fatalf("first: got %+v, %v, want admitted", d, err)
	}
	fromRedis, err := l.Decide(t.Context(), req)
	if err != nil || fromRedis.Allowed || fromRedis.Remembered || fromRedis.Refused != limit.LevelQuota {
		t.Fatalf("second: got %+v, %v, want a quota refusal from Redis", fromRedis, err)
	}
	for i := range 3 {
		d, err := l.Decide(t.Context(), req)
		if err != nil || !d.Remembered || d.Refused != limit.LevelQuota || *d.Quota != *fromRedis.Quota {
			t.Fatalf("refusal %d: got %+v (quota %+v), %v, want Redis's refusal remembered", i, d, d.Quota, err)
		}
	}
	other := *req
	other.Version = 8
	if d, _ := l.Decide(t.Context(), &other); d.Remembered {
		t.Errorf("another config version: got a remembered refusal, want Redis's answer")
	}
	l.ForgetUsage("p1", "k1")
	if d, _ := l.Decide(t.Context(), req); d.Remembered {
		t.Errorf("after ForgetUsage: got a remembered refusal, want Redis's answer")
	}
}
