package engine

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"tollgate/internal/clocktest"
	"tollgate/internal/proptest"
	"tollgate/internal/redistest"
	"tollgate/limit"
	"tollgate/limit/limittest"
	"tollgate/plans"
	"tollgate/script"
)

// Limits drawn by the property tests and the fuzz target: fractional rates
// that floating point cannot represent (1/3, 10/13), rate 0, tiny and huge
// rates; bursts from 0; every period with offsets at the edges.
var (
	propRates   = []float64{0, 0.001, 0.3333333333333333, 0.7692307692307693, 0.5, 1, 2.5, 7, 100, 10000}
	propBursts  = []int32{0, 1, 2, 3, 5, 10, 40}
	propLimits  = []int32{0, 1, 2, 3, 5, 10, 100}
	propPeriods = []plans.Quota{
		{Period: plans.PeriodDay}, {Period: plans.PeriodWeek}, {Period: plans.PeriodWeek, Offset: 1},
		{Period: plans.PeriodWeek, Offset: 6}, {Period: plans.PeriodMonth}, {Period: plans.PeriodMonth, Offset: 1},
		{Period: plans.PeriodMonth, Offset: 27}, {Period: plans.PeriodMonth, Offset: 14},
	}
	// propStarts are instants next to period edges: leap days, month and
	// year ends, a century that is not a leap year, a week end.
	propStarts = []string{
		"2024-02-28T23:00:00Z", "2023-02-28T22:30:00Z", "2025-12-31T23:59:00Z", "2026-06-15T23:59:50Z",
		"2026-03-31T23:00:00Z", "2100-02-27T12:00:00Z", "2000-02-28T23:59:59Z", "2026-11-28T23:59:30Z",
		"2026-01-28T00:00:00Z", "1999-12-31T23:00:00Z",
	}
)

// propCosts are the costs drawn when a run has costs: limit.NoCost, the
// default, weights around the bursts and limits, and above them.
var propCosts = []int32{limit.NoCost, 0, 1, 2, 3, 7, 50}

// propConfig is the live configuration of one simulated sequence.
type propConfig struct {
	plan, method, stage, account plans.Throttle
	quota                        plans.Quota
	customer                     int32          // the customer quota of a run with costs
	rule                         plans.Throttle // the TOKEN_BUCKET rule of a run with rules
	fixed, sliding               int32          // the limits of its FIXED_WINDOW and SLIDING_WINDOW rules
}

// propRun drives the script and the reference model (limittest.Model)
// through the same sequence of operations decoded from ops, comparing
// every decision and, at the end, the usage counts. It returns a
// description of the first mismatch.
type propRun struct {
	ctx   context.Context
	l     *Engine
	clock *clocktest.Clock
	m     *limittest.Model
	cfg   propConfig
	ops   *proptest.Ops
	log   []string
	// leases: decisions ask for capacity leases (a drawn want) and a step
	// ends the oldest open lease (op "unlease") after spending part of it.
	leases bool
	open   []*limit.Return
	// costs: each decision draws its cost, and both keys share a customer
	// quota (cfg.customer).
	costs bool
	// rule: both keys' requests have a TOKEN_BUCKET rule (cfg.rule), a
	// FIXED_WINDOW rule of 13 s (cfg.fixed) and a SLIDING_WINDOW rule of
	// 7 s (cfg.sliding) that count them together.
	rule bool
}

