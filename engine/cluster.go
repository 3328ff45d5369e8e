package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redisscript"
	"tollgate/keyspace"
	"tollgate/script"
)

// On Redis Cluster a script may only touch keys of one slot. A request's
// own state (its plan or plan-method bucket, quota and usage) shares the
// key's hash tag, so one run decides it atomically; the shared stage and
// account buckets, and each (rule, value) state, live in slots of their
// own. A batch is decided in three phases (docs/scale.md, "How the
// limiter runs on Redis Cluster"):
//
//  1. take: for every slot holding shared buckets or rule states of the
//     batch, one run of op "decide" takes a token of each of its buckets
//     for each request, all or nothing per request and slot, and decides
//     each of its rules (a decision of that rule alone); all the runs go
//     in one pipeline, one round trip per node.
//  2. decide: for every slot holding requests' own state, one run decides
//     them knowing the outcome of their shared buckets and rules (packed
//     as decided elsewhere, in their place in the check order), charging
//     the key's own limits only when those admitted; again one round trip
//     per node, with the callers' along commands in the same pipeline.
//  3. give back: tokens and rule charges taken in phase 1 for a request
//     that was refused go back (ops "refund" and "unrules"), after the
//     callers have their answers.
//
// So a shared bucket or rule is never over-admitted (a take is atomic in
// its slot) and never charged for a refused request; it may under-admit
// while a give-back is in flight, or for good when a give-back is lost
// (the node died, Redis did not answer): tokens, never quota. A request
// without own state is decided from phase 1 alone.
//
// A run that charges is sent once (onceCmd). Replies that prove it did
// not run are sent again within the call's deadline: MOVED and ASK
// (go-redis follows those itself), TRYAGAIN (a multi-key run while its
// slot migrates), CLUSTERDOWN, LOADING, MASTERDOWN and NOSCRIPT (after
// loading the script). Any other failure fails the requests of that run;
// a phase-2 run that may have run keeps the shared tokens its requests
// took, one that did not run gives them back.

// cluster decides batches on a Redis Cluster.
type cluster struct {
	e       *Engine
	rdb     *redis.ClusterClient
	refunds sync.WaitGroup // give-backs in flight (Close waits for them)
	resent  atomic.Int64   // runs sent again after a reply proved they did not run
}

func newCluster(e *Engine, rdb *redis.ClusterClient) *cluster { return &cluster{e: e, rdb: rdb} }

// refundTimeout bounds the give-backs of phase 3, which run after the
// callers were answered.
const refundTimeout = time.Second

// maxResendWait caps the wait before a run whose reply proved it did not
// run is sent again (5 ms more per attempt up to this).
const maxResendWait = 50 * time.Millisecond

// migrationWait is how long a run whose replies prove it did not run
// (TRYAGAIN while its slot migrates key by key, CLUSTERDOWN or MASTERDOWN
// while a replica takes over, LOADING) is sent again, each time under a
// deadline of its own: Redis answers, so waiting cannot hide an outage, and
// no request of a migrating slot fails.
const migrationWait = 3 * time.Second

// part is the buckets of one request that live in one slot other than its
// home (the slot of its own state): they are taken in phase 1.
type part struct {
	slot    int
	buckets []int // indexes into the request's buckets
	// outcome of phase 1
	taken   bool  // every bucket of the part gave a token
	refused int   // index (into the request's buckets) of the refusing bucket; -1 none
	retryUS int64 // its retry-after
	now     int64 // Redis time of the run (µs)
	err     error
}

// plan is one call's split over slots.
type plan struct {
	c     *call
	home  int // slot of the request's own state; -1 without one
	parts []part
	// its rules' results from phase 1, which of them came back, whether
	// they admit and the retry of the first that refused, the error of
	// their runs, and whether their charges were undone already
	ruleRes     []script.RuleReply
	ruleKnown   []bool
	rulesOK     bool
	rulesRetry  int64
	ruleErr     error
	rulesUndone bool
}

// slotRun is one run of the script in one slot.
type slotRun struct {
	slot  int
	args  *runArgs
	keys  []string
	argv  []any
	run   int64 // its run number (phase 2), 0 none
	sent  time.Time
	cmd   *redis.Cmd
	reply string
	err   error
	// the decisions of a phase-1 run: a part of a plan, or one rule
	takes []take
}

// take is one decision of a phase-1 run.
type take struct {
	plan, part, rule int // rule -1: a part; else part -1
}

