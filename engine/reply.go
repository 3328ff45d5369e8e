package engine

import (
	"errors"
	"fmt"
	"time"

	"tollgate/limit"
	"tollgate/script"
)

// errDuplicateRun is the error of the calls of a run that its run window
// says ran already (a charge of its requests counted them, or a copy of it
// ran): it did nothing.
var errDuplicateRun = errors.New("the run ran already: nothing was done")

// runReply is a decoded reply of op "decide".
type runReply struct {
	head      script.DecideReply
	decisions []script.DecisionReply
	rules     []script.RuleReply // every decision's, in order
}

// decodeRunReply decodes reply, the reply of a run of decisions decisions
// with rules rules in all.
func decodeRunReply(reply string, decisions, rules int) (runReply, error) {
	var r runReply
	s, err := r.head.Decode(reply)
	if err != nil {
		return r, err
	}
	if r.head.Status == script.RunDuplicate {
		return r, errDuplicateRun
	}
	if want := decisions*script.DecisionReplySize + rules*script.RuleReplySize; len(s) != want {
		return r, fmt.Errorf("reply has %d bytes after its head, want %d", len(s), want)
	}
	r.decisions = make([]script.DecisionReply, decisions)
	for i := range r.decisions {
		s, _ = r.decisions[i].Decode(s)
	}
	r.rules = make([]script.RuleReply, rules)
	for i := range r.rules {
		s, _ = r.rules[i].Decode(s)
	}
	return r, nil
}

// answerRun answers the calls of live, decided in that order by one run
// numbered run (0: without a run window) sent at the node's time sent,
// from its reply or its error.
func (e *Engine) answerRun(live []*call, run int64, sent time.Time, reply string, err error) {
	var rr runReply
	if err == nil {
		rules := 0
		for _, c := range live {
			rules += len(c.req.Rules)
		}
		rr, err = decodeRunReply(reply, len(live), rules)
	}
	if err != nil {
		err = e.undecided(run, sent, err)
		for _, c := range live {
			c.answer(err)
		}
		return
	}
	e.observe(sent, rr.decisions[0].NowUS)
	rules := rr.rules
	for i, c := range live {
		c.res, c.run = rr.decisions[i], run
		c.rules, rules = rules[:len(c.req.Rules):len(c.req.Rules)], rules[len(c.req.Rules):]
		c.answer(nil)
	}
}

// undecided wraps err, the failure of run numbered run sent at sent, as a
// limit.UndecidedError: the run is named unless Redis replied (then it did
// not run).
func (e *Engine) undecided(run int64, sent time.Time, err error) error {
	if isReply(err) && !errors.Is(err, errDuplicateRun) {
		run = 0
	}
	return &limit.UndecidedError{Run: run, At: e.redisNow(sent), Err: err}
}

// result returns the decision of answered call c.
func (e *Engine) result(c *call) (limit.Decision, error) {
	if c.err != nil {
		return limit.Decision{}, fmt.Errorf("engine: decide: %w", c.err)
	}
	if c.res.Refused == script.RefusedUnrestored {
		return limit.Decision{}, fmt.Errorf("engine: decide: %w", limit.ErrNotRestored)
	}
	d := parseDecision(&c.res, c.req)
	e.ruleDecision(&d, c)
	return d, nil
}

// parseDecision turns one decision of a reply into a limit.Decision.
func parseDecision(r *script.DecisionReply, req *keyedRequest) limit.Decision {
	d := limit.Decision{Allowed: r.Allowed == 1, Now: time.UnixMicro(r.NowUS).UTC(), Granted: r.Granted}
	if !d.Allowed {
		switch r.Refused {
		case script.RefusedBucket:
			d.Refused = req.Buckets[r.Bucket-1].Level
		case script.RefusedRules:
			d.Refused = limit.LevelRule
		default:
			d.Refused = limit.LevelQuota
		}
		if r.RetryUS < 0 {
			d.NoRetry = true
		} else {
			d.RetryAfter = time.Duration(r.RetryUS) * time.Microsecond
		}
		d.LeaseWait = time.Duration(r.LeaseWaitUS) * time.Microsecond
	}
	if plan := req.planIndex(); plan >= 0 {
		d.Plan = bucketState(&req.Buckets[plan], d.Now, r.PlanLeft, r.PlanFullUS)
	}
	if req.Quota != nil {
		start, end := time.Unix(r.QuotaStart, 0).UTC(), time.Unix(r.QuotaEnd, 0).UTC()
		d.Quota = &limit.State{Limit: int64(req.Quota.Limit), Remaining: r.QuotaLeft, Reset: end, Window: end.Sub(start)}
	}
	return d
}

// bucketState builds the header state of a bucket from the tokens left and
// the microseconds until it is full (-1: never, at rate 0).
func bucketState(b *keyedBucket, now time.Time, remaining, fullUS int64) *limit.State {
	s := &limit.State{Limit: int64(b.BurstLimit), Remaining: remaining}
	if fullUS >= 0 {
		s.Reset = now.Add(time.Duration(fullUS) * time.Microsecond)
	}
	if b.RateLimit > 0 {
		s.Window = time.Duration(float64(b.BurstLimit) / b.RateLimit * float64(time.Second))
	}
	return s
}
