package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/clocktest"
	"tollgate/internal/hammertest"
	"tollgate/internal/redistest"
	"tollgate/internal/waittest"
	"tollgate/limit"
	"tollgate/limit/limittest"
	"tollgate/plans"
)

// account is a bucket that never binds.
var account = limit.Bucket{Level: limit.LevelAccount, RateLimit: 100000, BurstLimit: 100000}

// ruleRequest is a request without a key (a public method) from value,
// with rules (each counting under value).
func ruleRequest(value string, rules ...limit.Rule) *limit.Request {
	req := &limit.Request{API: "api1", Stage: "prod", Buckets: []limit.Bucket{account}}
	for _, r := range rules {
		r.Value = value
		req.Rules = append(req.Rules, r)
	}
	return req
}

// keyedRuleRequest is ruleRequest for API key keyID with a plan bucket and
// a quota.
func keyedRuleRequest(keyID string, plan limit.Bucket, quota int32, value string, rules ...limit.Rule) *limit.Request {
	req := ruleRequest(value, rules...)
	req.KeyID, req.PlanID = keyID, "plan1"
	plan.Level = limit.LevelPlan
	req.Buckets = []limit.Bucket{plan, account}
	req.Quota = &limit.Quota{Limit: quota, Period: plans.PeriodDay}
	return req
}

func fixedRule(name string, n int32) limit.Rule {
	return limit.Rule{Name: name, Counter: "c-" + name, Algorithm: limit.FixedWindow, Limit: n, Window: time.Hour, Private: true}
}

// decide runs one decision or fails the test.
func decide(t *testing.T, l *Engine, req *limit.Request) limit.Decision {
	t.Helper()
	d, err := l.Decide(t.Context(), req)
	if err != nil {
		t.Fatalf("Decide: %v", err)
	}
	return d
}

// allowedSeq decides mk() n times and returns the admissions.
func allowedSeq(t *testing.T, l *Engine, n int, mk func() *limit.Request) []bool {
	t.Helper()
	out := make([]bool, n)
	for i := range out {
		out[i] = decide(t, l, mk()).Allowed
		l.settle()
	}
	return out
}

// Each algorithm admits exactly its limit from a fresh state, on both
// backends (never one more or one less), and refuses with the rule named.
func TestEachRuleAdmitsExactlyItsLimit(t *testing.T) {
	rules := []limit.Rule{
		{Name: "tb", Algorithm: limit.TokenBucket, RateLimit: 0.001, BurstLimit: 3},
		{Name: "sw", Algorithm: limit.SlidingWindow, Limit: 3, Window: time.Hour},
		{Name: "fw", Algorithm: limit.FixedWindow, Limit: 3, Window: time.Hour},
		{Name: "cc", Algorithm: limit.Concurrency, Limit: 3},
		{Name: "lb", Algorithm: limit.LeakyBucket, RateLimit: 1, BurstLimit: 2, MaxDelay: 10 * time.Second},
		{Name: "qt", Algorithm: limit.CalendarQuota, Limit: 3, Period: plans.PeriodMonth},
	}
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		l, _ := mustClockEngineOn(t, b, at(t, "2026-06-15T12:00:00Z"))
		for _, r := range rules {
			r.Counter, r.Private = "c-"+r.Name, true
			got := make([]limit.Decision, 4)
			for i := range got {
				got[i] = decide(t, l, ruleRequest("203.0.113.9", r))
				l.settle()
			}
			for i, d := range got {
				if want := i < 3; d.Allowed != want {
					t.Errorf("%s request %d: allowed %v, want %v", r.Name, i+1, d.Allowed, want)
				}
			}
			last := got[3]
			if last.Refused != limit.LevelRule || last.RefusedRule != 0 || last.Rules[0].Admitted || last.RetryAfter <= 0 {
				t.Errorf("%s 4th: got refused %v rule %d retry %v, want the rule, with a retry", r.Name, last.Refused, last.RefusedRule, last.RetryAfter)
			}
			if d := got[0]; d.Rules[0].State.Limit != 3 || d.Rules[0].State.Remaining != 2 {
				t.Errorf("%s 1st: got state %+v, want limit 3, remaining 2", r.Name, d.Rules[0].State)
			}
			if other := decide(t, l, ruleRequest("198.51.100.1", r)); !other.Allowed {
				t.Errorf("%s: another address was refused: values share a counter", r.Name)
			}
			l.settle()
		}
	})
}

