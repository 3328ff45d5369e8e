package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"tollgate/keyspace"
	"tollgate/limit"
	"tollgate/script"
)

// On Redis Cluster a script may only touch keys of one slot: a request's
// own state shares its key's hash tag, while the shared buckets and each
// (rule, value) state have slots of their own. So a batch is decided in
// three phases (docs/scale.md, "How the limiter runs on Redis Cluster"):
// take (op "decide" on the shared buckets and rules of each slot), decide
// (each slot of own state, knowing those outcomes) and give back what a
// refused request took (ops "refund" and "unrules"). A shared bucket or
// rule is never over-admitted nor charged for a refused request; it may
// under-admit until a give-back lands, or for good when one is lost.
//
// A customer quota (tollgate:customer-quota) shared by keys of several
// slots lives in its customer's slot and is decided as the shared buckets
// are: its units are taken in phase 1 (a quota-only decision there), the
// key's own state is decided in phase 2 knowing that outcome, and the
// units of a request refused in phase 2 go back in phase 3 (op "settle",
// in the period they were taken in). So a customer quota is never
// over-admitted either; it may under-admit while a give-back is in
// flight, or for good by the units of a give-back that is lost.
//
// Capacity leases (docs/leases.md) go through the same phases: phase 1
// takes the lease's want from each slot of shared buckets (each slot at
// most a quarter of what its buckets have left), phase 2 takes at most
// the least of those from the request's own state, and phase 3 gives
// back, per slot, what a slot took beyond the units the lease kept (all
// of them for a refused request), by the rule of op "unlease".
//
// A run that charges is sent once (onceCmd); only replies that prove it
// did not run (MOVED, ASK, TRYAGAIN, CLUSTERDOWN, LOADING, MASTERDOWN,
// NOSCRIPT) are sent again, within the call's deadline.

// cluster decides batches on a Redis Cluster.
type cluster struct {
	r             *runner
	concurrencyUS int64          // the lease of CONCURRENCY members (holds)
	refunds       sync.WaitGroup // give-backs in flight (Close waits for them)
}

// part is the buckets of one request that live in one slot other than its
// home (the slot of its own state): they are taken in phase 1.
type part struct {
	slot    int
	buckets []int // indexes into the request's buckets
	// outcome of phase 1
	taken   bool  // every bucket of the part gave a token
	granted int32 // the tokens each bucket of the part gave (more than 1: a lease)
	refused int   // index (into the request's buckets) of the refusing bucket; -1 none
	retryUS int64 // its retry-after
	// leaseWaitUS: refused while leases hold tokens of the bucket, how long
	// they may still hold them
	leaseWaitUS int64
	now         int64 // Redis time of the run (µs)
	err         error
}

// plan is one call's split over slots.
type plan struct {
	c     *call
	home  int // slot of the request's own state; -1 without one
	want  uint16
	parts []part
	// its rules' results from phase 1, which of them came back, whether
	// they admit and the retry of the first that refused, the error of
	// their runs, and whether their charges were undone already
	ruleRes   []script.RuleReply
	ruleKnown []bool
	// each rule's units its take gave (more than 1: a lease) and the
	// Redis time of its run (µs)
	ruleGranted []int32
	ruleNow     []int64
	// rulesWaitUS: refused by a rule while leases hold its tokens, how
	// long they may still hold them
	ruleWaitUS  []int64
	rulesWaitUS int64
	rulesOK     bool
	rulesRetry  int64
	ruleErr     error
	rulesUndone bool
	// cust is the customer quota decided in its own slot; nil when none
	// or in the home slot
	cust *custPart
}

// custPart is a customer quota taken in phase 1, in its own slot.
type custPart struct {
	slot        int
	taken       bool
	granted     int32 // the requests' units it gave (more than 1: a lease)
	retryUS     int64
	leaseWaitUS int64 // refused while leases hold its units: how long they may
	start, end  int64 // the period its units were taken in (s)
	now         int64 // Redis time of its run (µs), by its slot's clock
	left        int64
	err         error
	run         int64 // its run (in the slot's run window)
}