// decide decides the live calls of one batch (see the comment above);
// each phase has deadline to run (a phase that sent runs again after
// replies that prove they did not run takes longer: migrationWait).
func (cl *cluster) decide(deadline time.Duration, live []*call) {
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
	undos := cl.ruleOutcomes(plans)
	ctx, cancel = context.WithTimeout(context.Background(), deadline)
	refunds := cl.decideHome(ctx, plans)
	cancel()
	undos = refusedRuleUndos(plans, undos)
	if len(refunds) == 0 && len(undos) == 0 {
		cl.refunds.Done()
		return
	}
	go func() {
		defer cl.refunds.Done()
		cl.giveBack(refunds, undos)
	}()
}

// split assigns each bucket of c's request to its home slot or to a part
// of another slot.
func split(c *call) plan {
	req := c.req
	p := plan{c: c, home: -1}
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
	p.ruleRes = make([]script.RuleReply, len(req.Rules))
	p.ruleKnown = make([]bool, len(req.Rules))
	return p
}

// take runs phase 1: every part and every rule of every plan, one run per
// slot, in one pipeline.
func (cl *cluster) take(ctx context.Context, plans []plan) {
	runs := map[int]*slotRun{}
	var order []*slotRun
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
			sub := keyedRequest{Buckets: make([]keyedBucket, len(pt.buckets)), Want: 1}
			for k, bi := range pt.buckets {
				sub.Buckets[k] = req.Buckets[bi]
			}
			r.args.addDecision(&sub, nil, rulesAt{}, 0)
			r.takes = append(r.takes, take{plan: pi, part: qi, rule: -1})
		}
		for ri := range req.Rules {
			r := runOf(keyspace.Slot(req.Rules[ri].Key))
			sub := keyedRequest{Rules: req.Rules[ri : ri+1], Want: 1}
			r.args.addDecision(&sub, nil, rulesAt{}, cl.e.holds.leaseUS)
			r.takes = append(r.takes, take{plan: pi, part: -1, rule: ri})
		}
	}
	if len(order) == 0 {
		return
	}
	clock := plans[0].c.clock
	for _, r := range order {
		r.keys, r.argv, _ = r.args.build(runOpts{clock: clock})
	}
	cl.run(ctx, order, nil)
	for _, r := range order {
		rules := 0
		for _, t := range r.takes {
			if t.rule >= 0 {
				rules++
			}
		}
		rr, err := r.decoded(len(r.takes), rules)
		k := 0
		for i, t := range r.takes {
			p := &plans[t.plan]
			if t.rule >= 0 {
				if err != nil {
					p.ruleErr = err
					continue
				}
				p.ruleRes[t.rule], p.ruleKnown[t.rule] = rr.rules[k], true
				k++
				continue
			}
			pt := &p.parts[t.part]
			if err != nil {
				pt.err = err
				continue
			}
			res := &rr.decisions[i]
			pt.now, pt.taken = res.NowUS, res.Allowed == 1
			if !pt.taken {
				pt.refused, pt.retryUS = pt.buckets[res.Bucket-1], res.RetryUS
			}
		}
	}
}

// decoded returns r's reply decoded, or the run's error.
func (r *slotRun) decoded(decisions, rules int) (runReply, error) {
	if r.err != nil {
		return runReply{}, r.err
	}
	return decodeRunReply(r.reply, decisions, rules)
}

// ruleOutcomes reads each plan's rules' outcome from phase 1 and returns
// the undos of the rules charged for a request whose rules refused (or
// failed).
func (cl *cluster) ruleOutcomes(plans []plan) []keyEntry {
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
		}
		undos = p.ruleUndos(undos)
		p.rulesUndone = true
	}
	return undos
}

// ruleUndos appends the undos of p's rules that were charged (their result
// came back and admitted).
func (p *plan) ruleUndos(undos []keyEntry) []keyEntry {
	rules := p.c.req.Rules
	for ri := range rules {
		if p.ruleKnown[ri] && p.ruleRes[ri].Admitted == 1 {
			undos = append(undos, undoOf(&rules[ri], &p.ruleRes[ri]))
		}
	}
	return undos
}

// refusedRuleUndos appends the undos of the rules of every request whose
// rules admitted but which was refused in phase 2, or failed with a reply
// that proves its phase-2 run did not run.
func refusedRuleUndos(plans []plan, undos []keyEntry) []keyEntry {
	for pi := range plans {
		p := &plans[pi]
		if len(p.c.req.Rules) == 0 || p.rulesUndone {
			continue
		}
		c := p.c
		if c.err == nil && c.res.Allowed == 1 || c.err != nil && !notRun(c.err) && p.failed() == nil {
			continue // admitted, or its run may have run: the charges stay
		}
		undos = p.ruleUndos(undos)
	}
	return undos
}