// request builds the request of key k (0 or 1), via the plan bucket or
// the plan's method bucket, with the stage and account buckets.
func (p *propRun) request(k int, viaMethod bool) *limit.Request {
	first := limit.Bucket{Level: limit.LevelPlan, RateLimit: p.cfg.plan.RateLimit, BurstLimit: p.cfg.plan.BurstLimit}
	if viaMethod {
		first = limit.Bucket{Level: limit.LevelPlanMethod, RateLimit: p.cfg.method.RateLimit, BurstLimit: p.cfg.method.BurstLimit,
			Method: "GET", Path: "/pets"}
	}
	q := p.cfg.quota
	req := &limit.Request{KeyID: fmt.Sprintf("key%d", k), PlanID: "plan1", API: "api1", Stage: "prod",
		Buckets: []limit.Bucket{first,
			{Level: limit.LevelStage, RateLimit: p.cfg.stage.RateLimit, BurstLimit: p.cfg.stage.BurstLimit, Method: "GET", Path: "/pets"},
			{Level: limit.LevelAccount, RateLimit: p.cfg.account.RateLimit, BurstLimit: p.cfg.account.BurstLimit},
		},
		Quota: &limit.Quota{Limit: q.Limit, Period: q.Period, Offset: q.Offset},
	}
	if p.rule {
		req.Rules = []limit.Rule{{Name: "tb", Counter: "cnt-tb", Value: "all", Algorithm: limit.TokenBucket,
			RateLimit: p.cfg.rule.RateLimit, BurstLimit: p.cfg.rule.BurstLimit},
			{Name: "fw", Counter: "cnt-fw", Value: "all", Algorithm: limit.FixedWindow, Limit: p.cfg.fixed, Window: 13 * time.Second},
			{Name: "sw", Counter: "cnt-sw", Value: "all", Algorithm: limit.SlidingWindow, Limit: p.cfg.sliding, Window: 7 * time.Second}}
	}
	return req
}

// change applies one limit change chosen by two bytes.
func (p *propRun) change() {
	what, v := p.ops.Next(), p.ops.Next()
	t := plans.Throttle{RateLimit: proptest.Pick(propRates, v), BurstLimit: proptest.Pick(propBursts, v/16)}
	kinds := byte(5)
	if p.rule {
		kinds = 6
	}
	switch what % kinds {
	case 0:
		p.cfg.plan = t
	case 1:
		p.cfg.method = t
	case 2:
		p.cfg.stage = t
	case 3:
		p.cfg.account = t
	case 5:
		switch v % 3 {
		case 0:
			p.cfg.rule = plans.Throttle{RateLimit: proptest.Pick(propRates, v/3), BurstLimit: proptest.Pick(propWindowLimits, v/32)}
		case 1:
			p.cfg.fixed = proptest.Pick(propWindowLimits, v/3)
		default:
			p.cfg.sliding = proptest.Pick(propWindowLimits, v/3)
		}
	default:
		if p.costs && v%4 == 1 {
			p.cfg.customer = proptest.Pick(propLimits, v/4) * 3
		} else if v%2 == 0 {
			p.cfg.quota.Limit = proptest.Pick(propLimits, v/2)
		} else {
			p.cfg.quota = plans.Quota{Limit: p.cfg.quota.Limit, Period: proptest.Pick(propPeriods, v/2).Period, Offset: proptest.Pick(propPeriods, v/2).Offset}
		}
	}
	p.log = append(p.log, fmt.Sprintf("config %+v", p.cfg))
}

// step decodes and runs one operation; it returns a mismatch or "".
func (p *propRun) step() string {
	b := p.ops.Next()
	switch b % 8 {
	case 4:
		p.clock.Add(time.Duration(p.ops.Next()) * 7919 * time.Microsecond)
	case 5:
		p.clock.Add(time.Duration(p.ops.Next()) * 130 * time.Millisecond)
	case 6:
		p.clock.Add(time.Duration(p.ops.Next())*47*time.Minute + time.Duration(p.ops.Next())*time.Second)
	case 7:
		p.change()
		return ""
	case 3:
		if p.leases {
			return p.endLease()
		}
		return p.decide(int(b>>3)%2, b&0x40 != 0)
	default:
		return p.decide(int(b>>3)%2, b&0x40 != 0)
	}
	p.log = append(p.log, "now "+p.clock.Now().Format(time.RFC3339Nano))
	return ""
}

func (p *propRun) decide(k int, viaMethod bool) string {
	req := p.request(k, viaMethod)
	if p.leases {
		req.Want = int32(p.ops.Next() % 40)
	}
	if p.costs {
		req.Cost = proptest.Pick(propCosts, p.ops.Next())
		req.CustomerID, req.CustomerQuota = "cust1", &limit.Quota{Limit: p.cfg.customer}
	}
	want, _ := p.m.Decide(p.ctx, req)
	got, err := p.decideTx(req)
	p.log = append(p.log, fmt.Sprintf("key%d method=%v want=%d cost=%d allowed=%v refused=%v granted=%d", k, viaMethod, req.Want, req.Cost, want.Allowed, want.Refused, want.Granted))
	if err != nil {
		return "Decide: " + err.Error()
	}
	if got.Granted > 1 {
		p.open = append(p.open, &limit.Return{Req: req, Taken: got.Granted, Unspent: got.Granted - 1, At: got.Now,
			PeriodStart: got.Quota.Reset.Add(-got.Quota.Window)})
	}
	return limittest.Diff(got, want)
}

