package refusal

import (
	"fmt"
	"testing"
	"time"

	"tollgate/limit"
	"tollgate/limit/limittest"
	"tollgate/plans"
)

// denyRequest is key's request at config version v: a plan bucket, a
// shared stage bucket and a quota.
func denyRequest(key string, v int64) *limit.Request {
	return &limit.Request{KeyID: key, PlanID: "p1", API: "a", Stage: "s", Version: v,
		Buckets: []limit.Bucket{{Level: limit.LevelPlan, RateLimit: 1, BurstLimit: 1},
			{Level: limit.LevelStage, RateLimit: 1, BurstLimit: 1, Method: "GET", Path: "/x"}},
		Quota: &limit.Quota{Limit: 1, Period: plans.PeriodDay}}
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
			dc := New(Options{})
			dc.remember(denyRequest("k1", st), c.d, sent, dc.gen.Load())
			got, hit := dc.lookup(denyRequest("k1", c.stage), sent.Add(c.at))
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
	fill := func(dc *Memory) {
		dc.remember(denyRequest("k1", st), d, now, dc.gen.Load())
		dc.remember(denyRequest("k2", st), d, now, dc.gen.Load())
	}
	var s *Memory
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
		{"reload", func() { s.ForgetAll() }, false, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s = New(Options{})
			fill(s)
			c.forget()
			_, k1 := s.lookup(denyRequest("k1", st), now)
			_, k2 := s.lookup(denyRequest("k2", st), now)
			if k1 != c.wantK1 || k2 != c.wantK2 || s.Len() != c.wantLength {
				t.Errorf("got k1 %v k2 %v len %d, want %v %v %d", k1, k2, s.Len(), c.wantK1, c.wantK2, c.wantLength)
			}
		})
	}
}

func TestRefusalNotStoredAfterClear(t *testing.T) {
	t.Parallel()
	dc := New(Options{})
	st, now := int64(1), time.Now()
	gen := dc.gen.Load() // read before the decision below
	dc.forget(nil)       // a usage update arrives meanwhile
	dc.remember(denyRequest("k1", st), limit.Decision{Refused: limit.LevelQuota, RetryAfter: time.Hour, Now: now, Quota: &limit.State{}}, now, gen)
	if n := dc.Len(); n != 0 {
		t.Errorf("entries: got %d, want 0 (decided before the clear)", n)
	}
}

func TestRefusalMemoryBounded(t *testing.T) {
	t.Parallel()
	const entries = 64
	dc := New(Options{Entries: entries})
	st, now := int64(1), time.Now()
	d := limit.Decision{Refused: limit.LevelPlan, RetryAfter: time.Hour, Now: now, Plan: &limit.State{}}
	for i := range 10 * entries {
		dc.remember(denyRequest(fmt.Sprint("k", i), st), d, now, dc.gen.Load())
	}
	if n := dc.Len(); n > entries || n < entries/2 {
		t.Errorf("entries: got %d, want about %d and never more", n, entries)
	}
	_, hit := dc.lookup(denyRequest(fmt.Sprint("k", 10*entries-1), st), now)
	if !hit {
		t.Error("newest entry: got a miss, want a hit")
	}
}

// A key run into its quota below is refused later from memory, with the
// refusal it got, until a usage update clears the memory; the layer below
// decides nothing meanwhile.
func TestRefusalMemoryServesWithoutTheLayerBelow(t *testing.T) {
	t.Parallel()
	core := &limittest.Model{Clock: time.Now}
	mem := New(Options{})
	top := limit.Stack(core, mem.Layer)
	req := &limit.Request{KeyID: "k1", PlanID: "p1", API: "a", Stage: "s", Version: 7,
		Buckets: []limit.Bucket{{Level: limit.LevelPlan, RateLimit: 100, BurstLimit: 100}},
		Quota:   &limit.Quota{Limit: 1, Period: plans.PeriodDay}}
	if d, err := top.Decide(t.Context(), req); err != nil || !d.Allowed {
		t.Fatalf("first: got %+v, %v, want admitted", d, err)
	}
	below, err := top.Decide(t.Context(), req)
	if err != nil || below.Allowed || below.Remembered || below.Refused != limit.LevelQuota {
		t.Fatalf("second: got %+v, %v, want a quota refusal from below", below, err)
	}
	decided := core.Decisions()
	for i := range 3 {
		d, err := top.Decide(t.Context(), req)
		if err != nil || !d.Remembered || d.Refused != limit.LevelQuota || *d.Quota != *below.Quota {
			t.Fatalf("refusal %d: got %+v (quota %+v), %v, want the refusal remembered", i, d, d.Quota, err)
		}
	}
	if n := core.Decisions(); n != decided {
		t.Errorf("decisions below while remembered: got %d, want 0", n-decided)
	}
	other := *req
	other.Version = 8
	if d, _ := top.Decide(t.Context(), &other); d.Remembered {
		t.Errorf("another config version: got a remembered refusal, want an answer from below")
	}
	mem.ForgetUsage("p1", "k1")
	if d, _ := top.Decide(t.Context(), req); d.Remembered {
		t.Errorf("after ForgetUsage: got a remembered refusal, want an answer from below")
	}
}

// A quota refusal of a request decided uncounted is not remembered: the
// settle of a request in flight may give units back (a settled cost,
// quota-counts=non-5xx), so the quota could admit again before its period
// ends.
func TestQuotaRefusalOfASettledRequestIsNotRemembered(t *testing.T) {
	t.Parallel()
	core := &limittest.Model{Clock: time.Now}
	top := limit.Stack(core, New(Options{}).Layer)
	req := &limit.Request{KeyID: "k1", PlanID: "p1", API: "a", Stage: "s", Uncounted: true,
		Quota: &limit.Quota{Limit: 1, Period: plans.PeriodDay}}
	if d, err := top.Decide(t.Context(), req); err != nil || !d.Allowed {
		t.Fatalf("first: got %+v, %v, want admitted", d, err)
	}
	for i := range 2 {
		if d, err := top.Decide(t.Context(), req); err != nil || d.Allowed || d.Remembered || d.Refused != limit.LevelQuota {
			t.Fatalf("refusal %d: got %+v, %v, want a quota refusal from below", i+1, d, err)
		}
	}
}
