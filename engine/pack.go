package engine

import (
	"sync"
	"time"

	"tollgate/limit"
	"tollgate/script"
)

// runArgs lays out KEYS and ARGV of one run of op "decide" (decide.lua):
// bucket and quota states, usage hashes and rule states, each key once,
// then the change set and the run window; the charges and decisions
// packed after the head (script.DecideArgs). A flusher reuses one.
type runArgs struct {
	states, usages, rules       []string
	stateIdx, usageIdx, ruleIdx map[string]uint16
	charges, decisions          []byte
	nCharges, nDecisions        int
	head                        script.DecideArgs
	keys                        []string
	spec                        []byte
	live                        []*call
	decision                    script.DecisionSpec
	bucket                      script.BucketSpec
	rule                        script.RuleSpec
	charge                      script.ChargeSpec
	quotaOnly                   bool // a decision has a quota but no usage count
}

// argsPool keeps runArgs between flushes (their maps and buffers).
var argsPool sync.Pool

func newRunArgs() *runArgs {
	return &runArgs{stateIdx: map[string]uint16{}, usageIdx: map[string]uint16{}, ruleIdx: map[string]uint16{}}
}

func (a *runArgs) reset() {
	clear(a.states)
	clear(a.usages)
	clear(a.rules)
	a.states, a.usages, a.rules = a.states[:0], a.usages[:0], a.rules[:0]
	a.charges, a.decisions, a.nCharges, a.nDecisions, a.quotaOnly = a.charges[:0], a.decisions[:0], 0, 0, false
	clear(a.stateIdx)
	clear(a.usageIdx)
	clear(a.ruleIdx)
}

// index returns k's 1-based index in *list, adding it when new.
func index(list *[]string, idx map[string]uint16, k string) uint16 {
	if i, ok := idx[k]; ok {
		return i
	}
	*list = append(*list, k)
	i := uint16(len(*list))
	idx[k] = i
	return i
}

// remote is the outcome of a bucket decided in another slot (Redis
// Cluster's shared buckets, taken first: cluster.go).
type remote struct {
	// decided marks the buckets decided elsewhere; the others are decided
	// in the run.
	decided, admitted bool
	retryUS           int64 // its retry-after when it refused (-1: never)
}

// rulesAt says where a decision's rules are decided: here (in the run),
// or elsewhere with an outcome (Redis Cluster: in their own slots first).
type rulesAt struct {
	elsewhere uint8 // script.RulesHere, RulesAdmitted or RulesRefused
	retryUS   int64
}

// customerAt says where a decision's customer quota is decided: here (in
// the run), or elsewhere with an outcome (Redis Cluster: in its own slot
// first).
type customerAt struct {
	elsewhere uint8 // script.CustomerHere, CustomerAdmitted or CustomerRefused
	retryUS   int64
}

// addDecision packs req as one decision. rem, when not nil, has one
// entry per bucket, those decided elsewhere packed with key 0; rules and
// cust say where its rules and customer quota are decided (here: packed
// in the run).
func (a *runArgs) addDecision(req *keyedRequest, rem []remote, rules rulesAt, cust customerAt, concurrencyUS int64) {
	d := &a.decision
	*d = script.DecisionSpec{Buckets: uint8(len(req.Buckets)), Plan: uint8(req.planIndex() + 1),
		RulesElsewhere: rules.elsewhere, RulesRetryUS: rules.retryUS, Want: req.Want, Cost: req.units()}
	if rules.elsewhere == script.RulesHere {
		d.Rules = uint8(len(req.Rules))
	}
	if q := req.Quota; q != nil {
		d.Quota = index(&a.states, a.stateIdx, q.Key)
		d.Limit, d.Period, d.Offset = q.Limit, q.Period, q.Offset
	}
	if c := req.Customer; c != nil {
		if cust.elsewhere == script.CustomerHere {
			d.Customer = index(&a.states, a.stateIdx, c.Key)
			d.CustomerLimit, d.CustomerPeriod, d.CustomerOffset = c.Limit, c.Period, c.Offset
		}
		d.CustomerAt, d.CustomerRetryUS = cust.elsewhere, cust.retryUS
	}
	if req.UsageKey != "" {
		d.Usage = index(&a.usages, a.usageIdx, req.UsageKey)
	} else if d.Quota != 0 {
		a.quotaOnly = true
	}
	s := d.Append(a.decisions)
	if q := req.Quota; q != nil && q.tabled() {
		s = q.Bounds.Append(s)
	}
	if c := req.Customer; c != nil && d.Customer != 0 && c.tabled() { // its own period
		s = c.Bounds.Append(s)
	}
	for i := range req.Buckets {
		b := &req.Buckets[i]
		a.bucket = script.BucketSpec{Rate: b.RateLimit, Burst: b.BurstLimit}
		if rem != nil && rem[i].decided {
			a.bucket = script.BucketSpec{RetryUS: rem[i].retryUS}
			if rem[i].admitted {
				a.bucket.Admitted = 1
			}
		} else {
			a.bucket.Key = index(&a.states, a.stateIdx, b.Key)
		}
		s = a.bucket.Append(s)
	}
	if d.Rules > 0 {
		for i := range req.Rules {
			s = a.appendRule(s, &req.Rules[i], concurrencyUS)
		}
	}
	a.decisions = s
	a.nDecisions++
}