// endLease spends part of the oldest open lease (a drawn count) and ends
// it: the engine's Unlease against the model's.
func (p *propRun) endLease() string {
	if len(p.open) == 0 {
		return ""
	}
	rt := p.open[0]
	p.open = p.open[1:]
	rt.Spent = int32(p.ops.Next()) % (rt.Unspent + 1)
	rt.Unspent -= rt.Spent
	p.log = append(p.log, fmt.Sprintf("unlease taken=%d spent=%d unspent=%d", rt.Taken, rt.Spent, rt.Unspent))
	_ = p.m.Unlease(p.ctx, []limit.Return{*rt})
	if err := p.l.Unlease(p.ctx, []limit.Return{*rt}); err != nil {
		return "unlease: " + err.Error()
	}
	p.persist(rt.Req)
	return ""
}

// persist removes the TTLs of req's keys (see decideTx).
func (p *propRun) persist(req *limit.Request) {
	pipe := p.l.r.rdb.Pipeline()
	for _, k := range p.keysOf(req) {
		pipe.Persist(p.ctx, k)
	}
	_, _ = pipe.Exec(p.ctx)
}

// keysOf lists req's quota, usage and bucket keys.
func (p *propRun) keysOf(req *limit.Request) []string {
	var kr keyedRequest
	var q, cq keyedQuota
	p.l.res.resolve(req, &kr, nil, &q, &cq)
	keys := []string{kr.Quota.Key, kr.UsageKey}
	if kr.Customer != nil {
		keys = append(keys, kr.Customer.Key)
	}
	for _, b := range kr.Buckets {
		keys = append(keys, b.Key)
	}
	for _, r := range kr.Rules {
		keys = append(keys, r.Key)
	}
	return keys
}

// decideTx runs the script for req alone, followed in the same MULTI by
// PERSIST of the request's keys. Redis expires keys in real time while the
// model runs on the test clock; the script's own stale-state rule, which
// the model mirrors, is what is under test here (TTLs are tested in
// redis_test.go), and a stall of the test machine must not fail it.
func (p *propRun) decideTx(req *limit.Request) (limit.Decision, error) {
	c := &call{ctx: p.ctx, done: make(chan struct{})}
	p.l.res.resolve(req, &c.own, nil, &c.ownQuota, &c.ownCust)
	c.req = &c.own
	a := newRunArgs()
	a.addDecision(c.req, nil, rulesAt{}, customerAt{}, 0)
	keys, args, _ := a.build(runOpts{clock: p.l.r.clockArg(), leaseUS: p.l.r.leaseHoldUS})
	pipe := p.l.r.rdb.TxPipeline()
	cmd := queueOnce(p.ctx, pipe, keys, args)
	for _, k := range p.keysOf(req) {
		pipe.Persist(p.ctx, k)
	}
	_, _ = pipe.Exec(p.ctx)
	reply, err := cmd.Text()
	if err != nil {
		return limit.Decision{}, err
	}
	rr, err := decodeRunReply(reply, 1, len(c.req.Rules))
	if err != nil {
		return limit.Decision{}, err
	}
	c.res, c.rules = rr.decisions[0], rr.rules
	return p.l.result(c)
}

