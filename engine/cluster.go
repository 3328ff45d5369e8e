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
	"tollgate/limit"
)

// On Redis Cluster a script may only touch keys of one slot. A request's
// own state (its plan or plan-method bucket, quota and usage) shares the
// key's hash tag, so one script decides it atomically; the shared stage
// and account buckets live in slots of their own. A batch is decided in
// three phases (docs/scale.md, "How the limiter runs on Redis Cluster"):
//
//  1. take: for every slot holding shared buckets of the batch, one run
//     of limits.lua (op "decide") takes a token from each of them for
//     each request, in batch order, all or nothing per request and slot;
//     all the runs go in one pipeline, one round trip per node.
//  2. decide: for every slot holding requests' own state, one run
//     decides them knowing the outcome of their shared buckets (packed
//     as buckets "decided in another slot", in their place in the check
//     order), charging the key's own limits only when every shared
//     bucket admitted; again one round trip per node, with the callers'
//     along commands (cache reads) in the same pipeline.
//  3. give back: tokens taken in phase 1 for a request that was refused
//     (by its own limits, or by another shared bucket) go back, one run
//     of op "refund" per slot, after the callers have their answers.
//
// So a shared bucket is never over-admitted (a take is atomic in its
// slot) and never charged for a refused request; it may under-admit
// while a give-back is in flight, or for good when a give-back is lost
// (the node died, Redis did not answer): tokens, never quota, and never
// more than the requests refused meanwhile. A request without a key (no
// own state) is decided from phase 1 alone.
//
// A run that charges is sent once (onceCmd). Replies that prove it did
// not run are sent again within the call's deadline: MOVED and ASK (go-redis
// follows those itself, up to MaxRedirects), TRYAGAIN (a multi-key run
// while its slot migrates), CLUSTERDOWN, LOADING, MASTERDOWN and NOSCRIPT
// (after loading the script). Any other failure fails the requests of
// that run; a phase-2 run that may have run (a network error, a timeout
// while it was sent) keeps the shared tokens its requests took, one never
// sent (phase 1 used up the deadline: errNotSent) gives them back.

// cluster decides batches on a Redis Cluster.
type cluster struct {
	e       *Engine
	rdb     *redis.ClusterClient
	refunds sync.WaitGroup // give-backs in flight (tests wait for them: settle)
	resent  atomic.Int64   // runs sent again after a reply proved they did not run
}

func newCluster(e *Engine, rdb *redis.ClusterClient) *cluster { return &cluster{e: e, rdb: rdb} }

// refundTimeout bounds the give-back of phase 3, which runs after the
// callers were answered.
const refundTimeout = time.Second

// maxResendWait caps the wait before a run whose reply proved it did not
// run is sent again (5 ms more per attempt up to this); it is sent again
// until it runs, fails otherwise, or the deadline of its phase ends
// (every phase has one: the batch's, or refundTimeout).
const maxResendWait = 50 * time.Millisecond

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
	// the request's rules (cluster_rules.go): their results, whether they
	// admit and the retry of the first that refused, the error of their
	// phase-1 run, and whether their charges were undone already
	ruleRes     []ruleResult
	rulesOK     bool
	rulesRetry  int64
	ruleErr     error
	rulesUndone bool
}

// slotRun is one run of limits.lua in one slot: the script's keys and
// args and, when done, its reply.
type slotRun struct {
	slot  int
	args  *batchArgs
	keys  []string
	argv  []any
	cmd   *redis.Cmd
	reply string
	err   error
}

// decide decides the live calls of one batch (see the comment above).
func (cl *cluster) decide(ctx context.Context, live []*call) {
	// Counted before any caller is answered, so that settle, called after
	// an answer, waits for this batch's give-back.
	cl.refunds.Add(1)
	plans := make([]plan, len(live))
	for i, c := range live {
		plans[i] = split(c)
	}
	ruleRuns := cl.ruleRuns(plans)
	cl.take(ctx, plans, slotRuns(ruleRuns))
	undos := cl.ruleOutcomes(plans, ruleRuns)
	refunds := cl.decideHome(ctx, plans)
	undos = refusedRuleUndos(plans, undos)
	if len(refunds) == 0 && len(undos) == 0 {
		cl.refunds.Done()
		return
	}
	go func() {
		defer cl.refunds.Done()
		if len(refunds) > 0 {
			cl.giveBack(refunds)
		}
		if len(undos) > 0 {
			cl.undoRules(undos)
		}
	}()
}