// trimRun is the op "unlease" run of slot giving back trims: each a
// lease of one bucket, ended unless held.
func (cl *cluster) trimRun(slot int, trims []trim) *slotRun {
	var names []string
	idx := map[string]uint16{}
	var body []byte
	for _, t := range trims {
		ls := script.LeaseSpec{Buckets: 1}
		if t.held {
			ls.Held = 1
		}
		if t.quota {
			ls.Buckets, ls.Quota, ls.Unspent, ls.PeriodStartS = 0, index(&names, idx, t.key), t.unspent, t.periodStartS
			body = ls.Append(body)
			continue
		}
		if r := t.window; r != nil {
			ls.Buckets, ls.Windows = 0, 1
			body = ls.Append(body)
			w := script.LeaseWindowSpec{Key: index(&names, idx, t.key), Algorithm: uint8(r.Algorithm), WindowUS: windowUS(r),
				TakenAtUS: t.atUS, Unspent: t.unspent}
			body = w.Append(body)
			continue
		}
		body = ls.Append(body)
		b := script.LeaseBucketSpec{Key: index(&names, idx, t.key), Taken: t.taken, Unspent: t.unspent, TakenAtUS: t.atUS}
		body = b.Append(body)
	}
	head := script.UnleaseArgs{Leases: uint16(len(trims)), States: uint16(len(names))}
	return &slotRun{slot: slot, keys: names, argv: []any{script.OpUnlease, cl.r.clockArg(), append(head.Append(nil), body...)}}
}

// custRefund gives a customer quota's units back (phase 3).
type custRefund struct {
	slot         int
	key          string
	units        int32
	periodStartS int64
}

// take is one decision of a phase-1 run.
type take struct {
	plan, part, rule int // rule -1: a part; else part -1 (both -1: the customer quota)
}

