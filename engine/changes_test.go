package engine

import (
	"testing"
	"time"

	"tollgate/internal/redistest"

	"tollgate/limit"
	"tollgate/plans"
	"tollgate/script"
	"tollgate/usage"
)

// Lowering a quota mid-period clamps remaining at 0; raising it
// gives back limit − used, and refused requests were never counted.
func TestQuotaLimitChange(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		l, c := mustClockEngineOn(t, b, at(t, "2026-06-10T08:00:00Z"))
		never := &plans.Throttle{RateLimit: 10000, BurstLimit: 10000}
		q := plans.Quota{Limit: 5_000_000, Period: plans.PeriodMonth}
		for range 35 {
			mustDecide(t, l, planRequest(l, "k1", never, &q))
		}
		q.Limit = 10
		d := mustDecide(t, l, planRequest(l, "k1", never, &q))
		if d.Allowed || d.Refused != limit.LevelQuota || d.Quota.Limit != 10 || d.Quota.Remaining != 0 {
			t.Fatalf("after lowering to 10: got allowed=%v refused=%v limit=%d remaining=%d, want false quota 10 0",
				d.Allowed, d.Refused, d.Quota.Limit, d.Quota.Remaining)
		}
		c.Add(time.Hour)
		q.Limit = 100
		d = mustDecide(t, l, planRequest(l, "k1", never, &q))
		if !d.Allowed || d.Quota.Remaining != 64 {
			t.Fatalf("after raising to 100: got allowed=%v remaining=%d, want true 64", d.Allowed, d.Quota.Remaining)
		}
	})
}

// Throttle changes apply to the existing bucket at once:
// tokens = min(tokens under the old limits, new burst).
func TestThrottleLimitChange(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		l, c := mustClockEngineOn(t, b, at(t, "2026-06-10T08:00:00Z"))
		slow := &plans.Throttle{RateLimit: 0.01, BurstLimit: 10}
		for i := range 10 {
			if d := mustDecide(t, l, planRequest(l, "k1", slow, nil)); !d.Allowed {
				t.Fatalf("request %d: got refused, want admitted", i+1)
			}
		}
		if d := mustDecide(t, l, planRequest(l, "k1", slow, nil)); d.Allowed {
			t.Fatal("11th request: got admitted, want refused")
		}
		fast := &plans.Throttle{RateLimit: 100, BurstLimit: 200}
		d := mustDecide(t, l, planRequest(l, "k1", fast, nil))
		if d.Allowed || d.Plan.Limit != 200 {
			t.Fatalf("right after raising the burst: got allowed=%v limit=%d, want refused (raising grants nothing) with limit 200", d.Allowed, d.Plan.Limit)
		}
		c.Add(50 * time.Millisecond) // 5 tokens at the new rate
		admitted := 0
		for range 10 {
			if mustDecide(t, l, planRequest(l, "k1", fast, nil)).Allowed {
				admitted++
			}
		}
		if admitted != 5 {
			t.Fatalf("50 ms after the change to 100/s: got %d admitted, want 5", admitted)
		}
		c.Add(10 * time.Second) // full: 200 tokens
		low := &plans.Throttle{RateLimit: 0.01, BurstLimit: 2}
		admitted = 0
		for range 10 {
			if mustDecide(t, l, planRequest(l, "k1", low, nil)).Allowed {
				admitted++
			}
		}
		if admitted != 2 {
			t.Fatalf("after lowering the burst to 2: got %d admitted, want 2", admitted)
		}
	})
}

// A bucket whose state is past its expiry moment behaves as a fresh one,
// exactly as if Redis had expired the key: the new burst applies.
func TestStaleBucketStartsFull(t *testing.T) {
	t.Parallel()
	l, c := mustClockLimiter(t, at(t, "2026-06-10T08:00:00Z"))
	mustDecide(t, l, planRequest(l, "k1", &plans.Throttle{RateLimit: 1, BurstLimit: 2}, nil))
	c.Add(time.Second) // full again, not yet stale (slack 1 s)
	d := mustDecide(t, l, planRequest(l, "k1", &plans.Throttle{RateLimit: 1, BurstLimit: 5}, nil))
	if d.Plan.Remaining != 1 {
		t.Fatalf("within the slack after raising the burst: got remaining %d, want 1", d.Plan.Remaining)
	}
	c.Add(10 * time.Second)
	d = mustDecide(t, l, planRequest(l, "k1", &plans.Throttle{RateLimit: 1, BurstLimit: 9}, nil))
	if d.Plan.Remaining != 8 {
		t.Fatalf("after expiry with burst 9: got remaining %d, want 8", d.Plan.Remaining)
	}
}