// What refuses charges nothing anywhere: a rule's refusal leaves the
// plan bucket and quota as they were, and a refusal by the plan bucket or
// the quota leaves every rule as it was (all algorithms), on both
// backends.
func TestRefusalsChargeNothingAnywhere(t *testing.T) {
	all := []limit.Rule{
		{Name: "tb", Counter: "ctb", Algorithm: limit.TokenBucket, RateLimit: 0.001, BurstLimit: 5, Private: true},
		{Name: "sw", Counter: "csw", Algorithm: limit.SlidingWindow, Limit: 5, Window: time.Hour, Private: true},
		{Name: "fw", Counter: "cfw", Algorithm: limit.FixedWindow, Limit: 5, Window: time.Hour, Private: true},
		{Name: "cc", Counter: "ccc", Algorithm: limit.Concurrency, Limit: 5, Private: true},
		{Name: "lb", Counter: "clb", Algorithm: limit.LeakyBucket, RateLimit: 1, BurstLimit: 4, MaxDelay: 30 * time.Second, Private: true},
		{Name: "qt", Counter: "cqt", Algorithm: limit.CalendarQuota, Limit: 5, Period: plans.PeriodWeek, Private: true},
	}
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		l, _ := mustClockEngineOn(t, b, at(t, "2026-06-15T12:00:00Z"))
		plan := limit.Bucket{RateLimit: 0.001, BurstLimit: 1}
		// the plan bucket admits one request; the next 10 are refused by it
		for i := range 11 {
			d := decide(t, l, keyedRuleRequest("k1", plan, 100, "v", all...))
			l.settle()
			if d.Allowed != (i == 0) || !d.Allowed && d.Refused != limit.LevelPlan {
				t.Fatalf("request %d: allowed %v refused %v, want only the first admitted, then the plan", i, d.Allowed, d.Refused)
			}
		}
		// every rule was charged once: 4 more each (for the leaky bucket, 4
		// may wait behind the first)
		for _, r := range all {
			for i := range 5 {
				d := decide(t, l, ruleRequest("v", r))
				l.settle()
				if d.Allowed != (i < 4) {
					t.Errorf("%s after the plan's refusals, request %d: allowed %v, want %v (refusals charged the rule)", r.Name, i+1, d.Allowed, i < 4)
				}
			}
		}
		// a rule's refusal costs the plan bucket and quota nothing
		tight := fixedRule("tight", 0)
		for range 3 {
			if d := decide(t, l, keyedRuleRequest("k2", limit.Bucket{RateLimit: 0.001, BurstLimit: 2}, 2, "w", tight)); d.Allowed || d.Refused != limit.LevelRule {
				t.Fatalf("rule of limit 0: got allowed %v refused %v", d.Allowed, d.Refused)
			}
			l.settle()
		}
		for i := range 3 {
			d := decide(t, l, keyedRuleRequest("k2", limit.Bucket{RateLimit: 0.001, BurstLimit: 2}, 2, "w"))
			l.settle()
			if d.Allowed != (i < 2) || d.Quota.Remaining != int64(max(1-i, 0)) {
				t.Errorf("k2 request %d without the rule: allowed %v quota remaining %d, want the plan untouched by the rule's refusals",
					i+1, d.Allowed, d.Quota.Remaining)
			}
		}
	})
}

