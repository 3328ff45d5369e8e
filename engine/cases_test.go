package engine

import (
	"math"
	"sync"
	"testing"
	"time"

	"tollgate/internal/redistest"

	"tollgate/limit"
	"tollgate/plans"
)

// planRequest is the request of one key on plan "p1": its plan bucket with
// throttle th (none when th is nil) and quota q (none when nil).
func planRequest(l *Engine, keyID string, th *plans.Throttle, q *plans.Quota) *keyedRequest {
	k := l.r.keys
	req := &keyedRequest{UsageKey: k.Usage(keyID, "p1")}
	if th != nil {
		req.Buckets = append(req.Buckets, keyedBucket{Key: k.PlanBucket(keyID, "p1"), RateLimit: th.RateLimit, BurstLimit: th.BurstLimit, Level: limit.LevelPlan})
	}
	if q != nil {
		kq := l.res.keyedQuota(keyID, "p1", &limit.Quota{Limit: q.Limit, Period: q.Period, Offset: q.Offset})
		req.Quota = &kq
	}
	return req
}

// mustDecide runs Decide or fails the test.
func mustDecide(tb testing.TB, l *Engine, req *keyedRequest) limit.Decision {
	tb.Helper()
	d, err := l.decideKeyed(tb.Context(), req, nil)
	if err != nil {
		tb.Fatalf("Decide: %v", err)
	}
	l.settle()
	return d
}

// retrySeconds is the Retry-After header value the gateway derives:
// whole seconds, rounded up, at least 1.
func retrySeconds(d time.Duration) int64 {
	return max(1, int64(math.Ceil(d.Seconds())))
}

// step is one request at an offset from the start of a case.
type step struct {
	at        time.Duration
	allowed   bool
	refused   limit.Level
	remaining int64 // Plan or Quota remaining as the case says; -1 unchecked
	retry     int64 // Retry-After seconds on refusals; 0 unchecked
}

// runSteps sends req at each step's time and checks the outcome; quota
// selects whether remaining is the quota's or the plan bucket's.
//
// A stage and an account bucket that never refuse ride along (rate 0: no
// refill however long a case lasts, burst sharedBurst): on Redis Cluster
// they are taken in phase 1 and given back in phase 3 for every refusal,
// so each case runs every phase there; afterwards each has lost exactly
// one token per admitted request.
func runSteps(t *testing.T, b redistest.Backend, start time.Time, th *plans.Throttle, q *plans.Quota, steps []step) {
	t.Helper()
	l, c := mustClockEngineOn(t, b, start)
	req := planRequest(l, "k1", th, q)
	const sharedBurst = 1000
	shared := []keyedBucket{
		{Key: l.r.keys.StageBucket("a1", "prod", "GET", "/items"), BurstLimit: sharedBurst, Level: limit.LevelStage},
		{Key: l.r.keys.AccountBucket(), BurstLimit: sharedBurst, Level: limit.LevelAccount},
	}
	req.Buckets = append(req.Buckets, shared...)
	admitted := int64(0)
	defer func() {
		for _, sb := range shared { // its tokens, read through a probe decision as a plan bucket's
			probe := mustDecide(t, l, &keyedRequest{Buckets: []keyedBucket{{Key: sb.Key, BurstLimit: sharedBurst, Level: limit.LevelPlan}}})
			if want := sharedBurst - admitted - 1; probe.Plan.Remaining != want {
				t.Errorf("%v bucket after %d admitted and a probe: got %d tokens left, want %d", sb.Level, admitted, probe.Plan.Remaining, want)
			}
		}
	}()
	for i, s := range steps {
		c.Set(start.Add(s.at))
		d := mustDecide(t, l, req)
		if d.Allowed {
			admitted++
		}
		if d.Allowed != s.allowed || d.Refused != s.refused {
			t.Fatalf("request %d at +%v: got allowed=%v refused=%v, want allowed=%v refused=%v", i+1, s.at, d.Allowed, d.Refused, s.allowed, s.refused)
		}
		st := d.Plan
		if q != nil {
			st = d.Quota
		}
		if s.remaining >= 0 && st.Remaining != s.remaining {
			t.Errorf("request %d at +%v: remaining: got %d, want %d", i+1, s.at, st.Remaining, s.remaining)
		}
		if s.retry > 0 && retrySeconds(d.RetryAfter) != s.retry {
			t.Errorf("request %d at +%v: Retry-After: got %d (%v), want %d", i+1, s.at, retrySeconds(d.RetryAfter), d.RetryAfter, s.retry)
		}
		if d.Allowed && (d.RetryAfter != 0 || d.NoRetry) {
			t.Errorf("request %d: admitted with RetryAfter %v NoRetry %v, want 0 and false", i+1, d.RetryAfter, d.NoRetry)
		}
	}
}

func ok(at time.Duration, remaining int64) step {
	return step{at: at, allowed: true, remaining: remaining}
}
func no(at time.Duration, l limit.Level, remaining, retry int64) step {
	return step{at: at, refused: l, remaining: remaining, retry: retry}
}