// A1/A3: all or nothing across levels, in check order.
func TestAllOrNothing(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		l, c := mustClockEngineOn(t, b, at(t, "2026-06-10T08:00:00Z"))
		k := l.r.keys
		mk := func(keyID string, stageBurst, acctBurst, quota int32) *keyedRequest {
			return &keyedRequest{
				Buckets: []keyedBucket{
					{Key: k.PlanBucket(keyID, "p1"), RateLimit: 0.001, BurstLimit: 3, Level: limit.LevelPlan},
					{Key: k.StageBucket("a1", "prod", "GET", "/items"), RateLimit: 0.001, BurstLimit: stageBurst, Level: limit.LevelStage},
					{Key: k.AccountBucket(), RateLimit: 0.001, BurstLimit: acctBurst, Level: limit.LevelAccount},
				},
				Quota:    &keyedQuota{Key: k.Quota(keyID, "p1"), Limit: quota, Period: script.PeriodDay},
				UsageKey: k.Usage(keyID, "p1"),
			}
		}
		steps := []struct {
			name            string
			req             *keyedRequest
			allowed         bool
			refused         limit.Level
			plan, remaining int64
		}{
			{"stage refuses: plan and quota uncharged", mk("k1", 0, 10, 5), false, limit.LevelStage, 3, 5},
			{"account refuses: plan and quota uncharged", mk("k1", 10, 0, 5), false, limit.LevelAccount, 3, 5},
			{"quota refuses: no token taken", mk("k1", 10, 10, 0), false, limit.LevelQuota, 3, 0},
			{"admitted: all charged", mk("k1", 10, 10, 5), true, limit.LevelNone, 2, 4},
			{"plan refuses first although quota is empty too", func() *keyedRequest {
				r := mk("k1", 10, 10, 1)
				r.Buckets[0].BurstLimit = 0
				return r
			}(), false, limit.LevelPlan, 0, 0},
		}
		for _, s := range steps {
			d := mustDecide(t, l, s.req)
			if d.Allowed != s.allowed || d.Refused != s.refused || d.Plan.Remaining != s.plan || d.Quota.Remaining != s.remaining {
				t.Fatalf("%s: got allowed=%v refused=%v plan=%d quota=%d, want %v %v %d %d",
					s.name, d.Allowed, d.Refused, d.Plan.Remaining, d.Quota.Remaining, s.allowed, s.refused, s.plan, s.remaining)
			}
		}
		// The stage and account buckets lost exactly one token (burst 10).
		c.Add(time.Millisecond)
		d := mustDecide(t, l, &keyedRequest{Buckets: []keyedBucket{
			{Key: k.StageBucket("a1", "prod", "GET", "/items"), RateLimit: 0.001, BurstLimit: 10, Level: limit.LevelPlan},
			{Key: k.AccountBucket(), RateLimit: 0.001, BurstLimit: 10, Level: limit.LevelAccount},
		}})
		if d.Plan.Remaining != 8 {
			t.Fatalf("stage bucket after one admission and one probe: got %d tokens, want 8", d.Plan.Remaining)
		}
		usage, err := l.usageOn(t, "k1", "p1", c.Now())
		if err != nil || usage["2026-06-10"] != 1 {
			t.Fatalf("usage: got %v (err %v), want 2026-06-10: 1", usage, err)
		}
	})
}

// A throttle refusal does not lower the quota remaining.
func TestThrottleRefusalKeepsQuota(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		l, c := mustClockEngineOn(t, b, at(t, "2026-06-10T08:00:00Z"))
		th := &plans.Throttle{RateLimit: 0.01, BurstLimit: 1}
		q := &plans.Quota{Limit: 3, Period: plans.PeriodDay}
		if d := mustDecide(t, l, planRequest(l, "k1", th, q)); d.Quota.Remaining != 2 {
			t.Fatalf("first: got quota remaining %d, want 2", d.Quota.Remaining)
		}
		if d := mustDecide(t, l, planRequest(l, "k1", th, q)); d.Allowed || d.Refused != limit.LevelPlan || d.Quota.Remaining != 2 {
			t.Fatalf("throttled: got allowed=%v refused=%v quota=%d, want false plan 2", d.Allowed, d.Refused, d.Quota.Remaining)
		}
		c.Add(100 * time.Second)
		if d := mustDecide(t, l, planRequest(l, "k1", th, q)); !d.Allowed || d.Quota.Remaining != 1 {
			t.Fatalf("next success: got allowed=%v quota=%d, want true 1", d.Allowed, d.Quota.Remaining)
		}
	})
}