// A shadow rule changes nothing: requests it would refuse are admitted,
// every other limit is charged exactly as without it, and its outcome
// reports the would-be refusal; it counts in its own counter only.
func TestShadowRuleChangesNothing(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		l, _ := mustClockEngineOn(t, b, at(t, "2026-06-15T12:00:00Z"))
		shadow := fixedRule("trial", 2)
		shadow.Shadow = true
		plan := limit.Bucket{RateLimit: 0.001, BurstLimit: 4}
		for i := range 6 {
			with := decide(t, l, keyedRuleRequest("with", plan, 5, "v", shadow))
			l.settle()
			without := decide(t, l, keyedRuleRequest("without", plan, 5, "u"))
			l.settle()
			if with.Allowed != without.Allowed || with.Refused != without.Refused || *with.Plan != *without.Plan || *with.Quota != *without.Quota {
				t.Errorf("request %d: with the shadow rule %+v, without %+v", i+1, with, without)
			}
			if wouldAdmit := i < 2; with.Rules[0].Admitted != wouldAdmit || with.Delay != 0 || with.Release != nil {
				t.Errorf("request %d: shadow outcome admitted %v, want %v", i+1, with.Rules[0].Admitted, wouldAdmit)
			}
		}
		// its counter counted the two it would have admitted, no more
		enforcing := fixedRule("trial", 2)
		if d := decide(t, l, ruleRequest("v", enforcing)); d.Allowed {
			t.Errorf("the enforcing twin after the shadow counted 2: admitted, want refused")
		}
	})
}

// A request that will not wait its turn after all gives it back: the
// next request gets the turn it left, on both backends.
func TestLeakyBucketTurnGivenBack(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		l, _ := mustClockEngineOn(t, b, at(t, "2026-06-15T12:00:00Z"))
		r := limit.Rule{Name: "smooth", Counter: "lb", Algorithm: limit.LeakyBucket, RateLimit: 1, BurstLimit: 2, MaxDelay: 10 * time.Second, Private: true}
		var ds []limit.Decision
		for range 3 {
			ds = append(ds, decide(t, l, ruleRequest("v", r)))
			l.settle()
		}
		if ds[0].GiveBack != nil || ds[2].Delay != 2*time.Second || ds[2].GiveBack == nil {
			t.Fatalf("got delays %v %v %v: want 0 (no give-back), 1 s, 2 s", ds[0].Delay, ds[1].Delay, ds[2].Delay)
		}
		if d := decide(t, l, ruleRequest("v", r)); d.Allowed {
			t.Fatalf("4th: admitted with delay %v, want refused (2 waiting)", d.Delay)
		}
		l.settle()
		ds[2].GiveBack()
		if d := decide(t, l, ruleRequest("v", r)); !d.Allowed || d.Delay != 2*time.Second {
			t.Errorf("after the 3rd gave its turn back: allowed %v delay %v, want admitted after 2 s", d.Allowed, d.Delay)
		}
	})
}

// A CALENDAR_QUOTA rule counts as a plan's quota does: per UTC calendar
// period shifted by its offset, refused until the period ends (its retry),
// and counted afresh in the next period.
func TestCalendarQuotaRuleCountsPerPeriod(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		l, clock := mustClockEngineOn(t, b, at(t, "2026-06-15T12:00:00Z")) // a Monday
		week := limit.Rule{Name: "week", Counter: "cweek", Algorithm: limit.CalendarQuota, Limit: 2, Period: plans.PeriodWeek, Offset: 1, Private: true}
		for i := range 3 {
			d := decide(t, l, ruleRequest("k", week))
			l.settle()
			if d.Allowed != (i < 2) {
				t.Fatalf("request %d: allowed %v", i+1, d.Allowed)
			}
			if i == 2 {
				// weeks start on Monday (offset 1): the next starts 2026-06-22
				if want := at(t, "2026-06-22T00:00:00Z").Sub(at(t, "2026-06-15T12:00:00Z")); d.RetryAfter != want {
					t.Errorf("retry %v, want %v (the period end)", d.RetryAfter, want)
				}
			}
		}
		clock.Set(at(t, "2026-06-21T23:59:59Z"))
		if d := decide(t, l, ruleRequest("k", week)); d.Allowed {
			t.Error("admitted before the period ended")
		}
		l.settle()
		clock.Set(at(t, "2026-06-22T00:00:00Z"))
		if d := decide(t, l, ruleRequest("k", week)); !d.Allowed || d.Rules[0].State.Remaining != 1 {
			t.Errorf("new period: allowed %v remaining %d, want admitted with 1 left", d.Allowed, d.Rules[0].State.Remaining)
		}
	})
}