// checkUsage compares the usage hashes with the model's counts of
// requests and of cost units.
func (p *propRun) checkUsage() string {
	for k := range 2 {
		keyID := fmt.Sprintf("key%d", k)
		want, wantUnits := p.m.UsageDays(keyID, "plan1"), p.m.UnitsDays(keyID, "plan1")
		fields, err := p.l.r.rdb.HGetAll(p.ctx, p.l.r.keys.Usage(keyID, "plan1")).Result()
		if err != nil {
			return "usage: " + err.Error()
		}
		parsed, err := script.ParseUsage(fields)
		if err != nil {
			return "usage: " + err.Error()
		}
		got, gotUnits := map[string]string{}, map[string]int64{}
		for day, u := range parsed {
			got[day], gotUnits[day] = strconv.FormatInt(u.Requests, 10), u.Units
		}
		// the limiter keeps 100 days: compare the last 60
		from := p.clock.Now().AddDate(0, 0, -60).Format(plans.UsageDateLayout)
		for day, n := range wantUnits {
			if day >= from && gotUnits[day] != n {
				return fmtDiff("units of "+keyID+" on "+day, gotUnits[day], n)
			}
		}
		for day, n := range want {
			if day >= from && got[day] != strconv.FormatInt(n, 10) {
				return fmtDiff("usage of "+keyID+" on "+day, got[day], n)
			}
		}
		for day, n := range got {
			if day >= from && strconv.FormatInt(want[day], 10) != n {
				return fmtDiff("usage of "+keyID+" on "+day, n, want[day])
			}
		}
	}
	return ""
}

// run executes all operations and reports the first mismatch with the log.
func (p *propRun) run(tb testing.TB) {
	tb.Helper()
	proptest.Run(tb, p.ops, &p.log, p.step, p.checkUsage)
}

// newPropRun sets up a sequence: the first four bytes choose the start
// instant and the initial limits.
func newPropRun(l *Engine, clock *clocktest.Clock, ops []byte) *propRun {
	p := &propRun{ctx: context.Background(), l: l, m: &limittest.Model{Clock: clock.Now, LeaseHold: time.Duration(l.r.leaseHoldUS) * time.Microsecond}, ops: proptest.NewOps(ops), clock: clock}
	start, _ := time.Parse(time.RFC3339, proptest.Pick(propStarts, p.ops.Next()))
	clock.Set(start)
	a, b := p.ops.Next(), p.ops.Next()
	p.cfg = propConfig{
		plan:    plans.Throttle{RateLimit: proptest.Pick(propRates, a), BurstLimit: proptest.Pick(propBursts, a/16)},
		method:  plans.Throttle{RateLimit: proptest.Pick(propRates, b), BurstLimit: proptest.Pick(propBursts, b/16)},
		stage:   plans.Throttle{RateLimit: 10000, BurstLimit: 40},
		account: plans.Throttle{RateLimit: 10000, BurstLimit: 40},
	}
	q := proptest.Pick(propPeriods, p.ops.Next())
	p.cfg.quota = plans.Quota{Limit: proptest.Pick(propLimits, p.ops.Next()), Period: q.Period, Offset: q.Offset}
	p.log = append(p.log, "start "+start.Format(time.RFC3339), fmt.Sprintf("config %+v", p.cfg))
	return p
}

// seededRuns runs 24 sequences of 600 operations drawn from seeds of
// stream, each on its own engine with a fake clock; setup may change the
// run before it starts.
func seededRuns(t *testing.T, stream uint64, setup func(*propRun)) {
	proptest.EachSeed(t, stream, 24, 600, func(t *testing.T, ops []byte) {
		c := &clocktest.Clock{}
		rdb, prefix := redistest.MustClient(t)
		l := mustLoaded(t, New(rdb, Options{Prefix: prefix, Timeout: testTimeout, Clock: c.Now}))
		p := newPropRun(l, c, ops)
		setup(p)
		p.run(t)
	})
}

func TestDecideMatchesModel(t *testing.T) {
	seededRuns(t, 0x7011, func(*propRun) {})
}

// Costs and a customer quota against the model: each decision takes a
// drawn cost (none, weights up to and past the bursts and limits) from
// its plan bucket, quota and the customer quota both keys share, all or
// nothing, and usage counts requests and units apart.
func TestCostsAndCustomerQuotaMatchModel(t *testing.T) {
	seededRuns(t, 0xc057, func(p *propRun) {
		p.costs = true
		p.cfg.customer = 30
		p.cfg.quota.Limit = 100
	})
}