// Usage counts admitted requests per UTC day, never refused ones.
func TestUsagePerDay(t *testing.T) {
	t.Parallel()
	l, c := mustClockLimiter(t, at(t, "2026-06-10T23:59:59Z"))
	q := &plans.Quota{Limit: 3, Period: plans.PeriodMonth}
	for range 2 {
		mustDecide(t, l, planRequest(l, "k1", nil, q))
	}
	c.Add(2 * time.Second)
	for range 5 { // 1 admitted, 4 refused by the quota
		mustDecide(t, l, planRequest(l, "k1", nil, q))
	}
	c.Add(48 * time.Hour)
	mustDecide(t, l, planRequest(l, "k1", nil, nil))
	got := l.usageDays(t, "k1", "p1")
	want := map[string]int64{"2026-06-10": 2, "2026-06-11": 1, "2026-06-13": 1}
	if len(got) != len(want) {
		t.Fatalf("usage: got %v, want %v", got, want)
	}
	for d, n := range want {
		if got[d] != n {
			t.Errorf("usage on %s: got %d, want %d", d, got[d], n)
		}
	}
}

// Usage fields older than 100 days are dropped when a new day starts.
func TestUsagePrunesOldDays(t *testing.T) {
	t.Parallel()
	l, c := mustClockLimiter(t, at(t, "2026-01-01T12:00:00Z"))
	mustDecide(t, l, planRequest(l, "k1", nil, nil))
	c.Add(100 * 24 * time.Hour)
	mustDecide(t, l, planRequest(l, "k1", nil, nil))
	c.Add(24 * time.Hour)
	mustDecide(t, l, planRequest(l, "k1", nil, nil))
	fields, err := l.r.rdb.HKeys(t.Context(), l.r.keys.Usage("k1", "p1")).Result()
	if err != nil {
		t.Fatalf("HKEYS: %v", err)
	}
	if len(fields) != 2 || fields[0] == "2026-01-01" || fields[1] == "2026-01-01" {
		t.Fatalf("usage fields: got %v, want the two latest days only", fields)
	}
}

// UpdateUsage: SetRemaining sets the current period's remaining, clamped.
func TestSetRemaining(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		q := plans.Quota{Limit: 10, Period: plans.PeriodWeek, Offset: 2}
		cases := []struct {
			name      string
			set, want int64
		}{
			{"inside the range", 3, 2},
			{"above the limit clamps to the limit", 25, 9},
			{"negative clamps to 0", -4, -1},
			{"zero", 0, -1},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				l, c := mustClockEngineOn(t, b, at(t, "2026-06-10T08:00:00Z"))
				for range 4 {
					mustDecide(t, l, planRequest(l, "k1", nil, &q))
				}
				admin := usage.New(l.r.rdb, usage.Options{Prefix: l.r.keys.Prefix, Clock: c.Now})
				if err := admin.SetRemaining(t.Context(), "k1", "p1", q, tc.set); err != nil {
					t.Fatalf("SetRemaining: %v", err)
				}
				d := mustDecide(t, l, planRequest(l, "k1", nil, &q))
				if tc.want < 0 {
					if d.Allowed || d.Quota.Remaining != 0 {
						t.Fatalf("got allowed=%v remaining=%d, want refused with 0", d.Allowed, d.Quota.Remaining)
					}
				} else if !d.Allowed || d.Quota.Remaining != tc.want {
					t.Fatalf("got allowed=%v remaining=%d, want admitted with %d", d.Allowed, d.Quota.Remaining, tc.want)
				}
				c.Set(at(t, "2026-06-16T23:59:59Z")) // Tuesday: the next period (offset 2)
				st, err := l.quotaStateErr(t, "k1", "p1", q)
				if err != nil || st.Remaining != 10 || !st.Reset.Equal(at(t, "2026-06-23T00:00:00Z")) || st.Window != 7*24*time.Hour {
					t.Fatalf("next period: got %+v (err %v), want remaining 10 until 2026-06-23 over 168h", st, err)
				}
			})
		}
	})
}