// Two nodes (two engines on one Redis) deciding one rule concurrently
// admit exactly its limit, on both backends.
func TestTwoNodesAdmitExactlyARulesLimit(t *testing.T) {
	for _, alg := range []limit.Rule{
		{Name: "fw", Algorithm: limit.FixedWindow, Limit: 40, Window: time.Hour},
		{Name: "sw", Algorithm: limit.SlidingWindow, Limit: 40, Window: time.Hour},
		{Name: "tb", Algorithm: limit.TokenBucket, RateLimit: 0.001, BurstLimit: 40},
		{Name: "cc", Algorithm: limit.Concurrency, Limit: 40},
		{Name: "lb", Algorithm: limit.LeakyBucket, RateLimit: 0.01, BurstLimit: 39, MaxDelay: 4000 * time.Second},
	} {
		t.Run(alg.Name, func(t *testing.T) {
			redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
				rdb, prefix := b.Open(t)
				nodes := [2]*Engine{
					mustLoaded(t, New(rdb, Options{Prefix: prefix, Timeout: testTimeout})),
					mustLoaded(t, New(rdb, Options{Prefix: prefix, Timeout: testTimeout})),
				}
				r := alg
				r.Counter, r.Private = "c2n", true
				admitted := hammertest.Count(10, 10, func(g, _ int) bool {
					d, err := nodes[g%2].Decide(t.Context(), ruleRequest("shared", r))
					if err != nil {
						t.Errorf("Decide: %v", err)
					}
					return err == nil && d.Allowed
				})
				nodes[0].settle()
				nodes[1].settle()
				if n := admitted; n != 40 {
					t.Fatalf("%s of 40 on two nodes under 100 concurrent calls: admitted %d, want exactly 40", r.Name, n)
				}
			})
		})
	}
}

// Leaky bucket: requests over the rate are admitted with growing delays,
// one turn (1/rate) apart, up to burst waiting and maxDelay; beyond, 429
// with the time until one could wait within the bounds.
func TestLeakyBucketDelaysTheExcess(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		l, c := mustClockEngineOn(t, b, at(t, "2026-06-15T12:00:00Z"))
		r := limit.Rule{Name: "smooth", Counter: "lb", Algorithm: limit.LeakyBucket, RateLimit: 4, BurstLimit: 3, MaxDelay: 600 * time.Millisecond, Private: true}
		var delays []time.Duration
		var last limit.Decision
		for range 5 {
			last = decide(t, l, ruleRequest("v", r))
			l.settle()
			if last.Allowed {
				delays = append(delays, last.Delay)
			}
		}
		// turns of 250 ms: 0, 250, 500 ms; the 4th would wait 750 ms > 600
		want := []time.Duration{0, 250 * time.Millisecond, 500 * time.Millisecond}
		if fmt.Sprint(delays) != fmt.Sprint(want) {
			t.Fatalf("delays: got %v, want %v", delays, want)
		}
		if last.Allowed || last.Refused != limit.LevelRule || last.RetryAfter != 150*time.Millisecond {
			t.Errorf("5th: got allowed %v refused %v retry %v, want refused, retry 150 ms (750 - 600)", last.Allowed, last.Refused, last.RetryAfter)
		}
		c.Add(150 * time.Millisecond)
		if d := decide(t, l, ruleRequest("v", r)); !d.Allowed || d.Delay != 600*time.Millisecond {
			t.Errorf("after the retry: got allowed %v delay %v, want admitted after 600 ms", d.Allowed, d.Delay)
		}
		l.settle()
		// a shadow leaky rule never delays
		r.Shadow, r.Counter = true, "lb-shadow"
		for range 3 {
			if d := decide(t, l, ruleRequest("v", r)); !d.Allowed || d.Delay != 0 {
				t.Errorf("shadow: got allowed %v delay %v, want admitted at once", d.Allowed, d.Delay)
			}
			l.settle()
		}
	})
}