// decide decides the live calls of one batch (see the comment above);
// each phase has deadline to run (a phase that sent runs again after
// replies that prove they did not run takes longer: migrationWait).
func (cl *cluster) decide(deadline time.Duration, _ *runArgs, live []*call) {
	// Counted before any caller is answered, so that Close waits for this
	// batch's give-backs.
	cl.refunds.Add(1)
	plans := make([]plan, len(live))
	for i, c := range live {
		plans[i] = split(c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	cl.take(ctx, plans)
	cancel()
	refunds := &returns{tokens: map[int][]string{}, trims: map[int][]trim{}}
	undos := cl.ruleOutcomes(plans, refunds)
	ctx, cancel = context.WithTimeout(context.Background(), deadline)
	cl.decideHome(ctx, plans, refunds)
	cancel()
	undos = refusedRuleUndos(plans, undos, refunds)
	custs := customerRefunds(plans)
	if refunds.empty() && len(undos) == 0 && len(custs) == 0 {
		cl.refunds.Done()
		return
	}
	go func() {
		defer cl.refunds.Done()
		cl.giveBack(refunds, undos, custs)
	}()
}

// split assigns each bucket of c's request to its home slot or to a part
// of another slot.
func split(c *call) plan {
	req := c.req
	p := plan{c: c, home: -1, want: max(req.Want, 1)}
	if k := req.home(); k != "" {
		p.home = keyspace.Slot(k)
	}
	for i := range req.Buckets {
		s := keyspace.Slot(req.Buckets[i].Key)
		if s == p.home {
			continue
		}
		j := 0
		for j < len(p.parts) && p.parts[j].slot != s {
			j++
		}
		if j == len(p.parts) {
			p.parts = append(p.parts, part{slot: s, refused: -1})
		}
		p.parts[j].buckets = append(p.parts[j].buckets, i)
	}
	if c := req.Customer; c != nil && p.home >= 0 {
		if s := keyspace.Slot(c.Key); s != p.home {
			p.cust = &custPart{slot: s}
		}
	}
	p.ruleRes = make([]script.RuleReply, len(req.Rules))
	p.ruleKnown = make([]bool, len(req.Rules))
	p.ruleGranted, p.ruleNow, p.ruleWaitUS = make([]int32, len(req.Rules)), make([]int64, len(req.Rules)), make([]int64, len(req.Rules))
	return p
}

// take runs phase 1: every part and every rule of every plan, one run per
// slot, in one pipeline.
func (cl *cluster) take(ctx context.Context, plans []plan) {
	runs := map[int]*slotRun{}
	var order []*slotRun
	takes := map[*slotRun][]take{} // each run's decisions, in order
	runOf := func(slot int) *slotRun {
		r := runs[slot]
		if r == nil {
			r = &slotRun{slot: slot, args: newRunArgs()}
			runs[slot] = r
			order = append(order, r)
		}
		return r
	}
	for pi := range plans {
		req := plans[pi].c.req
		for qi := range plans[pi].parts {
			pt := &plans[pi].parts[qi]
			r := runOf(pt.slot)
			sub := keyedRequest{Buckets: make([]keyedBucket, len(pt.buckets)), Want: plans[pi].want}
			for k, bi := range pt.buckets {
				sub.Buckets[k] = req.Buckets[bi]
			}
			r.args.addDecision(&sub, nil, rulesAt{}, customerAt{}, 0)
			takes[r] = append(takes[r], take{plan: pi, part: qi, rule: -1})
		}
		for ri := range req.Rules {
			r := runOf(keyspace.Slot(req.Rules[ri].Key))
			sub := keyedRequest{Rules: req.Rules[ri : ri+1], Want: plans[pi].want}
			r.args.addDecision(&sub, nil, rulesAt{}, customerAt{}, cl.concurrencyUS)
			takes[r] = append(takes[r], take{plan: pi, part: -1, rule: ri})
		}
		if cp := plans[pi].cust; cp != nil {
			r := runOf(cp.slot)
			sub := keyedRequest{Quota: req.Customer, Want: plans[pi].want, Cost: req.Cost}
			r.args.addDecision(&sub, nil, rulesAt{}, customerAt{}, 0)
			takes[r] = append(takes[r], take{plan: pi, part: -1, rule: -1})
		}
	}
	if len(order) == 0 {
		return
	}
	clock := plans[0].c.clock
	for _, r := range order {
		// a customer quota's take waits for its slot's restore as a
		// key's decision does (the change set is named only then), and is
		// numbered in the slot's run window (a fail-open charge of its
		// request, should its reply be lost, names it)
		r.keys, r.argv, r.run = r.args.build(runOpts{clock: clock, changes: cl.r.changesOf(r.slot), await: cl.r.awaitRestore,
			leaseUS: cl.r.leaseHoldUS, window: cl.r.keys.RunWindow(r.slot, cl.r.node), run: cl.r.nextRun(r.slot)})
	}
	cl.r.trips.Add(1)
	cl.r.runCluster(ctx, order, nil)
	for _, r := range order {
		rules := 0
		for _, t := range takes[r] {
			if t.rule >= 0 {
				rules++
			}
		}
		rr, err := r.decoded(len(takes[r]), rules)
		k := 0
		for i, t := range takes[r] {
			p := &plans[t.plan]
			if t.rule >= 0 {
				if err != nil {
					p.ruleErr = err
					continue
				}
				p.ruleRes[t.rule], p.ruleKnown[t.rule] = rr.rules[k], true
				res := &rr.decisions[i]
				p.ruleGranted[t.rule], p.ruleNow[t.rule], p.ruleWaitUS[t.rule] = res.Granted, res.NowUS, res.LeaseWaitUS
				k++
				continue
			}
			if t.part < 0 {
				cp := p.cust
				cp.run = r.run
				if err != nil {
					cp.err = err
					continue
				}
				res := &rr.decisions[i]
				cp.taken, cp.granted, cp.retryUS, cp.leaseWaitUS = res.Allowed == 1, res.Granted, res.RetryUS, res.LeaseWaitUS
				cp.start, cp.end, cp.left, cp.now = res.QuotaStart, res.QuotaEnd, res.QuotaLeft, res.NowUS
				switch res.Refused {
				case script.RefusedPeriod: // Decide sends it again, its tables around this time
					cp.err, p.c.res.NowUS = errPeriodMoved, res.NowUS
				case script.RefusedUnrestored:
					cp.err = limit.ErrNotRestored
				}
				continue
			}
			pt := &p.parts[t.part]
			if err != nil {
				pt.err = err
				continue
			}
			res := &rr.decisions[i]
			pt.now, pt.taken, pt.granted = res.NowUS, res.Allowed == 1, res.Granted
			if !pt.taken {
				pt.refused, pt.retryUS, pt.leaseWaitUS = pt.buckets[res.Bucket-1], res.RetryUS, res.LeaseWaitUS
			}
		}
	}
}

// ruleOutcomes reads each plan's rules' outcome from phase 1 and returns
// the undos of the rules charged for a request whose rules refused (or
// failed); a rule's lease goes back as a trim, added to refunds.
func (cl *cluster) ruleOutcomes(plans []plan, refunds *returns) []keyEntry {
	var undos []keyEntry
	for pi := range plans {
		p := &plans[pi]
		if len(p.c.req.Rules) == 0 {
			continue
		}
		if p.ruleErr == nil {
			p.rulesOK, p.rulesRetry = rulesOutcome(p.c.req.Rules, p.ruleRes)
			if p.rulesOK {
				continue
			}
			p.rulesWaitUS = p.refusingRuleWait()
		}
		undos = p.ruleUndos(undos, refunds)
		p.rulesUndone = true
	}
	return undos
}

// refusingRuleWait returns the lease wait of p's first refusing rule (in
// check order, not shadow), as op "decide" reports a rule refusal's.
func (p *plan) refusingRuleWait() int64 {
	for i := range p.c.req.Rules {
		if !p.c.req.Rules[i].Rule.Shadow && p.ruleRes[i].Admitted != 1 {
			return p.ruleWaitUS[i]
		}
	}
	return 0
}

// ruleUndos appends the undos of p's rules that were charged (their result
// came back and admitted); the tokens of a rule that gave more than one
// (a lease) go back as a trim that ends it.
func (p *plan) ruleUndos(undos []keyEntry, refunds *returns) []keyEntry {
	rules := p.c.req.Rules
	for ri := range rules {
		if p.ruleKnown[ri] && p.ruleRes[ri].Admitted == 1 {
			if p.ruleGranted[ri] > 1 {
				p.trimRule(refunds, ri, 0)
				continue
			}
			undos = append(undos, undoOf(&rules[ri], &p.ruleRes[ri]))
		}
	}
	return undos
}

// trimRule gives back the units rule ri's take gave beyond k: a
// TOKEN_BUCKET rule's state as a bucket's, a window's to the window of
// the take (docs/leases.md).
func (p *plan) trimRule(refunds *returns, ri int, k int32) {
	r := &p.c.req.Rules[ri]
	slot := keyspace.Slot(r.Key)
	t := trim{key: r.Key, taken: p.ruleGranted[ri], unspent: p.ruleGranted[ri] - k, atUS: p.ruleNow[ri], held: k > 1}
	if a := r.Rule.Algorithm; a == limit.FixedWindow || a == limit.SlidingWindow {
		t.window = r.Rule
	}
	refunds.trims[slot] = append(refunds.trims[slot], t)
}

// refusedRuleUndos appends the undos of the rules of every request whose
// rules admitted but which was refused in phase 2, or failed with a reply
// that proves its phase-2 run did not run.
func refusedRuleUndos(plans []plan, undos []keyEntry, refunds *returns) []keyEntry {
	for pi := range plans {
		p := &plans[pi]
		if len(p.c.req.Rules) == 0 || p.rulesUndone {
			continue
		}
		c := p.c
		if c.err == nil && c.res.Allowed == 1 || c.err != nil && !notRun(c.err) && p.failed() == nil {
			continue // admitted, or its run may have run: the charges stay
		}
		undos = p.ruleUndos(undos, refunds)
	}
	return undos
}

// returns is what phase 3 gives back to the shared buckets, by slot: a
// token of each request refused (op "refund"), and the units of leases
// that a slot took beyond what the lease kept (op "unlease").
type returns struct {
	tokens map[int][]string
	trims  map[int][]trim
}

// trim gives back units a lease took in phase 1 and does not hold: from a
// shared bucket, taken at atUS (the bucket's clock), unspent of them
// back; from a customer quota (quota), unspent units into the period
// that started at periodStartS. held: the lease goes on (the level still
// counts it out).
type trim struct {
	key            string
	quota          bool
	window         *limit.Rule // a FIXED_WINDOW or SLIDING_WINDOW rule's state: its units go back to the window of atUS
	taken, unspent int32
	atUS           int64
	periodStartS   int64
	held           bool
}

func (rs *returns) empty() bool { return len(rs.tokens) == 0 && len(rs.trims) == 0 }

// decideHome runs phase 2 and answers every call, adding what to give
// back to the shared buckets (phase 3) to refunds.
func (cl *cluster) decideHome(ctx context.Context, plans []plan, refunds *returns) {
	order, homeOf := cl.homeRuns(plans)
	var alongs []*call
	for pi := range plans {
		if plans[pi].c.along != nil {
			alongs = append(alongs, plans[pi].c)
		}
	}
	if len(order) > 0 || len(alongs) > 0 {
		cl.r.trips.Add(1)
		cl.r.runCluster(ctx, order, alongs)
	}
	cl.answerHome(plans, order, homeOf, refunds)
	answerShared(plans, refunds, cl.r.redisNow(time.Now()))
}

// homeRuns groups the plans whose own state is to be decided (they have
// one, and phase 1 did not fail) into one run per home slot; homeOf lists
// each run's plans, in the order of its decisions.
func (cl *cluster) homeRuns(plans []plan) (order []*slotRun, homeOf map[*slotRun][]int) {
	runs := map[int]*slotRun{}
	homeOf = map[*slotRun][]int{}
	for pi := range plans {
		p := &plans[pi]
		if p.home < 0 || p.failed() != nil {
			continue
		}
		r := runs[p.home]
		if r == nil {
			r = &slotRun{slot: p.home, args: newRunArgs()}
			runs[p.home] = r
			order = append(order, r)
		}
		req := *p.c.req // shared with the caller: its Want stays
		req.Want = p.homeWant()
		r.args.addDecision(&req, p.remotes(), p.rulesAt(), p.customerAt(), 0)
		homeOf[r] = append(homeOf[r], pi)
	}
	for _, r := range order {
		r.keys, r.argv, r.run = r.args.build(cl.r.decideOpts(r.slot, plans[0].c.clock))
	}
	return order, homeOf
}

// homeWant returns the units p's own state may take in phase 2: its
// want, at most what every part gave in phase 1, so that a lease holds as
// many units of each level.
func (p *plan) homeWant() uint16 {
	w := p.want
	for i := range p.parts {
		if pt := &p.parts[i]; pt.taken {
			w = min(w, uint16(max(pt.granted, 1)))
		}
	}
	if cp := p.cust; cp != nil && cp.taken {
		w = min(w, uint16(max(cp.granted, 1)))
	}
	for ri := range p.ruleGranted {
		if p.ruleKnown[ri] {
			w = min(w, uint16(max(p.ruleGranted[ri], 1)))
		}
	}
	return max(w, 1)
}

// customerAt says how p's customer quota was decided: here, or in its
// own slot in phase 1.
func (p *plan) customerAt() customerAt {
	switch {
	case p.cust == nil:
		return customerAt{}
	case p.cust.taken:
		return customerAt{elsewhere: script.CustomerAdmitted}
	default:
		return customerAt{elsewhere: script.CustomerRefused, retryUS: p.cust.retryUS}
	}
}

// customerRefunds lists the customer quota units taken in phase 1 for a
// request that was not admitted: refused, or failed with a reply that
// proves its phase-2 run did not run (or not sent: its phase 1 failed).
func customerRefunds(plans []plan) []custRefund {
	var out []custRefund
	for pi := range plans {
		p := &plans[pi]
		if p.cust == nil || !p.cust.taken || p.cust.granted > 1 {
			continue // a lease's units go back as a trim (addRefunds)
		}
		c := p.c
		if c.err == nil && c.res.Allowed == 1 || c.err != nil && !notRun(c.err) && p.failed() == nil {
			continue // admitted, or its run may have run: the units stay
		}
		out = append(out, custRefund{slot: p.cust.slot, key: c.req.Customer.Key, units: c.req.units(), periodStartS: p.cust.start})
	}
	return out
}

// customerUndecided adds to err, the failure of p's decision (a
// limit.UndecidedError for a fail-open charge of it), what became of its
// customer quota in its own slot: taken, and kept (its home run may have
// run); or maybe taken by a run whose reply was lost (CustomerRun); or
// not taken, or given back. Other errors, and a p without a customer
// quota in its own slot, come back as they are.
func (p *plan) customerUndecided(err error) error {
	var ue *limit.UndecidedError
	if p.cust == nil || !errors.As(err, &ue) {
		return err
	}
	u := *ue
	cp := p.cust
	switch {
	case cp.err != nil && !isReply(cp.err) && !notRun(cp.err):
		u.CustomerRun = cp.run
	case cp.err == nil && cp.taken && !notRun(ue.Err) && p.failed() == nil:
		u.CustomerTaken = true // kept: see customerRefunds
	}
	return &u
}

// rulesAt says how p's rules were decided: elsewhere, in phase 1.
func (p *plan) rulesAt() rulesAt {
	switch {
	case len(p.c.req.Rules) == 0:
		return rulesAt{}
	case p.rulesOK:
		return rulesAt{elsewhere: script.RulesAdmitted}
	default:
		return rulesAt{elsewhere: script.RulesRefused, retryUS: p.rulesRetry}
	}
}

// answerHome answers the calls phase 2 decided (or failed), adding the
// shared tokens of those refused, or not run, to refunds, and what the
// parts of a lease took beyond it.
func (cl *cluster) answerHome(plans []plan, order []*slotRun, homeOf map[*slotRun][]int, refunds *returns) {
	for _, r := range order {
		rr, err := r.decoded(len(homeOf[r]), 0)
		if err != nil {
			err = cl.r.undecided(r.run, r.sent, err)
		} else {
			cl.r.observe(r.sent, rr.decisions[0].NowUS)
		}
		for i, pi := range homeOf[r] {
			p := &plans[pi]
			if err != nil {
				if notRun(err) { // it did not run: nothing of the key was charged
					p.addRefunds(refunds)
				} else { // it may have admitted the request: one unit stays
					p.trimTo(refunds, 1)
					p.trimRules(refunds, 1)
				}
				p.c.answer(p.customerUndecided(err))
				continue
			}
			p.c.res, p.c.run, p.c.rules = rr.decisions[i], r.run, p.ruleRes
			if p.c.res.Allowed != 1 {
				p.refusedElsewhere(&p.c.res)
				p.addRefunds(refunds)
			} else {
				p.leased(refunds)
			}
			p.c.answer(nil)
		}
	}
}

// answerShared answers the calls phase 2 did not decide: those whose
// phase 1 failed, and those without own state (decided by phase 1 alone),
// adding the shared tokens of those refused or failed to refunds. now is
// the estimate of Redis time.
func answerShared(plans []plan, refunds *returns, now time.Time) {
	for pi := range plans {
		p := &plans[pi]
		if p.c.answered {
			continue
		}
		if err := p.failed(); err != nil {
			p.addRefunds(refunds)
			if errors.Is(err, limit.ErrNotRestored) { // Redis replied: answered as the home slot's would be
				p.c.res, err = script.DecisionReply{Refused: script.RefusedUnrestored}, nil
			}
			if err != nil {
				// its home run was not sent (Run 0), at the limiter's time
				// now; the customer's units were given back if taken, or
				// may have been if its reply was lost
				err = p.customerUndecided(&limit.UndecidedError{At: now, Err: err})
			}
			p.c.answer(err)
			continue
		}
		p.c.res, p.c.rules = p.sharedOnly(), p.ruleRes
		if p.c.res.Allowed != 1 {
			p.addRefunds(refunds)
		} else {
			p.leased(refunds)
		}
		p.c.answer(nil)
	}
}

// failed returns the error of a phase-1 run of p, if any.
func (p *plan) failed() error {
	if p.ruleErr != nil {
		return p.ruleErr
	}
	if p.cust != nil && p.cust.err != nil {
		return p.cust.err
	}
	for i := range p.parts {
		if err := p.parts[i].err; err != nil {
			return err
		}
	}
	return nil
}

// remotes describes, per bucket of p's request, the phase-1 outcome of
// the buckets outside its home slot. A part that refused took nothing:
// its other buckets count as admitted, so the first refusing bucket in
// check order decides.
func (p *plan) remotes() []remote {
	if len(p.parts) == 0 {
		return nil
	}
	rem := make([]remote, len(p.c.req.Buckets))
	for _, pt := range p.parts {
		for _, bi := range pt.buckets {
			rem[bi] = remote{decided: true, admitted: pt.taken || pt.refused != bi}
			if pt.refused == bi {
				rem[bi].retryUS = pt.retryUS
			}
		}
	}
	return rem
}

// sharedOnly is the decision of a request without own state: admitted
// when every part took its tokens and its rules admit, else refused by
// the first refusing level in check order (buckets, then rules).
func (p *plan) sharedOnly() script.DecisionReply {
	res := script.DecisionReply{Allowed: 1, PlanLeft: -1, PlanFullUS: -1, QuotaLeft: -1}
	first := -1
	for _, pt := range p.parts {
		res.NowUS = max(res.NowUS, pt.now)
		if !pt.taken && (first < 0 || pt.refused < first) {
			first, res.RetryUS = pt.refused, pt.retryUS
		}
	}
	if res.NowUS == 0 { // rules alone: their runs report no bucket's time
		res.NowUS = time.Now().UnixMicro()
	}
	switch {
	case first >= 0:
		res.Allowed, res.Refused, res.Bucket = 0, script.RefusedBucket, uint8(first+1)
		p.refusedElsewhere(&res)
	case len(p.c.req.Rules) > 0 && !p.rulesOK:
		res.Allowed, res.Refused, res.RetryUS, res.LeaseWaitUS = 0, script.RefusedRules, p.rulesRetry, p.rulesWaitUS
	default:
		res.Granted = int32(p.homeWant()) // the least every part gave
	}
	return res
}

// refusedElsewhere sets the lease wait of res, refused by a bucket or
// customer quota that refused in phase 1: how long leases may still hold
// its units.
func (p *plan) refusedElsewhere(res *script.DecisionReply) {
	if res.Refused == script.RefusedCustomer && p.cust != nil {
		res.LeaseWaitUS = p.cust.leaseWaitUS
	}
	if res.Refused == script.RefusedRules {
		res.LeaseWaitUS = p.rulesWaitUS
	}
	if res.Refused != script.RefusedBucket {
		return
	}
	for _, pt := range p.parts {
		if pt.refused == int(res.Bucket)-1 {
			res.LeaseWaitUS = pt.leaseWaitUS
		}
	}
}

// leased gives back what p's parts took beyond the units its admitted
// decision kept (p.c.res.Granted: a lease when more than 1), and notes
// when each bucket of such a lease gave its tokens.
func (p *plan) leased(refunds *returns) {
	k := max(p.c.res.Granted, 1)
	p.trimTo(refunds, k)
	p.trimRules(refunds, k)
	if cp := p.cust; cp != nil {
		// the state after its take and the trim; its period when the key
		// has no quota of its own
		p.c.res.CustomerLeft = cp.left + int64(max(cp.granted-k, 0))
		p.c.res.CustomerStart, p.c.res.CustomerEnd = cp.start, cp.end
		if p.c.req.Quota == nil {
			p.c.res.QuotaStart, p.c.res.QuotaEnd = cp.start, cp.end
		}
	}
	if k > 1 && (len(p.parts) > 0 || len(p.c.req.Rules) > 0 || p.cust != nil) {
		// per bucket, then per rule, then the customer quota's
		buckets, rules := p.c.req.Buckets, p.c.req.Rules
		at := make([]time.Time, len(buckets), len(buckets)+len(rules))
		for i := range at {
			at[i] = time.UnixMicro(p.c.res.NowUS).UTC()
		}
		for _, pt := range p.parts {
			for _, bi := range pt.buckets {
				at[bi] = time.UnixMicro(pt.now).UTC()
			}
		}
		for ri := range rules {
			at = append(at, time.UnixMicro(p.ruleNow[ri]).UTC())
		}
		if p.cust != nil {
			at = append(at, time.UnixMicro(p.cust.now).UTC())
		}
		p.c.takenAt = at
	}
}

// trimRules gives back what each rule's take gave beyond k, the units the
// admitted request kept, and counts it as remaining in the rule's result.
func (p *plan) trimRules(refunds *returns, k int32) {
	for ri := range p.ruleGranted {
		if g := p.ruleGranted[ri]; p.ruleKnown[ri] && p.ruleRes[ri].Admitted == 1 && g > k && g > 1 {
			p.trimRule(refunds, ri, k)
			p.ruleRes[ri].Remaining += int64(g - k)
		}
	}
}

// trimTo gives back, per bucket of p's parts, the tokens taken in phase 1
// beyond k: the units the request kept (1: none is leased, and the part's
// lease ends; more: the lease goes on).
func (p *plan) trimTo(refunds *returns, k int32) {
	if cp := p.cust; cp != nil && cp.taken && cp.granted > max(k, 1) {
		refunds.trims[cp.slot] = append(refunds.trims[cp.slot], trim{key: p.c.req.Customer.Key, quota: true,
			periodStartS: cp.start, unspent: cp.granted - k, held: k > 1})
	}
	for _, pt := range p.parts {
		if !pt.taken || pt.granted <= max(k, 1) {
			continue
		}
		for _, bi := range pt.buckets {
			refunds.trims[pt.slot] = append(refunds.trims[pt.slot], trim{key: p.c.req.Buckets[bi].Key, taken: pt.granted,
				unspent: pt.granted - k, atUS: pt.now, held: k > 1})
		}
	}
}

// addRefunds adds the shared buckets of p's parts that took a token to
// refunds (a lease's tokens, all of them, as a trim that ends it).
func (p *plan) addRefunds(refunds *returns) {
	p.trimTo(refunds, 0)
	for _, pt := range p.parts {
		if !pt.taken || pt.granted > 1 {
			continue
		}
		for _, bi := range pt.buckets {
			refunds.tokens[pt.slot] = append(refunds.tokens[pt.slot], p.c.req.Buckets[bi].Key)
		}
	}
}

// giveBack runs phase 3: one op "refund" run per slot of refunds' tokens,
// one op "unlease" run per slot of its trims, the customer quotas' units
// and the rule undos. A failure loses those tokens or charges (the
// buckets and rules under-admit by as many requests); it is logged at
// warn level.
func (cl *cluster) giveBack(refunds *returns, undos []keyEntry, custs []custRefund) {
	ctx, cancel := context.WithTimeout(context.Background(), refundTimeout)
	defer cancel()
	order := make([]*slotRun, 0, len(refunds.tokens)+len(refunds.trims)+len(custs))
	for slot, keys := range refunds.tokens {
		var names []string
		idx := map[string]uint16{}
		var spec []byte
		for _, k := range keys {
			rs := script.RefundSpec{Key: index(&names, idx, k), Tokens: 1}
			spec = rs.Append(spec)
		}
		order = append(order, &slotRun{slot: slot, keys: names, argv: []any{script.OpRefund, cl.r.clockArg(), spec}})
	}
	for slot, trims := range refunds.trims {
		order = append(order, cl.trimRun(slot, trims))
	}
	buckets := len(order)
	for _, c := range custs {
		a := script.SettleArgs{PeriodStartS: c.periodStartS, Charge: -c.units}
		order = append(order, &slotRun{slot: c.slot, keys: []string{c.key}, argv: []any{script.OpSettle, cl.r.clockArg(), a.Append(nil)}})
	}
	if len(order) > 0 {
		cl.r.trips.Add(1)
	}
	cl.r.runCluster(ctx, order, nil)
	for i, r := range order {
		switch {
		case r.err == nil:
		case i < buckets:
			slog.Default().LogAttrs(ctx, slog.LevelWarn, "engine: giving back shared tokens failed; those buckets under-admit until they refill",
				slog.Int("slot", r.slot), slog.Int("requests", len(refunds.tokens[r.slot])+len(refunds.trims[r.slot])), slog.String("error", r.err.Error()))
		default:
			slog.Default().LogAttrs(ctx, slog.LevelWarn, "engine: giving back a customer quota's units failed; it under-admits by as many until its period ends",
				slog.String("key", r.keys[0]), slog.Int("units", int(custs[i-buckets].units)), slog.String("error", r.err.Error()))
		}
	}
	if len(undos) == 0 {
		return
	}
	if err := cl.r.runKeyed(ctx, script.OpUnrules, nil, undos); err != nil {
		slog.Default().LogAttrs(ctx, slog.LevelWarn, "engine: undoing rules of refused requests failed; those rules under-admit until their state moves on",
			slog.Int("rules", len(undos)), slog.String("error", err.Error()))
	}
}