// If Redis time goes back (a failover to a server with a slower clock), no
// token is refilled twice and no quota period is reset early.
func TestClockGoesBack(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		t0 := at(t, "2026-06-16T00:00:05Z")
		l, c := mustClockEngineOn(t, b, t0)
		th := &plans.Throttle{RateLimit: 1, BurstLimit: 2}
		q := &plans.Quota{Limit: 3, Period: plans.PeriodDay}
		steps := []struct {
			at      time.Time
			allowed bool
			refused limit.Level
			retry   time.Duration
		}{
			{t0, true, limit.LevelNone, 0},                                      // 1 token left, quota 1 used
			{t0.Add(-10 * time.Second), true, limit.LevelNone, 0},               // back into the previous day: 0 tokens, quota 2 used
			{t0.Add(-5 * time.Second), false, limit.LevelPlan, 6 * time.Second}, // the next token comes at t0 + 1 s
			{t0.Add(500 * time.Millisecond), false, limit.LevelPlan, 500 * time.Millisecond},
			{t0.Add(time.Second), true, limit.LevelNone, 0}, // quota 3 used
			{t0.Add(3 * time.Second), false, limit.LevelQuota, 24*time.Hour - 8*time.Second},
		}
		for i, s := range steps {
			c.Set(s.at)
			d := mustDecide(t, l, planRequest(l, "k1", th, q))
			if d.Allowed != s.allowed || d.Refused != s.refused || d.RetryAfter != s.retry {
				t.Fatalf("request %d at %v: got allowed=%v refused=%v retry=%v, want %v %v %v",
					i+1, s.at, d.Allowed, d.Refused, d.RetryAfter, s.allowed, s.refused, s.retry)
			}
		}
	})
}

// A give-back of shared tokens that lands after a decision under raised
// limits grants nothing: the bucket gets back exactly the token taken,
// under the limits it is stored with now, and is never reset to full (an
// absent state). Here (rate 1/s) one token is taken under burst 10, one
// decision runs under burst 1000, 2 s pass and the token comes back: 11
// tokens are left (9 - 1 + 2 + 1), not 1000. On one primary no decision
// gives back (one script decides every level); op "refund" runs here
// directly, as phase 3 on Redis Cluster runs it.
func TestGiveBackAfterLimitRaiseGrantsNothing(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		l, c := mustClockEngineOn(t, b, at(t, "2026-06-10T08:00:00Z"))
		key := l.r.keys.StageBucket("a1", "prod", "GET", "/items")
		stage := func(rate float64, burst int32) *keyedRequest {
			return &keyedRequest{Buckets: []keyedBucket{{Key: key, RateLimit: rate, BurstLimit: burst, Level: limit.LevelStage}}}
		}
		if d := mustDecide(t, l, stage(1, 10)); !d.Allowed {
			t.Fatal("take under burst 10: got refused, want admitted")
		}
		if d := mustDecide(t, l, stage(1, 1000)); !d.Allowed {
			t.Fatal("decision under burst 1000: got refused, want admitted")
		}
		c.Add(2 * time.Second)
		mustGiveBack(t, l, key, 1) // taken under rate 1/s, burst 10
		// probe: the stage bucket's state read as a plan bucket (its tokens)
		probe := mustDecide(t, l, &keyedRequest{Buckets: []keyedBucket{{Key: key, RateLimit: 1, BurstLimit: 1000, Level: limit.LevelPlan}}})
		if !probe.Allowed || probe.Plan.Remaining != 10 {
			t.Fatalf("probe after the give-back: got allowed=%v remaining %d, want true 10 (11 tokens before it)", probe.Allowed, probe.Plan.Remaining)
		}
	})
}

// mustGiveBack gives tokens back to the bucket whose state is key with op
// "refund", as phase 3 of a Redis Cluster batch does.
func mustGiveBack(tb testing.TB, l *Engine, key string, tokens int32) {
	tb.Helper()
	rs := script.RefundSpec{Key: 1, Tokens: tokens}
	args := []any{script.OpRefund, l.r.clockArg(), rs.Append(nil)}
	if err := runOnce(tb.Context(), l.r.rdb, []string{key}, args).Err(); err != nil {
		tb.Fatalf("give back: %v", err)
	}
}