// split assigns each bucket of c's request to its home slot (the slot of
// the quota, plan bucket or usage hash, which share the key's hash tag)
// or to a part of another slot.
func split(c *call) plan {
	req := c.req
	p := plan{c: c, home: -1}
	switch {
	case req.Quota != nil:
		p.home = keyspace.Slot(req.Quota.Key)
	case req.planIndex() >= 0:
		p.home = keyspace.Slot(req.Buckets[req.planIndex()].Key)
	case req.UsageKey != "":
		p.home = keyspace.Slot(req.UsageKey)
	}
	for i := range req.Buckets {
		if req.Buckets[i].Level == limit.LevelRule {
			continue // the rules' outcome, from their own runs (cluster_rules.go)
		}
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
	return p
}

// take runs phase 1: every part of every plan, one run per slot, in one
// pipeline with the runs extra.
func (cl *cluster) take(ctx context.Context, plans []plan, extra []*slotRun) {
	runs := map[int]*slotRun{}
	var order []*slotRun
	type ref struct{ plan, part, idx int } // the part that is decision idx of a run
	refsOf := map[*slotRun][]ref{}
	for pi := range plans {
		for qi := range plans[pi].parts {
			pt := &plans[pi].parts[qi]
			r := runs[pt.slot]
			if r == nil {
				r = &slotRun{slot: pt.slot, args: newBatchArgs()}
				runs[pt.slot] = r
				order = append(order, r)
			}
			sub := keyedRequest{Buckets: make([]keyedBucket, len(pt.buckets))}
			for k, bi := range pt.buckets {
				sub.Buckets[k] = plans[pi].c.req.Buckets[bi]
			}
			r.args.add(&sub, nil)
			refsOf[r] = append(refsOf[r], ref{pi, qi, len(refsOf[r])})
		}
	}
	if len(order) == 0 && len(extra) == 0 {
		return
	}
	clock := plans[0].c.clock
	for _, r := range order {
		r.keys, r.argv = r.args.keysAndArgs(clock, len(refsOf[r]))
	}
	cl.run(ctx, append(order, extra...), nil)
	for _, r := range order {
		for _, rf := range refsOf[r] {
			pt := &plans[rf.plan].parts[rf.part]
			if err := r.result(len(refsOf[r])); err != nil {
				pt.err = err
				continue
			}
			res := decodeReply(r.reply, rf.idx)
			pt.now = res[rNow]
			pt.taken = res[rAllowed] == 1
			if !pt.taken {
				pt.refused = pt.buckets[res[rRefused]-1]
				pt.retryUS = res[rRetry]
			}
		}
	}
}

// result checks r's reply for decisions decisions.
func (r *slotRun) result(decisions int) error {
	if r.err != nil {
		return r.err
	}
	if len(r.reply) != decisions*replySize {
		return fmt.Errorf("reply has %d bytes, want %d", len(r.reply), decisions*replySize)
	}
	return nil
}

// decideHome runs phase 2 and answers every call; it returns the buckets
// to give back (phase 3), by slot.
func (cl *cluster) decideHome(ctx context.Context, plans []plan) map[int][]refund {
	order, homeOf := homeRuns(plans)
	var alongs []*call
	for pi := range plans {
		if plans[pi].c.along != nil {
			alongs = append(alongs, plans[pi].c)
		}
	}
	if len(order) > 0 || len(alongs) > 0 {
		clock := plans[0].c.clock
		for _, r := range order {
			r.args.changes, r.args.await = cl.e.keys.UsageChanges(r.slot), cl.e.awaitRestore
			r.keys, r.argv = r.args.keysAndArgs(clock, len(homeOf[r]))
		}
		cl.run(ctx, order, alongs)
	}
	refunds := map[int][]refund{}
	answerHome(plans, order, homeOf, refunds)
	answerShared(plans, refunds)
	return refunds
}

// homeRuns groups the plans whose own state is to be decided (they have
// one, and phase 1 did not fail) into one run per home slot; homeOf lists
// each run's plans, in the order of its decisions.
func homeRuns(plans []plan) (order []*slotRun, homeOf map[*slotRun][]int) {
	runs := map[int]*slotRun{}
	homeOf = map[*slotRun][]int{}
	for pi := range plans {
		p := &plans[pi]
		if p.home < 0 || p.failed() != nil {
			continue
		}
		r := runs[p.home]
		if r == nil {
			r = &slotRun{slot: p.home, args: newBatchArgs()}
			runs[p.home] = r
			order = append(order, r)
		}
		r.args.add(p.c.req, p.remotes())
		homeOf[r] = append(homeOf[r], pi)
	}
	return order, homeOf
}

// answerHome answers the calls phase 2 decided (or failed), adding the
// shared tokens of those refused, or not run, to refunds.
func answerHome(plans []plan, order []*slotRun, homeOf map[*slotRun][]int, refunds map[int][]refund) {
	for _, r := range order {
		err := r.result(len(homeOf[r]))
		for i, pi := range homeOf[r] {
			p := &plans[pi]
			if err != nil {
				if notRun(err) { // it did not run: nothing of the key was charged
					p.addRefunds(refunds)
				}
				p.c.answer(nil, err)
				continue
			}
			res := decodeReply(r.reply, i)
			if res[rAllowed] != 1 {
				p.addRefunds(refunds)
			}
			p.c.answer(&res, nil)
		}
	}
}

// answerShared answers the calls phase 2 did not decide: those whose
// phase 1 failed, and those without own state (decided by phase 1 alone),
// adding the shared tokens of those refused or failed to refunds.
func answerShared(plans []plan, refunds map[int][]refund) {
	for pi := range plans {
		p := &plans[pi]
		if p.c.answered {
			continue
		}
		if err := p.failed(); err != nil {
			p.addRefunds(refunds)
			p.c.answer(nil, err)
			continue
		}
		res := p.sharedOnly()
		if res[rAllowed] != 1 {
			p.addRefunds(refunds)
		}
		p.c.answer(&res, nil)
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
	rem := p.c.req.ruleRemotes(p.rulesOK, p.rulesRetry)
	if len(p.parts) == 0 {
		return rem
	}
	if rem == nil {
		rem = make([]remote, len(p.c.req.Buckets))
	}
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
// when every part took its tokens, else refused by the first refusing
// bucket in check order.
func (p *plan) sharedOnly() [rLen]int64 {
	var res [rLen]int64
	res[rAllowed], res[rPlanRemaining], res[rPlanFull], res[rQuotaRemaining] = 1, -1, -1, -1
	first := -1
	for _, pt := range p.parts {
		res[rNow] = max(res[rNow], pt.now)
		if !pt.taken && (first < 0 || pt.refused < first) {
			first, res[rRetry] = pt.refused, pt.retryUS
		}
	}
	if rb := p.c.req.ruleBucket(); rb >= 0 && !p.rulesOK && (first < 0 || rb < first) {
		first, res[rRetry] = rb, p.rulesRetry
	}
	if res[rNow] == 0 { // rules alone, no bucket: their runs report no time
		res[rNow] = time.Now().UnixMicro()
	}
	if first >= 0 {
		res[rAllowed], res[rRefused] = 0, int64(first+1)
	}
	return res
}

// refund is one bucket to give one token back to: the key of its state.
type refund struct {
	key string
}

// addRefunds adds the buckets of p's parts that took a token to refunds.
func (p *plan) addRefunds(refunds map[int][]refund) {
	for _, pt := range p.parts {
		if !pt.taken {
			continue
		}
		for _, bi := range pt.buckets {
			refunds[pt.slot] = append(refunds[pt.slot], refund{key: p.c.req.Buckets[bi].Key})
		}
	}
}

// giveBack runs phase 3: one op "refund" run per slot. A failure loses
// those tokens (the shared buckets under-admit by as many requests); it
// is logged at warn level.
func (cl *cluster) giveBack(refunds map[int][]refund) {
	ctx, cancel := context.WithTimeout(context.Background(), refundTimeout)
	defer cancel()
	order := make([]*slotRun, 0, len(refunds))
	for slot, rs := range refunds {
		a := newBatchArgs()
		for _, r := range rs {
			a.addRefund(r.key, 1)
		}
		r := &slotRun{slot: slot, args: a}
		r.keys, r.argv = a.refundArgs(cl.e.clockArg())
		order = append(order, r)
	}
	cl.run(ctx, order, nil)
	for _, r := range order {
		if r.err != nil {
			slog.Default().LogAttrs(ctx, slog.LevelWarn, "engine: giving back shared tokens failed; those buckets under-admit until they refill",
				slog.Int("slot", r.slot), slog.Int("tokens", len(refunds[r.slot])), slog.String("error", r.err.Error()))
		}
	}
}

// run sends runs (and the along commands of alongs) in one pipeline,
// then sends again, alone, the runs whose reply proves they did not run,
// until they ran, failed otherwise, or ctx ends.
func (cl *cluster) run(ctx context.Context, runs []*slotRun, alongs []*call) {
	if err := ctx.Err(); err != nil {
		// Phases share the batch's deadline, and an earlier one may have
		// used it up: nothing is sent, so nothing runs (and alongs, which
		// would only fail, are not called).
		for _, r := range runs {
			r.err = fmt.Errorf("%w: %w", errNotSent, err)
		}
		return
	}
	pipe := cl.rdb.Pipeline()
	for _, r := range runs {
		r.cmd = queueOnce(ctx, pipe, r.keys, r.argv)
	}
	for _, c := range alongs {
		c.along(ctx, pipe)
	}
	_, _ = pipe.Exec(ctx)
	pending := runs
	for attempt := 0; ; attempt++ {
		var again []*slotRun
		var noScript error // a NOSCRIPT reply among them: load the script first
		for _, r := range pending {
			v, err := r.cmd.Result() // a string (op "decide") or an integer (op "refund")
			r.reply, _ = v.(string)
			r.err = err
			if notRun(r.err) && ctx.Err() == nil {
				again = append(again, r)
				if redisscript.IsNoScript(r.err) {
					noScript = r.err
				}
			}
		}
		if len(again) == 0 {
			return
		}
		if noScript != nil {
			if _, err := redisscript.Reload(ctx, cl.rdb, limitsScript, noScript); err != nil {
				for _, r := range again {
					r.err = err
				}
				return
			}
		} else if err := sleep(ctx, min(time.Duration(attempt+1)*5*time.Millisecond, maxResendWait)); err != nil {
			return
		}
		cl.resent.Add(int64(len(again)))
		pipe = cl.rdb.Pipeline()
		for _, r := range again {
			r.cmd = queueOnce(ctx, pipe, r.keys, r.argv)
		}
		_, _ = pipe.Exec(ctx)
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
