package gateway

import (
	"fmt"
	"testing"
	"time"

	"tollgate/gateway/limiter"
	"tollgate/plans"
)

// denyRequest is a request with a plan bucket, a shared stage bucket and
// a quota.
func denyRequest(key string) *limiter.Request {
	return &limiter.Request{
		Buckets: []limiter.Bucket{
			{Key: "tb:" + key, RateLimit: 1, BurstLimit: 1, Level: limiter.LevelPlan},
			{Key: "stage", RateLimit: 1, BurstLimit: 1, Level: limiter.LevelStage},
		},
		Quota: &limiter.Quota{Key: "q:" + key, Limit: 1, Period: plans.PeriodDay},
	}
}

func TestDenyCache(t *testing.T) {
	t.Parallel()
	st, other := &stageConfig{name: "a"}, &stageConfig{name: "b"}
	sent := time.Now()
	refusal := func(level limiter.Level, retry time.Duration, noRetry bool) limiter.Decision {
		return limiter.Decision{Refused: level, RetryAfter: retry, NoRetry: noRetry, Now: sent,
			Plan: &limiter.State{Limit: 1}, Quota: &limiter.State{Limit: 1, Remaining: 0}}
	}
	for _, c := range []struct {
		name      string
		d         limiter.Decision
		stage     *stageConfig
		at        time.Duration // after sent
		wantHit   bool
		wantRetry time.Duration
	}{
		{"plan refusal before its moment", refusal(limiter.LevelPlan, time.Second, false), st, 300 * time.Millisecond, true, 700 * time.Millisecond},
		{"plan refusal at its moment", refusal(limiter.LevelPlan, time.Second, false), st, time.Second, false, 0},
		{"plan method refusal", refusal(limiter.LevelPlanMethod, time.Second, false), st, 0, true, time.Second},
		{"quota refusal", refusal(limiter.LevelQuota, time.Hour, false), st, time.Minute, true, 59 * time.Minute},
		{"rate 0 refusal stays", refusal(limiter.LevelPlan, 0, true), st, 1000 * time.Hour, true, 0},
		{"other snapshot", refusal(limiter.LevelPlan, time.Second, false), other, 0, false, 0},
		{"stage bucket not remembered", refusal(limiter.LevelStage, time.Second, false), st, 0, false, 0},
		{"account bucket not remembered", refusal(limiter.LevelAccount, time.Second, false), st, 0, false, 0},
		{"decided on another clock", func() limiter.Decision {
			d := refusal(limiter.LevelPlan, time.Second, false)
			d.Now = sent.Add(-time.Hour)
			return d
		}(), st, 0, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			dc := newDenyCache(0)
			req := denyRequest("k1")
			dc.remember(req, st, "k1", "p1", c.d, sent, dc.generation())
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

func TestDenyCacheForget(t *testing.T) {
	t.Parallel()
	st := &stageConfig{}
	now := time.Now()
	d := limiter.Decision{Refused: limiter.LevelQuota, RetryAfter: time.Hour, Now: now, Quota: &limiter.State{}}
	fill := func(dc *denyCache) {
		dc.remember(denyRequest("k1"), st, "k1", "p1", d, now, dc.generation())
		dc.remember(denyRequest("k2"), st, "k2", "p1", d, now, dc.generation())
	}
	s := &Server{deny: newDenyCache(0)}
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
		{"reload", s.ForgetRefusals, false, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s.deny = newDenyCache(0)
			fill(s.deny)
			c.forget()
			_, k1 := s.deny.lookup(denyRequest("k1"), st, now)
			_, k2 := s.deny.lookup(denyRequest("k2"), st, now)
			if k1 != c.wantK1 || k2 != c.wantK2 || s.deny.len() != c.wantLength {
				t.Errorf("got k1 %v k2 %v len %d, want %v %v %d", k1, k2, s.deny.len(), c.wantK1, c.wantK2, c.wantLength)
			}
		})
	}
}

func TestDenyCacheNotStoredAfterClear(t *testing.T) {
	t.Parallel()
	dc := newDenyCache(0)
	st, now := &stageConfig{}, time.Now()
	gen := dc.generation() // read before the Redis call
	dc.forget(nil)         // a usage update arrives meanwhile
	dc.remember(denyRequest("k1"), st, "k1", "p1", limiter.Decision{Refused: limiter.LevelQuota, RetryAfter: time.Hour, Now: now, Quota: &limiter.State{}}, now, gen)
	if n := dc.len(); n != 0 {
		t.Errorf("entries: got %d, want 0 (decided before the clear)", n)
	}
}

func TestDenyCacheBounded(t *testing.T) {
	t.Parallel()
	const limit = 64
	dc := newDenyCache(limit)
	st, now := &stageConfig{}, time.Now()
	d := limiter.Decision{Refused: limiter.LevelPlan, RetryAfter: time.Hour, Now: now, Plan: &limiter.State{}}
	for i := range 10 * limit {
		k := fmt.Sprint("k", i)
		dc.remember(denyRequest(k), st, k, "p1", d, now, dc.generation())
	}
	if n := dc.len(); n > limit || n < limit/2 {
		t.Errorf("entries: got %d, want about %d and never more", n, limit)
	}
	_, hit := dc.lookup(denyRequest(fmt.Sprint("k", 10*limit-1)), st, now)
	if !hit {
		t.Error("newest entry: got a miss, want a hit")
	}
}

// TestRefusalMemoryServesWithoutRedis runs a key into its quota on the
// real limiter and checks that later requests are refused with the same
// answer and no limiter call, until a usage update clears the memory.
func TestRefusalMemoryServesWithoutRedis(t *testing.T) {
	t.Parallel()
	tg := limitGateway(t, limitSnapshot(plans.UsagePlan{Quota: &plans.Quota{Limit: 1, Period: plans.PeriodDay}}, plans.Stage{}))
	if got := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey); got.status != 200 {
		t.Fatalf("first: got %d, want 200", got.status)
	}
	fromRedis := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey)
	wantError(t, fromRedis, 429, "Limit Exceeded", "LimitExceededException")
	calls := tg.limiter.calls.Load()
	for i := range 3 {
		got := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey)
		wantError(t, got, 429, "Limit Exceeded", "LimitExceededException")
		for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit-Policy"} {
			if g, w := got.header.Get(h), fromRedis.header.Get(h); g != w {
				t.Errorf("remembered refusal %d: %s got %q, want %q (as Redis answered)", i, h, g, w)
			}
		}
		if ra := got.header.Get("Retry-After"); ra == "" {
			t.Errorf("remembered refusal %d: got no Retry-After, want one", i)
		}
	}
	if n := tg.limiter.calls.Load() - calls; n != 0 {
		t.Errorf("limiter calls while remembered: got %d, want 0", n)
	}
	if n := counterValue(t, tg.metrics.Throttled.WithLabelValues(testAPI, testStage, "quota")); n != 4 {
		t.Errorf("tollgate_throttled_total{level=quota}: got %v, want 4", n)
	}
	tg.ForgetUsage("plan01", "key0000001")
	tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey)
	if n := tg.limiter.calls.Load() - calls; n != 1 {
		t.Errorf("limiter calls after ForgetUsage: got %d, want 1", n)
	}
}