// A leaky bucket admits a request whose wait is within both bounds:
// burstLimit turns and maxDelay; the shorter binds. docs/rules.md's
// example (2 a second, 4 waiting, 2 s) admits 5 of 8 at once (one now, 4
// waiting); with 500 ms it admits 2 (one now, one waiting).
func TestLeakyBucketTheShorterOfBurstAndMaxDelayBinds(t *testing.T) {
	for _, tc := range []struct {
		maxDelay time.Duration
		want     []time.Duration
	}{
		{2 * time.Second, []time.Duration{0, 500 * time.Millisecond, time.Second, 1500 * time.Millisecond, 2 * time.Second}},
		{500 * time.Millisecond, []time.Duration{0, 500 * time.Millisecond}},
	} {
		t.Run(tc.maxDelay.String(), func(t *testing.T) {
			l, _ := mustClockLimiter(t, at(t, "2026-06-15T12:00:00Z"))
			r := limit.Rule{Name: "smooth", Counter: "lb", Algorithm: limit.LeakyBucket, RateLimit: 2, BurstLimit: 4, MaxDelay: tc.maxDelay, Private: true}
			var delays []time.Duration
			refused := 0
			for range 8 {
				d := decide(t, l, ruleRequest("v", r))
				l.settle()
				if d.Allowed {
					delays = append(delays, d.Delay)
				} else {
					refused++
				}
			}
			if fmt.Sprint(delays) != fmt.Sprint(tc.want) || refused != 8-len(tc.want) {
				t.Errorf("8 at once: admitted with delays %v and %d refused, want %v and %d", delays, refused, tc.want, 8-len(tc.want))
			}
		})
	}
}

// renewNow renews the leases of every request h holds, as the renewal
// loop does on its tick.
func (h *holds) renewNow() {
	h.mu.Lock()
	entries := h.entries()
	h.mu.Unlock()
	h.renew(entries)
}

// A CONCURRENCY slot is released when the request ends (Release), is kept
// while its node renews its lease, and leaves within the lease when its
// node dies (no release, no renewal), so a crash never locks a client out
// for good; on both backends.
func TestConcurrencySlotsReleaseRenewAndExpire(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		rdb, prefix := b.Open(t)
		c := clocktest.New(at(t, "2026-06-15T12:00:00Z"))
		node := func() *Engine {
			return mustLoaded(t, New(rdb, Options{Prefix: prefix, Timeout: testTimeout, Clock: c.Now, ConcurrencyLease: 30 * time.Second}))
		}
		a, dead := node(), node()
		t.Cleanup(func() { _ = a.Close() })
		r := limit.Rule{Name: "conns", Counter: "cc1", Algorithm: limit.Concurrency, Limit: 2, Private: true}
		first, second := decide(t, a, ruleRequest("v", r)), decide(t, dead, ruleRequest("v", r))
		if !first.Allowed || !second.Allowed || first.Release == nil {
			t.Fatalf("two of 2: got %v and %v (release %v)", first.Allowed, second.Allowed, first.Release != nil)
		}
		if d := decide(t, a, ruleRequest("v", r)); d.Allowed || d.Refused != limit.LevelRule || d.RetryAfter != time.Second {
			t.Fatalf("third in flight: got allowed %v refused %v retry %v, want refused, retry 1 s", d.Allowed, d.Refused, d.RetryAfter)
		}
		first.Release()
		first.Release() // a second call does nothing
		third := decide(t, a, ruleRequest("v", r))
		if !third.Allowed {
			t.Fatal("after a release: refused, want the freed slot")
		}
		_ = dead.Close() // the node dies: its request is never released nor renewed
		c.Add(20 * time.Second)
		a.holds.renewNow() // a's request stays
		c.Add(9 * time.Second)
		if d := decide(t, a, ruleRequest("v", r)); d.Allowed {
			t.Fatal("29 s after the dead node's last word: its slot freed early")
		}
		c.Add(time.Second)
		fourth := decide(t, a, ruleRequest("v", r))
		if !fourth.Allowed {
			t.Fatal("30 s (the lease) after the dead node's last word: still refused")
		}
		c.Add(19 * time.Second) // 49 s after third was taken, 29 s after its renewal
		if d := decide(t, a, ruleRequest("v", r)); d.Allowed {
			t.Fatal("a renewed request left within its renewed lease")
		}
		third.Release()
		fourth.Release()
	})
}

