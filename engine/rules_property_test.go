package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"tollgate/internal/clocktest"
	"tollgate/internal/proptest"
	"tollgate/limit/limittest"

	"tollgate/internal/redistest"
	"tollgate/limit"
	"tollgate/plans"
)

// Rule parameters drawn by the rules property test and fuzz target.
var (
	propRuleLimits  = []int32{0, 1, 2, 3, 5, 8}
	propRuleWindows = []time.Duration{time.Second, 7 * time.Second, time.Minute, 13 * time.Minute}
	propRuleRates   = []float64{0.3333333333333333, 0.7692307692307693, 1, 2.5, 7, 100}
	propRuleDelays  = []time.Duration{0, 300 * time.Millisecond, time.Second, 2500 * time.Millisecond}
	propRulePeriods = []string{plans.PeriodDay, plans.PeriodWeek, plans.PeriodMonth}
)

// propLease is the CONCURRENCY lease of the property runs: an hour of the
// test clock, so members leave by lease within a run, and no renewal
// (every 20 minutes of real time) runs during one.
const propLease = time.Hour

// rulesRun drives the engine (one primary, through its op "decide", each
// run in a MULTI with PERSIST of its keys) and the reference model
// through one sequence decoded from ops: requests of three callers (two
// behind one address) with a plan bucket, the stage and account buckets,
// a quota and five rules, one per algorithm; time steps; limit changes
// that keep the rules' counters; releases of requests in flight.
type rulesRun struct {
	ctx   context.Context
	l     *Engine
	clock *clocktest.Clock
	m     *limittest.Model
	cfg   propConfig
	rules [6]limit.Rule
	// requests in flight: the engine's decisions and the model's
	held, heldM []limit.Decision
	ops         *proptest.Ops
	log         []string
}

// ruleFor returns rule i (algorithm i+1) with parameters chosen by b and
// mode shadow when shadow.
func ruleFor(i int, b byte, shadow bool) limit.Rule {
	r := limit.Rule{Name: fmt.Sprintf("r%d", i), Counter: fmt.Sprintf("cnt%d", i), Algorithm: limit.Algorithm(i + 1), Shadow: shadow, Private: true}
	switch r.Algorithm {
	case limit.TokenBucket:
		r.RateLimit, r.BurstLimit = proptest.Pick(propRuleRates, b), proptest.Pick(propRuleLimits, b/8)
	case limit.SlidingWindow, limit.FixedWindow:
		r.Limit, r.Window = proptest.Pick(propRuleLimits, b), proptest.Pick(propRuleWindows, b/8)
	case limit.Concurrency:
		r.Limit = proptest.Pick(propRuleLimits, b)
	case limit.CalendarQuota:
		r.Limit, r.Period, r.Offset = proptest.Pick(propRuleLimits, b), proptest.Pick(propRulePeriods, b/8), int32(b/32%3)
	default:
		r.RateLimit, r.BurstLimit, r.MaxDelay = proptest.Pick(propRuleRates, b), proptest.Pick(propRuleLimits, b/8), proptest.Pick(propRuleDelays, b/64)
	}
	return r
}

// request builds caller k's request (k 0 and 1 share address "A").
func (p *rulesRun) request(k int) *limit.Request {
	ip := "A"
	if k == 2 {
		ip = "B"
	}
	req := &limit.Request{KeyID: fmt.Sprintf("key%d", k), PlanID: "plan1", API: "api1", Stage: "prod",
		Buckets: []limit.Bucket{{Level: limit.LevelPlan, RateLimit: p.cfg.plan.RateLimit, BurstLimit: p.cfg.plan.BurstLimit},
			{Level: limit.LevelAccount, RateLimit: 10000, BurstLimit: 40}},
		Quota: &limit.Quota{Limit: p.cfg.quota.Limit, Period: p.cfg.quota.Period, Offset: p.cfg.quota.Offset}}
	for i := range p.rules {
		r := p.rules[i]
		r.Value = "ip=" + ip
		req.Rules = append(req.Rules, r)
	}
	return req
}

// step decodes and runs one operation; it returns a mismatch or "".
func (p *rulesRun) step() string {
	b := p.ops.Next()
	switch b % 8 {
	case 3:
		p.clock.Add(time.Duration(p.ops.Next()) * 7919 * time.Microsecond)
	case 4:
		p.clock.Add(time.Duration(p.ops.Next()) * 130 * time.Millisecond)
	case 5:
		p.clock.Add(time.Duration(p.ops.Next())*47*time.Second + time.Duration(p.ops.Next())*time.Millisecond)
	case 6:
		i, v := int(p.ops.Next())%len(p.rules), p.ops.Next()
		p.rules[i] = ruleFor(i, v, p.rules[i].Shadow)
		p.log = append(p.log, fmt.Sprintf("rule %+v", p.rules[i]))
		return ""
	case 7:
		return p.release(int(p.ops.Next()))
	default:
		return p.decide(int(b>>3) % 3)
	}
	p.log = append(p.log, "now "+p.clock.Now().Format(time.RFC3339Nano))
	return ""
}

// release ends the i-th request still in flight.
func (p *rulesRun) release(i int) string {
	if len(p.held) == 0 {
		return ""
	}
	i %= len(p.held)
	p.held[i].Release()
	p.heldM[i].Release()
	p.held = append(p.held[:i], p.held[i+1:]...)
	p.heldM = append(p.heldM[:i], p.heldM[i+1:]...)
	p.log = append(p.log, fmt.Sprintf("release %d", i))
	return ""
}

