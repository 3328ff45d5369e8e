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

// parseDecision turns one decision of a reply into a limit.Decision.
func parseDecision(r *script.DecisionReply, req *keyedRequest) limit.Decision {
	d := limit.Decision{Allowed: r.Allowed == 1, Now: time.UnixMicro(r.NowUS).UTC(), Granted: r.Granted}
	if !d.Allowed {
		switch r.Refused {
		case script.RefusedBucket:
			d.Refused = req.Buckets[r.Bucket-1].Level
		case script.RefusedRules:
			d.Refused = limit.LevelRule
		case script.RefusedCustomer:
			d.Refused = limit.LevelCustomer
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
	if i := req.planIndex(); i >= 0 {
		d.Plan = bucketState(&req.Buckets[i], d.Now, r.PlanLeft, r.PlanFullUS)
	}
	if req.Quota != nil {
		start, end := time.Unix(r.QuotaStart, 0).UTC(), time.Unix(r.QuotaEnd, 0).UTC()
		d.Quota = &limit.State{Limit: int64(req.Quota.Limit), Remaining: r.QuotaLeft, Reset: end, Window: end.Sub(start)}
	}
	if c := req.Customer; c != nil && r.CustomerLeft >= 0 {
		start, end := time.Unix(r.CustomerStart, 0).UTC(), time.Unix(r.CustomerEnd, 0).UTC()
		d.Customer = &limit.State{Limit: int64(c.Limit), Remaining: r.CustomerLeft, Reset: end, Window: end.Sub(start)}
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