// The renewal loop renews what the node holds on its own, every third of
// the lease, and stops when nothing is held.
func TestRenewalLoopRenewsHeldRequests(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		rdb, prefix := b.Open(t)
		c := clocktest.New(at(t, "2026-06-15T12:00:00Z"))
		l := mustLoaded(t, New(rdb, Options{Prefix: prefix, Timeout: testTimeout, Clock: c.Now, ConcurrencyLease: 90 * time.Millisecond}))
		t.Cleanup(func() { _ = l.Close() })
		r := limit.Rule{Name: "conns", Counter: "cc1", Algorithm: limit.Concurrency, Limit: 1, Private: true}
		d := decide(t, l, ruleRequest("v", r))
		key := l.r.keys.RuleState("cc1", "v", "cc")
		c.Add(time.Hour)
		want := float64(c.Now().Add(90 * time.Millisecond).UnixMicro())
		var scores []redis.Z
		var err error
		renewed := func() bool {
			scores, err = rdb.ZRangeWithScores(t.Context(), key, 0, -1).Result()
			return err == nil && len(scores) == 1 && scores[0].Score == want
		}
		if _, ok := waittest.Poll(10*time.Second, renewed); !ok {
			t.Fatalf("the member's lease was not renewed within 10 s: %v %v", scores, err)
		}
		d.Release()
		if n, err := rdb.ZCard(t.Context(), key).Result(); err != nil || n != 0 {
			t.Fatalf("after Release: %d members (%v), want 0", n, err)
		}
	})
}

// slidingRun decides a SLIDING_WINDOW rule of limit per window at each
// of arrivals (offsets from the clock's start) and returns the times of
// the admitted ones.
func slidingRun(t *testing.T, limitN int32, window time.Duration, arrivals []time.Duration) []time.Duration {
	t.Helper()
	start := at(t, "2026-06-15T12:00:00Z")
	l, c := mustClockLimiter(t, start)
	r := limit.Rule{Name: "sw", Counter: "sw1", Algorithm: limit.SlidingWindow, Limit: limitN, Window: window, Private: true}
	var admitted []time.Duration
	for _, a := range arrivals {
		c.Set(start.Add(a))
		if decide(t, l, ruleRequest("v", r)).Allowed {
			admitted = append(admitted, a)
		}
	}
	return admitted
}