// decideHome runs phase 2 and answers every call; it returns the buckets
// to give back (phase 3), by slot.
func (cl *cluster) decideHome(ctx context.Context, plans []plan) map[int][]string {
	order, homeOf := cl.homeRuns(plans)
	var alongs []*call
	for pi := range plans {
		if plans[pi].c.along != nil {
			alongs = append(alongs, plans[pi].c)
		}
	}
	if len(order) > 0 || len(alongs) > 0 {
		cl.run(ctx, order, alongs)
	}
	refunds := map[int][]string{}
	cl.answerHome(plans, order, homeOf, refunds)
	answerShared(plans, refunds)
	return refunds
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
		r.args.addDecision(p.c.req, p.remotes(), p.rulesAt(), 0)
		homeOf[r] = append(homeOf[r], pi)
	}
	e := cl.e
	for _, r := range order {
		r.keys, r.argv, r.run = r.args.build(runOpts{clock: plans[0].c.clock, changes: e.keys.UsageChanges(r.slot),
			window: e.keys.RunWindow(r.slot, e.node), run: e.runs.Add(1), await: e.awaitRestore, leaseUS: e.leaseHold.Microseconds()})
	}
	return order, homeOf
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
// shared tokens of those refused, or not run, to refunds.
func (cl *cluster) answerHome(plans []plan, order []*slotRun, homeOf map[*slotRun][]int, refunds map[int][]string) {
	for _, r := range order {
		rr, err := r.decoded(len(homeOf[r]), 0)
		if err != nil {
			err = cl.e.undecided(r.run, r.sent, err)
		} else {
			cl.e.observe(r.sent, rr.decisions[0].NowUS)
		}
		for i, pi := range homeOf[r] {
			p := &plans[pi]
			if err != nil {
				if notRun(err) { // it did not run: nothing of the key was charged
					p.addRefunds(refunds)
				}
				p.c.answer(err)
				continue
			}
			p.c.res, p.c.run, p.c.rules = rr.decisions[i], r.run, p.ruleRes
			if p.c.res.Allowed != 1 {
				p.addRefunds(refunds)
			}
			p.c.answer(nil)
		}
	}
}

// answerShared answers the calls phase 2 did not decide: those whose
// phase 1 failed, and those without own state (decided by phase 1 alone),
// adding the shared tokens of those refused or failed to refunds.
func answerShared(plans []plan, refunds map[int][]string) {
	for pi := range plans {
		p := &plans[pi]
		if p.c.answered {
			continue
		}
		if err := p.failed(); err != nil {
			p.addRefunds(refunds)
			p.c.answer(err)
			continue
		}
		p.c.res, p.c.rules = p.sharedOnly(), p.ruleRes
		if p.c.res.Allowed != 1 {
			p.addRefunds(refunds)
		}
		p.c.answer(nil)
	}
}

// failed returns the error of a phase-1 run of p, if any.
func (p *plan) failed() error {
	if p.ruleErr != nil {
		return p.ruleErr
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
	case len(p.c.req.Rules) > 0 && !p.rulesOK:
		res.Allowed, res.Refused, res.RetryUS = 0, script.RefusedRules, p.rulesRetry
	}
	return res
}

// addRefunds adds the shared buckets of p's parts that took a token to
// refunds.
func (p *plan) addRefunds(refunds map[int][]string) {
	for _, pt := range p.parts {
		if !pt.taken {
			continue
		}
		for _, bi := range pt.buckets {
			refunds[pt.slot] = append(refunds[pt.slot], p.c.req.Buckets[bi].Key)
		}
	}
}