// Capacity leases against the model: decisions that take several tokens
// and units at once (the lease sizing rule: at most a quarter of what
// every level has left, 1 near empty) and lease ends that give back
// what was not spent (less the refill of the hold) and count usage.
func TestLeaseSizingAndGiveBackMatchModel(t *testing.T) {
	seededRuns(t, 0x1ea5e, leaseRun)
}

// The same with rules both keys' requests count in: a TOKEN_BUCKET rule
// and a fixed and a sliding window. A lease takes their units too (at
// most a quarter of each one's room), refuses with their lease waits, and
// gives the unspent units back: the token bucket's as a bucket's, each
// window's to the window of the take (docs/leases.md, "Rate-limit
// rules").
func TestRuleLeaseSizingAndGiveBackMatchModel(t *testing.T) {
	seededRuns(t, 0x1ea5eb, func(p *propRun) {
		leaseRun(p)
		p.rule, p.cfg.rule = true, plans.Throttle{RateLimit: 100, BurstLimit: 2000}
		// limits that take turns to bind, and leases that hold their units
		// for 30 s of the test clock, so that refusals meet leases out
		p.cfg.fixed, p.cfg.sliding = proptest.Pick(propWindowStarts, p.ops.Next()), proptest.Pick(propWindowStarts, p.ops.Next())
		p.l.r.leaseHoldUS, p.m.LeaseHold = (30 * time.Second).Microseconds(), 30*time.Second
	})
}

// propWindowLimits are the window rules' limits (and the TOKEN_BUCKET
// rule's bursts) a run with rules draws; propWindowStarts the windows'
// limits it starts with.
var (
	propWindowLimits = []int32{0, 3, 50, 100, 600}
	propWindowStarts = []int32{30, 60, 100, 150}
)

// leaseRun sets p up to take leases, with room for leases of many until
// a drawn change.
// The same with a customer quota both keys share and drawn costs: a
// one-unit request's lease takes at most a quarter of the customer
// quota's rest too, a refusal by it waits for its leases, and its unspent
// units go back (docs/leases.md); other costs decide per request.
func TestCustomerLeaseSizingAndGiveBackMatchModel(t *testing.T) {
	seededRuns(t, 0x1ea5ec, func(p *propRun) {
		leaseRun(p)
		p.costs, p.cfg.customer = true, 300
	})
}

func leaseRun(p *propRun) {
	p.leases = true
	p.cfg.plan, p.cfg.method = plans.Throttle{RateLimit: 100, BurstLimit: 400}, plans.Throttle{RateLimit: 7, BurstLimit: 200}
	p.cfg.stage, p.cfg.account = plans.Throttle{RateLimit: 1000, BurstLimit: 1000}, plans.Throttle{RateLimit: 10000, BurstLimit: 4000}
	p.cfg.quota.Limit = 1000
}

func FuzzLimiterVsModel(f *testing.F) {
	f.Add([]byte{0, 0x35, 0x21, 2, 3, 0, 0, 0, 5, 10, 0, 5, 10, 0, 8})
	f.Add([]byte{3, 0x13, 0x13, 4, 1, 0, 5, 10, 0, 5, 10, 0, 5, 5, 0, 6, 30, 0, 0})
	f.Add([]byte{5, 0x61, 0x00, 6, 2, 7, 4, 0x17, 0, 0, 8, 16, 6, 255, 255, 0, 8, 7, 2, 3, 0})
	f.Add([]byte{1, 0x29, 0x42, 7, 3, 0x40, 0x48, 6, 200, 0, 0x40, 7, 1, 0x22, 0x40, 5, 9, 0x40})
	rdb, prefix := redistest.MustClient(f)
	var n int
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 2000 {
			t.Skip("sequence too long")
		}
		n++
		// A sub-prefix per input keeps inputs apart; its keys have no TTL
		// (see decideTx), so they are deleted after each input.
		sub := fmt.Sprintf("%s:%d", prefix, n)
		defer redistest.DeletePrefix(context.Background(), rdb, sub)
		c := &clocktest.Clock{}
		l := mustLoaded(t, New(rdb, Options{Prefix: sub, Timeout: testTimeout, Clock: c.Now}))
		newPropRun(l, c, ops).run(t)
	})
}
