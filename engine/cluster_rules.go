package engine

import (
	"context"
	"fmt"
	"log/slog"

	"tollgate/keyspace"
)

// Rules on Redis Cluster (rules.go): each (rule, value) state has a slot
// of its own, so a request's rules are taken in phase 1, one decision of
// op "rules" per rule in the run of its slot, beside the shared buckets.
// A request's rules admit when every rule that is not shadow admitted;
// then phase 2 sees them as its rule bucket, admitted. When one refused,
// the others that were charged are undone at once (phase 3), and phase 2
// sees the rule bucket refused with that rule's retry. The rules of a
// request refused in phase 2 (or failed in a way that proves nothing ran)
// are undone in phase 3 too, after the callers were answered, as shared
// tokens are given back: a rule may under-admit while an undo is in
// flight, never over-admit.

// ruleRef is the decision of one rule of one plan in a run of op "rules".
type ruleRef struct{ plan, rule int }

// ruleRun is one run of op "rules" in one slot.
type ruleRun struct {
	*slotRun
	args *ruleArgs
	refs []ruleRef
}

// ruleRuns builds phase 1's op "rules" runs for the rules of plans, one
// per slot.
func (cl *cluster) ruleRuns(plans []plan) []*ruleRun {
	bySlot := map[int]*ruleRun{}
	var order []*ruleRun
	for pi := range plans {
		rules := plans[pi].c.req.Rules
		plans[pi].ruleRes = make([]ruleResult, len(rules))
		for ri := range rules {
			slot := keyspace.Slot(rules[ri].Key)
			r := bySlot[slot]
			if r == nil {
				r = &ruleRun{slotRun: &slotRun{slot: slot}, args: newRuleArgs()}
				bySlot[slot] = r
				order = append(order, r)
			}
			r.args.decision(rules[ri:ri+1], -1, cl.e.holds.leaseUS)
			r.refs = append(r.refs, ruleRef{pi, ri})
		}
	}
	if len(order) == 0 {
		return nil
	}
	clock := plans[0].c.clock
	for _, r := range order {
		r.keys, r.argv = r.args.keys, []any{opRules, clock, len(r.refs), r.args.spec}
	}
	return order
}

// slotRuns returns the slot runs of runs (to send them in phase 1's
// pipeline).
func slotRuns(runs []*ruleRun) []*slotRun {
	out := make([]*slotRun, len(runs))
	for i, r := range runs {
		out[i] = r.slotRun
	}
	return out
}

// ruleOutcomes reads phase 1's rule runs into each plan (its results, the
// rules' outcome, or the error that fails the request) and returns the
// undos of the rules charged for a request whose rules refused (or
// failed).
func (cl *cluster) ruleOutcomes(plans []plan, runs []*ruleRun) []keyEntry {
	known := map[ruleRef]bool{}
	for _, r := range runs {
		err := r.resultOf(len(r.refs), ruleResultSize)
		for i, ref := range r.refs {
			p := &plans[ref.plan]
			if err != nil {
				p.ruleErr = err
				continue
			}
			p.ruleRes[ref.rule] = decodeRuleResult(r.reply, i*ruleResultSize)
			known[ref] = true
		}
	}
	var undos []keyEntry
	for pi := range plans {
		p := &plans[pi]
		if len(p.c.req.Rules) == 0 {
			continue
		}
		if p.ruleErr == nil {
			p.rulesOK, p.rulesRetry = ruleOutcome(p.c.req.Rules, p.ruleRes)
			p.c.ruleRes = p.ruleRes
			if p.rulesOK {
				continue
			}
		}
		undos = p.ruleUndos(undos, func(ri int) bool { return known[ruleRef{pi, ri}] })
		p.rulesUndone = true
	}
	return undos
}

// ruleUndos appends the undos of p's rules that were charged (their result
// is known, when known says so, and admitted).
func (p *plan) ruleUndos(undos []keyEntry, known func(ri int) bool) []keyEntry {
	rules := p.c.req.Rules
	for ri := range rules {
		if !known(ri) || p.ruleRes[ri][0] != 1 {
			continue
		}
		r, res := &rules[ri], p.ruleRes[ri]
		undos = append(undos, keyEntry{key: r.Key, pack: func(s []byte, ki uint16) []byte { return appendUndo(s, r, ki, &res) }})
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
		if c.err == nil && c.res[rAllowed] == 1 || c.err != nil && !notRun(c.err) && p.failed() == nil {
			continue // admitted, or its run may have run: the charges stay
		}
		undos = p.ruleUndos(undos, func(int) bool { return true })
	}
	return undos
}

// undoRules runs phase 3's op "unrules" for undos (one run per slot); a
// failure is logged: those rules under-admit until their state moves on.
func (cl *cluster) undoRules(undos []keyEntry) {
	ctx, cancel := context.WithTimeout(context.Background(), refundTimeout)
	defer cancel()
	err := cl.e.runKeyed(ctx, func(spec []byte) []any { return []any{opUnrules, cl.e.clockArg(), spec} }, undos)
	if err != nil {
		slog.Default().LogAttrs(ctx, slog.LevelWarn, "engine: undoing rules of refused requests failed; those rules under-admit until their state moves on",
			slog.Int("rules", len(undos)), slog.String("error", err.Error()))
	}
}

// resultOf checks r's reply for n results of size bytes each.
func (r *slotRun) resultOf(n, size int) error {
	if r.err != nil {
		return r.err
	}
	if len(r.reply) != n*size {
		return fmt.Errorf("reply has %d bytes, want %d", len(r.reply), n*size)
	}
	return nil
}