// maxTrailing returns the most of times (sorted) in any interval (t−w, t].
func maxTrailing(times []time.Duration, w time.Duration) int {
	best, j := 0, 0
	for i, x := range times {
		for times[j] <= x-w {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}

// The sliding window's estimate, prev × (1 − elapsed/window) + curr,
// keeps within its documented error (docs/rules.md): never more than the
// limit in a fixed window; with traffic spread evenly, at most the limit
// plus one in any trailing window (here 3 requests a second against 100 a
// minute, for 10 minutes); and, when a previous window's requests all came
// at its very end, less than twice the limit in a trailing window (the
// price of keeping two counters instead of a log).
func TestSlidingWindowEstimateWithinItsError(t *testing.T) {
	const limitN, window = 100, time.Minute
	var even []time.Duration
	for a := time.Duration(0); a < 10*time.Minute; a += time.Second / 3 {
		even = append(even, a)
	}
	admitted := slidingRun(t, limitN, window, even)
	if n := maxTrailing(admitted, window); n > limitN+1 {
		t.Errorf("even traffic: %d admitted in a trailing minute, want at most %d", n, limitN+1)
	}
	if n := len(admitted); n < 10*limitN-limitN/10 || n > 10*limitN+1 {
		t.Errorf("even traffic: %d admitted in 10 minutes, want about %d", n, 10*limitN)
	}
	for w := range 10 {
		n := 0
		for _, a := range admitted {
			if a/window == time.Duration(w) {
				n++
			}
		}
		if n > limitN {
			t.Errorf("even traffic: %d admitted in minute %d, want at most %d", n, w, limitN)
		}
	}
	// a burst at the end of one window, then one each 10 ms of the next
	var edge []time.Duration
	for i := range limitN {
		edge = append(edge, window-time.Duration(limitN-i)*time.Millisecond)
	}
	for a := window; a < 2*window; a += 10 * time.Millisecond {
		edge = append(edge, a)
	}
	admitted = slidingRun(t, limitN, window, edge)
	n := maxTrailing(admitted, window)
	if n >= 2*limitN {
		t.Errorf("edge burst: %d admitted in a trailing minute, want fewer than %d", n, 2*limitN)
	}
	t.Logf("edge burst: at most %d admitted in a trailing minute (limit %d); even traffic: %d", n, limitN, maxTrailing(slidingRun(t, limitN, window, even), window))
}

// A capacity lease of each rule algorithm that may lease, against the
// reference model (docs/leases.md, "Rate-limit rules"): the take takes at
// most a quarter of the rule's room, a refusal while the lease is out
// carries its wait, and the give-back returns the unspent units, in the
// window of the take and 100 ms later, and 15 s later once the window
// moved on (a sliding window's previous count gets them, a fixed window's
// new one nothing).
func TestRuleLeaseMatchesModel(t *testing.T) {
	t.Parallel()
	for _, rule := range []limit.Rule{
		{Name: "tb", Counter: "c-tb", Algorithm: limit.TokenBucket, RateLimit: 0.5, BurstLimit: 40, Private: true},
		{Name: "fw", Counter: "c-fw", Algorithm: limit.FixedWindow, Limit: 40, Window: time.Minute, Private: true},
		{Name: "sw", Counter: "c-sw", Algorithm: limit.SlidingWindow, Limit: 40, Window: time.Minute, Private: true},
	} {
		for _, later := range []time.Duration{100 * time.Millisecond, 15 * time.Second} {
			t.Run(fmt.Sprintf("%s/given back %v later", rule.Name, later), func(t *testing.T) {
				t.Parallel()
				ruleLeaseMatchesModel(t, rule, later)
			})
		}
	}
}

// ruleLeaseMatchesModel takes a lease of rule 10 s before its window
// ends, spends the rule to a refusal and gives the lease back later.
func ruleLeaseMatchesModel(t *testing.T, rule limit.Rule, later time.Duration) {
	clock := clocktest.New(time.Date(2026, 6, 15, 12, 0, 50, 0, time.UTC))
	rdb, prefix := redistest.MustClient(t)
	l := mustLoaded(t, New(rdb, Options{Prefix: prefix, Timeout: testTimeout, Clock: clock.Now}))
	m := &limittest.Model{Clock: clock.Now, LeaseHold: time.Duration(l.r.leaseHoldUS) * time.Microsecond}
	req := func(want int32) *limit.Request {
		r := ruleRequest("v", rule)
		r.Want = want
		return r
	}
	both := func(step string, r *limit.Request) limit.Decision {
		t.Helper()
		want, _ := m.Decide(t.Context(), r)
		got := decide(t, l, r)
		if d := limittest.Diff(got, want); d != "" {
			t.Fatalf("%s: %s", step, d)
		}
		return got
	}
	take := both("take", req(16))
	if take.Granted != 10 {
		t.Fatalf("take: granted %d, want 10 (a quarter of 40)", take.Granted)
	}
	for i := 1; ; i++ {
		d := both(fmt.Sprintf("request %d after the take", i), req(1))
		if d.Allowed {
			continue
		}
		if d.Refused != limit.LevelRule || d.LeaseWait <= 0 || i != 31 {
			t.Fatalf("request %d after the take: refused %v with lease wait %v, want the 31st refused by the rule with a wait", i, d.Refused, d.LeaseWait)
		}
		break
	}
	clock.Add(later)
	rt := limit.Return{Req: req(16), Taken: take.Granted, Unspent: 6, Spent: 3, At: take.Now}
	if err := m.Unlease(t.Context(), []limit.Return{rt}); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlease(t.Context(), []limit.Return{rt}); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		both(fmt.Sprintf("request %d after the give-back", i+1), req(1))
	}
}