func (p *rulesRun) decide(k int) string {
	req := p.request(k)
	want, _ := p.m.Decide(p.ctx, req)
	got, err := p.decideTx(req)
	p.log = append(p.log, fmt.Sprintf("caller %d: allowed=%v refused=%v rules %+v", k, want.Allowed, want.Refused, want.Rules))
	if err != nil {
		return "Decide: " + err.Error()
	}
	if diff := limittest.Diff(got, want); diff != "" {
		return diff
	}
	if (got.Release == nil) != (want.Release == nil) {
		return fmtDiff("Release", got.Release != nil, want.Release != nil)
	}
	if got.Release != nil {
		p.held, p.heldM = append(p.held, got), append(p.heldM, want)
	}
	return ""
}

// decideTx runs op "decide" for req alone, followed in the same MULTI by
// PERSIST of its keys (see propRun.decideTx: the states' staleness on the
// test clock is under test, not Redis expiry), and returns its decision as
// Decide would.
func (p *rulesRun) decideTx(req *limit.Request) (limit.Decision, error) {
	c := &call{ctx: p.ctx, done: make(chan struct{})}
	p.l.res.resolve(req, &c.own, nil, &c.ownQuota, &c.ownCust)
	c.req = &c.own
	a := newRunArgs()
	a.addDecision(c.req, nil, rulesAt{}, customerAt{}, p.l.holds.leaseUS)
	keys, args, _ := a.build(runOpts{clock: p.l.r.clockArg()})
	pipe := p.l.r.rdb.TxPipeline()
	cmd := queueOnce(p.ctx, pipe, keys, args)
	for _, k := range keys {
		pipe.Persist(p.ctx, k)
	}
	_, _ = pipe.Exec(p.ctx)
	text, err := cmd.Text()
	if err != nil {
		return limit.Decision{}, err
	}
	rr, err := decodeRunReply(text, 1, len(c.req.Rules))
	if err != nil {
		return limit.Decision{}, err
	}
	c.res, c.rules = rr.decisions[0], rr.rules
	return p.l.result(c)
}

func (p *rulesRun) run(tb testing.TB) {
	tb.Helper()
	proptest.Run(tb, p.ops, &p.log, p.step, nil)
}

// newRulesRun sets up a sequence: the first bytes choose the start, the
// plan's limits, the quota and the rules with their modes.
func newRulesRun(l *Engine, clock *clocktest.Clock, ops []byte) *rulesRun {
	p := &rulesRun{ctx: context.Background(), l: l, m: &limittest.Model{Clock: clock.Now, ConcurrencyLease: propLease}, ops: proptest.NewOps(ops), clock: clock}
	start, _ := time.Parse(time.RFC3339, proptest.Pick(propStarts, p.ops.Next()))
	clock.Set(start)
	a := p.ops.Next()
	p.cfg.plan = plans.Throttle{RateLimit: proptest.Pick(propRates, a), BurstLimit: proptest.Pick(propBursts, a/16)}
	q := proptest.Pick(propPeriods, p.ops.Next())
	p.cfg.quota = plans.Quota{Limit: proptest.Pick(propLimits, p.ops.Next()), Period: q.Period, Offset: q.Offset}
	modes := p.ops.Next()
	for i := range p.rules {
		p.rules[i] = ruleFor(i, p.ops.Next(), modes&(1<<i) != 0)
	}
	p.log = append(p.log, "start "+start.Format(time.RFC3339), fmt.Sprintf("config %+v rules %+v", p.cfg, p.rules))
	return p
}

// Every rule decision of the script matches the reference model, alone
// and with the plan's limits (all or nothing: a request refused by its
// plan bucket or quota charges no rule, and one refused by a rule charges
// nothing), through time steps, limit changes and releases.
func TestRulesMatchModel(t *testing.T) {
	proptest.EachSeed(t, 0x14, 24, 500, func(t *testing.T, ops []byte) {
		c := &clocktest.Clock{}
		rdb, prefix := redistest.MustClient(t)
		l := mustLoaded(t, New(rdb, Options{Prefix: prefix, Timeout: testTimeout, Clock: c.Now, ConcurrencyLease: propLease}))
		t.Cleanup(func() { _ = l.Close() })
		newRulesRun(l, c, ops).run(t)
	})
}

func FuzzRulesVsModel(f *testing.F) {
	f.Add([]byte{0, 0x35, 2, 3, 0x1f, 1, 2, 3, 4, 5, 0, 8, 16, 0, 8, 7, 0})
	f.Add([]byte{3, 0x13, 4, 1, 0, 9, 17, 33, 65, 129, 0, 0, 0, 5, 10, 0, 0, 6, 4, 200, 0})
	rdb, prefix := redistest.MustClient(f)
	var n int
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 2000 {
			t.Skip("sequence too long")
		}
		n++
		sub := fmt.Sprintf("%s:%d", prefix, n)
		defer redistest.DeletePrefix(context.Background(), rdb, sub)
		c := &clocktest.Clock{}
		l := mustLoaded(t, New(rdb, Options{Prefix: sub, Timeout: testTimeout, Clock: c.Now, ConcurrencyLease: propLease}))
		defer l.Close()
		newRulesRun(l, c, ops).run(t)
	})
}