// appendRule packs rule r of a decision (its state among the rule states).
func (a *runArgs) appendRule(s []byte, r *keyedRule, leaseUS int64) []byte {
	rl := r.Rule
	a.rule = script.RuleSpec{Algorithm: uint8(rl.Algorithm), Key: index(&a.rules, a.ruleIdx, r.Key)}
	if rl.Shadow {
		a.rule.Shadow = 1
	}
	switch rl.Algorithm {
	case limit.TokenBucket:
		a.rule.Rate, a.rule.Burst = rl.RateLimit, max(rl.BurstLimit, 0)
	case limit.SlidingWindow, limit.FixedWindow:
		a.rule.Limit, a.rule.WindowUS = max(rl.Limit, 0), windowUS(rl)
	case limit.Concurrency:
		a.rule.Limit, a.rule.LeaseUS, a.rule.Node, a.rule.Seq = max(rl.Limit, 0), leaseUS, r.hold.node, r.hold.seq
	case limit.CalendarQuota:
		code, _ := script.PeriodCode(rl.Period)
		a.rule.Limit, a.rule.Period, a.rule.Offset = max(rl.Limit, 0), code, uint8(min(max(rl.Offset, 0), 255))
	case limit.LeakyBucket:
		a.rule.Rate, a.rule.Burst, a.rule.MaxDelayUS = rl.RateLimit, max(rl.BurstLimit, 0), max(rl.MaxDelay.Microseconds(), 0)
	}
	return a.rule.Append(s)
}

// addCharge packs the charge part p (its states and usage hash among the
// run's; the period table of an anchored or zoned quota made around its
// admission, not now).
func (a *runArgs) addCharge(p *chargePart) {
	c := &a.charge
	*c = p.spec
	if q := p.period; q != nil {
		c.Period, c.Offset = q.Period, q.Offset
	}
	if q := p.custPeriod; q != nil { // its own period (the plan's calendar)
		c.CustomerPeriod, c.CustomerOffset = q.Period, q.Offset
	}
	if p.quotaKey != "" {
		c.Quota = index(&a.states, a.stateIdx, p.quotaKey)
	}
	if p.custKey != "" {
		c.Customer = index(&a.states, a.stateIdx, p.custKey)
	}
	if p.bucketKey != "" {
		c.Bucket = index(&a.states, a.stateIdx, p.bucketKey)
	}
	if p.usageKey != "" {
		c.Usage = index(&a.usages, a.usageIdx, p.usageKey)
	} else if c.Quota != 0 || c.Customer != 0 {
		a.quotaOnly = true // the change set is named: the restore gate
	}
	a.charges = c.Append(a.charges)
	for _, q := range []*keyedQuota{p.period, p.custPeriod} {
		if q != nil && q.tabled() {
			b := script.TableOf(q.Cal, time.UnixMicro(c.AtUS))
			a.charges = b.Append(a.charges)
		}
	}
	a.nCharges++
}

// runOpts are the run-wide parts of a run's arguments.
type runOpts struct {
	clock   string
	changes string // the slot's usage change set; "" for none
	window  string // the node's run window of the slot; "" for none
	run     int64
	await   bool
	leaseUS int64
}

// build returns KEYS and ARGV of op "decide" for what was added, and the
// run's number when it names its run window (0 when not). The change set
// is named when the run counts usage or decides a quota (the restore
// gate), the window when given and the run counts usage, decides a quota
// or charges: only those need counting exactly once. KEYS and ARGV alias
// a's buffers: use them before the next reset.
func (a *runArgs) build(o runOpts) ([]string, []any, int64) {
	a.keys = append(append(append(a.keys[:0], a.states...), a.usages...), a.rules...)
	h := &a.head
	*h = script.DecideArgs{Decisions: uint16(a.nDecisions), Charges: uint16(a.nCharges), States: uint16(len(a.states)),
		Usages: uint16(len(a.usages)), RuleStates: uint16(len(a.rules)), LeaseUS: o.leaseUS}
	if o.changes != "" && (len(a.usages) > 0 || a.quotaOnly) {
		a.keys = append(a.keys, o.changes)
		h.Changes = uint16(len(a.keys))
		if o.await {
			h.Await = 1
		}
	}
	if o.window != "" && (len(a.usages) > 0 || a.quotaOnly || a.nCharges > 0) {
		a.keys = append(a.keys, o.window)
		h.Window, h.Run = uint16(len(a.keys)), o.run
	}
	a.spec = append(append(h.Append(a.spec[:0]), a.charges...), a.decisions...)
	return a.keys, []any{script.OpDecide, o.clock, a.spec}, h.Run
}