// giveBack runs phase 3: one op "refund" run per slot of refunds, and the
// rule undos. A failure loses those tokens or charges (the buckets and
// rules under-admit by as many requests); it is logged at warn level.
func (cl *cluster) giveBack(refunds map[int][]string, undos []keyEntry) {
	ctx, cancel := context.WithTimeout(context.Background(), refundTimeout)
	defer cancel()
	order := make([]*slotRun, 0, len(refunds))
	for slot, keys := range refunds {
		var names []string
		idx := map[string]uint16{}
		var spec []byte
		for _, k := range keys {
			rs := script.RefundSpec{Key: index(&names, idx, k), Tokens: 1}
			spec = rs.Append(spec)
		}
		order = append(order, &slotRun{slot: slot, keys: names, argv: []any{script.OpRefund, cl.e.clockArg(), spec}})
	}
	cl.run(ctx, order, nil)
	for _, r := range order {
		if r.err != nil {
			slog.Default().LogAttrs(ctx, slog.LevelWarn, "engine: giving back shared tokens failed; those buckets under-admit until they refill",
				slog.Int("slot", r.slot), slog.Int("tokens", len(refunds[r.slot])), slog.String("error", r.err.Error()))
		}
	}
	if len(undos) == 0 {
		return
	}
	if err := cl.e.runKeyed(ctx, script.OpUnrules, nil, undos); err != nil {
		slog.Default().LogAttrs(ctx, slog.LevelWarn, "engine: undoing rules of refused requests failed; those rules under-admit until their state moves on",
			slog.Int("rules", len(undos)), slog.String("error", err.Error()))
	}
}

// run sends runs (and the along commands of alongs) in one pipeline,
// then sends again, alone, the runs whose reply proves they did not run,
// until they ran, failed otherwise, or migrationWait passed.
func (cl *cluster) run(ctx context.Context, runs []*slotRun, alongs []*call) {
	if err := ctx.Err(); err != nil {
		// Phases share the batch's deadline, and an earlier one may have
		// used it up: nothing is sent, so nothing runs (and alongs, which
		// would only fail, are not queued).
		for _, r := range runs {
			r.err = fmt.Errorf("%w: %w", errNotSent, err)
		}
		return
	}
	pipe := cl.rdb.Pipeline()
	now := time.Now()
	for _, r := range runs {
		r.cmd, r.sent = queueOnce(ctx, pipe, r.keys, r.argv), now
	}
	queueAlong(ctx, pipe, alongs)
	_, _ = pipe.Exec(ctx)
	pending, until := runs, now.Add(migrationWait)
	for attempt := 0; ; attempt++ {
		var again []*slotRun
		var noScript error // a NOSCRIPT reply among them: load the script first
		for _, r := range pending {
			v, err := r.cmd.Result() // a string (op "decide") or an integer (the others)
			r.reply, _ = v.(string)
			r.err = err
			if err != nil && !isReply(err) {
				// a master that does not answer (it died, its replica may
				// take over): follow the slot map at once, not at the next
				// background reload
				cl.rdb.ReloadState(ctx)
			}
			if notRun(r.err) && !errors.Is(r.err, errNotSent) && time.Now().Before(until) {
				again = append(again, r)
				if redisscript.IsNoScript(r.err) {
					noScript = r.err
				}
			}
		}
		if len(again) == 0 {
			return
		}
		// each resend has a deadline of its own: Redis answered
		rctx, cancel := context.WithTimeout(context.Background(), runTimeout)
		if noScript != nil {
			if _, err := redisscript.Reload(rctx, cl.rdb, limitsScript, noScript); err != nil {
				for _, r := range again {
					r.err = err
				}
				cancel()
				return
			}
		} else {
			_ = sleep(rctx, min(time.Duration(attempt+1)*5*time.Millisecond, maxResendWait))
		}
		cl.resent.Add(int64(len(again)))
		pipe = cl.rdb.Pipeline()
		now = time.Now()
		for _, r := range again {
			r.cmd, r.sent = queueOnce(rctx, pipe, r.keys, r.argv), now
		}
		_, _ = pipe.Exec(rctx)
		cancel()
		pending = again
	}
}

// errNotSent marks a run the engine did not send because the batch's
// deadline had passed before it (on Redis Cluster, phase 1 may use it up):
// it did not run, so phase 3 gives back the shared tokens of its requests.
// A deadline that passes while a run is being sent counts as a run that
// may have run (the tokens stay taken: an under-admission only).
var errNotSent = errors.New("not sent: the deadline passed before the run")

// notRun reports whether err is a reply that proves the command did not
// run (or errNotSent): it can be sent again without charging twice.
func notRun(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, errNotSent) {
		return true
	}
	if _, moved := redis.IsMovedError(err); moved {
		return true
	}
	if _, ask := redis.IsAskError(err); ask {
		return true
	}
	return redis.IsTryAgainError(err) || redis.IsClusterDownError(err) || redis.IsLoadingError(err) ||
		redis.IsMasterDownError(err) || redisscript.IsNoScript(err)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