func TestDecideCases(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	day := func(limit int32) *plans.Quota { return &plans.Quota{Limit: limit, Period: plans.PeriodDay} }
	th := func(r float64, b int32) *plans.Throttle { return &plans.Throttle{RateLimit: r, BurstLimit: b} }
	never := th(10000, 10000)
	cases := []struct {
		name  string
		start string
		th    *plans.Throttle
		q     *plans.Quota
		steps []step
	}{
		// A limit of N admits exactly N, never N-1 or N+1.
		{"exactly burst", "2026-06-15T12:00:00Z", th(0.001, 5), nil, []step{
			ok(0, 4), ok(20*ms, 3), ok(40*ms, 2), ok(60*ms, 1), ok(80*ms, 0), no(99*ms, limit.LevelPlan, 0, 0)}},
		{"exactly quota", "2026-06-15T12:00:00Z", never, day(5), []step{
			ok(0, 4), ok(ms, 3), ok(2*ms, 2), ok(3*ms, 1), ok(4*ms, 0), no(5*ms, limit.LevelQuota, 0, 0)}},
		{"quota 1", "2026-06-15T12:00:00Z", never, day(1), []step{ok(0, 0), no(ms, limit.LevelQuota, 0, 0)}},
		{"burst 1", "2026-06-15T12:00:00Z", th(0.001, 1), nil, []step{ok(0, 0), no(ms, limit.LevelPlan, 0, 0)}},
		// Non-integral rates refill exactly: no floating-point shortfall.
		{"rate 10/13", "2026-06-15T12:00:00Z", th(0.7692307692307693, 1), nil, []step{
			ok(0, 0), ok(1300*ms, 0), ok(2600*ms, 0), no(3250*ms, limit.LevelPlan, 0, 1)}},
		{"rate 1/3", "2026-06-15T12:00:00Z", th(0.3333333333333333, 1), nil, []step{
			ok(0, 0), ok(3000*ms, 0), no(5999*ms, limit.LevelPlan, 0, 1)}},
		{"10/13 over many tokens", "2026-06-15T12:00:00Z", th(0.7692307692307693, 1), nil, func() []step {
			var s []step
			for i := range 200 {
				s = append(s, ok(time.Duration(i)*1300*ms, 0))
			}
			return s
		}()},
		// Remaining counts down to 0 and never goes below.
		{"remaining never negative", "2026-06-15T12:00:00Z", never, day(3), []step{
			ok(0, 2), ok(ms, 1), ok(2*ms, 0), no(3*ms, limit.LevelQuota, 0, 0), no(4*ms, limit.LevelQuota, 0, 0)}},
		// Retry-After is the real wait, to the token or to the period end.
		{"Retry-After is the real wait", "2026-06-15T12:00:00Z", th(0.5, 1), nil, []step{
			ok(0, 0), no(100*ms, limit.LevelPlan, 0, 2), ok(2100*ms, 0)}},
		{"quota Retry-After to period end", "2026-06-15T23:59:00Z", never, day(1), []step{
			ok(0, 0), no(0, limit.LevelQuota, 0, 60)}},
		// Quotas count UTC calendar periods, not rolling ones.
		{"day boundary", "2026-06-15T23:59:50Z", never, day(3), []step{
			ok(0, 2), ok(0, 1), ok(0, 0), no(0, limit.LevelQuota, 0, 10), ok(11*time.Second, 2)}},
		{"calendar day, not rolling", "2026-06-15T15:00:00Z", never, day(3), []step{
			ok(0, 2), ok(0, 1), ok(0, 0), no(time.Hour, limit.LevelQuota, 0, 0), ok(9*time.Hour+5*time.Second, 2)}},
		{"month end", "2026-02-28T23:59:59Z", never, &plans.Quota{Limit: 2, Period: plans.PeriodMonth}, []step{
			ok(0, 1), ok(0, 0), no(0, limit.LevelQuota, 0, 1), ok(time.Second, 1)}},
		{"month offset 27 in a leap February", "2024-02-28T00:00:00Z", never, &plans.Quota{Limit: 1, Period: plans.PeriodMonth, Offset: 27}, []step{
			// Feb 28 → Mar 28 is 29 days in 2024: at Feb 29 28 days remain.
			ok(0, 0), no(24*time.Hour, limit.LevelQuota, 0, 28*24*3600), no(29*24*time.Hour-time.Second, limit.LevelQuota, 0, 1), ok(29*24*time.Hour, 0)}},
		// A WEEK starts on Sunday 00:00 UTC (offset 0; docs/behaviour.md), so
		// Sunday 23:59 and Monday 00:00:01 share a week; Saturday 23:59 and
		// Sunday 00:00:01 do not.
		{"week from Sunday", "2026-06-14T23:59:00Z", never, &plans.Quota{Limit: 1, Period: plans.PeriodWeek}, []step{
			ok(0, 0), no(61*time.Second, limit.LevelQuota, 0, 6*24*3600-1)}},
		{"week turns on Sunday", "2026-06-13T23:59:00Z", never, &plans.Quota{Limit: 1, Period: plans.PeriodWeek}, []step{
			ok(0, 0), no(59*time.Second, limit.LevelQuota, 0, 1), ok(61*time.Second, 0)}},
		{"week offset 1 turns on Monday", "2026-06-14T23:59:00Z", never, &plans.Quota{Limit: 1, Period: plans.PeriodWeek, Offset: 1}, []step{
			ok(0, 0), ok(61*time.Second, 0)}},
		{"rate 0 burst 0 refuses every request", "2026-06-15T12:00:00Z", th(0, 0), nil, []step{
			no(0, limit.LevelPlan, 0, 0), no(time.Hour, limit.LevelPlan, 0, 0)}},
		{"rate 0 burst 2 admits two, then none", "2026-06-15T12:00:00Z", th(0, 2), nil, []step{
			ok(0, 1), ok(time.Hour, 0), no(100*24*time.Hour, limit.LevelPlan, 0, 0)}},
	}
	for _, b := range redistest.Backends {
		for _, tc := range cases {
			t.Run(b.Name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				runSteps(t, b, at(t, tc.start), tc.th, tc.q, tc.steps)
			})
		}
	}
}

func TestRateZeroHasNoRetry(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		l, _ := mustClockEngineOn(t, b, at(t, "2026-06-15T12:00:00Z"))
		req := planRequest(l, "k1", &plans.Throttle{RateLimit: 0, BurstLimit: 1}, nil)
		mustDecide(t, l, req)
		d := mustDecide(t, l, req)
		if d.Allowed || !d.NoRetry || d.RetryAfter != 0 {
			t.Fatalf("got allowed=%v NoRetry=%v RetryAfter=%v, want false, true, 0", d.Allowed, d.NoRetry, d.RetryAfter)
		}
		if !d.Plan.Reset.IsZero() || d.Plan.Window != 0 {
			t.Errorf("rate 0 plan state: got Reset %v Window %v, want zero and 0", d.Plan.Reset, d.Plan.Window)
		}
	})
}

func TestPlanState(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		start := at(t, "2026-06-15T12:00:00Z")
		l, _ := mustClockEngineOn(t, b, start)
		d := mustDecide(t, l, planRequest(l, "k1", &plans.Throttle{RateLimit: 10, BurstLimit: 20}, nil))
		want := limit.State{Limit: 20, Remaining: 19, Reset: start.Add(100 * time.Millisecond), Window: 2 * time.Second}
		if *d.Plan != want {
			t.Fatalf("plan state: got %+v, want %+v", *d.Plan, want)
		}
		if !d.Now.Equal(start) {
			t.Errorf("Now: got %v, want %v", d.Now, start)
		}
	})
}

// A client that keeps sending faster than its rate still gets its
// share, because refused requests cost nothing.
func TestRefusalsNotCharged(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		start := at(t, "2026-06-15T12:00:00Z")
		l, c := mustClockEngineOn(t, b, start)
		req := planRequest(l, "k1", &plans.Throttle{RateLimit: 5, BurstLimit: 5}, nil)
		var total, late int
		for i := range 100 {
			c.Set(start.Add(time.Duration(i) * 100 * time.Millisecond))
			if mustDecide(t, l, req).Allowed {
				total++
				if i >= 50 {
					late++
				}
			}
		}
		if total < 53 || total > 57 {
			t.Errorf("admitted in 10 s: got %d, want 55 ± 2", total)
		}
		if late < 23 || late > 27 {
			t.Errorf("admitted in seconds 5–10: got %d, want 25 ± 2", late)
		}
		c.Set(start.Add(10*time.Second + time.Second))
		for i := range 5 {
			if d := mustDecide(t, l, req); !d.Allowed {
				t.Fatalf("request %d after a 1 s pause: got refused by %v, want admitted", i+1, d.Refused)
			}
		}
	})
}

// Concurrent successes each see their own remaining value.
func TestQuotaRemainingConcurrent(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		l, _ := mustClockEngineOn(t, b, at(t, "2026-06-15T12:00:00Z"))
		req := planRequest(l, "k2", &plans.Throttle{RateLimit: 10000, BurstLimit: 10000}, &plans.Quota{Limit: 3, Period: plans.PeriodDay})
		var mu sync.Mutex
		seen := map[int64]int{}
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				d, err := l.decideKeyed(t.Context(), req, nil)
				if err != nil || !d.Allowed {
					t.Errorf("got allowed=%v err=%v, want admitted", d.Allowed, err)
					return
				}
				mu.Lock()
				seen[d.Quota.Remaining]++
				mu.Unlock()
			})
		}
		wg.Wait()
		for _, r := range []int64{0, 1, 2} {
			if seen[r] != 1 {
				t.Errorf("remaining %d seen %d times, want once (all: %v)", r, seen[r], seen)
			}
		}
	})
}
