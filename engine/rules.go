package engine

import (
	"context"
	"log/slog"

	"tollgate/limit"
	"tollgate/script"
)

// Rate-limit rules (docs/rules.md) are one level of a request's decision,
// after its buckets and before its quota, all or nothing with them
// (rules.lua):
//
//   - on one primary, a decision's rules go in the batch's one atomic run;
//   - on Redis Cluster each (rule, value) has a slot of its own, so rules
//     are taken in phase 1 beside the shared buckets (decisions of rules
//     alone), their outcome goes to phase 2 as the decision's rules
//     decided elsewhere, and the rules of a refused request are undone in
//     phase 3 (op "unrules"), as shared tokens are given back (cluster.go).
//
// A CONCURRENCY rule's request holds a member of the rule's sorted set
// until Decision.Release; the member's lease is renewed while it is held
// (holds.go), so a dead node's requests leave within the lease.

// undoOf returns the undo (op "unrules") of rule r's charge, whose result
// was res.
func undoOf(r *keyedRule, res *script.RuleReply) keyEntry {
	u := script.UndoSpec{Algorithm: uint8(r.Rule.Algorithm)}
	switch r.Rule.Algorithm {
	case limit.SlidingWindow, limit.FixedWindow:
		u.WindowUS, u.Charged = windowUS(r.Rule), res.Aux
	case limit.CalendarQuota:
		u.Charged = res.Aux
	case limit.Concurrency:
		u.Node, u.Seq = r.hold.node, r.hold.seq
	case limit.LeakyBucket:
		u.Rate = r.Rule.RateLimit
	}
	return keyEntry{key: r.Key, pack: func(s []byte, ki uint16) []byte {
		u.Key = ki
		return u.Append(s)
	}}
}

// windowUS is the window of a FIXED_WINDOW or SLIDING_WINDOW rule as the
// script counts it: whole µs, at least 1.
func windowUS(r *limit.Rule) int64 { return max(r.Window.Microseconds(), 1) }

// rulesOutcome returns whether the rules' results admit the request (every
// rule that is not shadow admitted) and the retry of the first that
// refused.
func rulesOutcome(rules []keyedRule, res []script.RuleReply) (bool, int64) {
	for i := range rules {
		if !rules[i].Rule.Shadow && res[i].Admitted != 1 {
			return false, res[i].RetryUS
		}
	}
	return true, 0
}

// ruleDecision adds the rules' outcomes to d (Rules, RefusedRule, Delay)
// and, when d admitted the request and it holds CONCURRENCY members,
// registers them and sets d.Release.
func (h *holds) ruleDecision(d *limit.Decision, c *call) {
	rules := c.req.Rules
	if len(rules) == 0 || len(c.rules) != len(rules) {
		return
	}
	d.Rules = make([]limit.RuleOutcome, len(rules))
	refused := -1
	var held []hold
	var turns []keyEntry
	for i := range rules {
		r, res := rules[i].Rule, &c.rules[i]
		d.Rules[i] = r.Outcome(limit.RuleResult{Admitted: res.Admitted == 1, RetryUS: res.RetryUS, Remaining: res.Remaining, ResetUS: res.ResetUS, Aux: res.Aux}, d.Now)
		if refused < 0 && !r.Shadow && res.Admitted != 1 {
			refused = i
		}
		if !d.Allowed || res.Admitted != 1 {
			continue
		}
		if r.Algorithm == limit.LeakyBucket {
			if !r.Shadow {
				d.Delay = max(d.Delay, d.Rules[i].Delay)
			}
			turns = append(turns, undoOf(&rules[i], res))
		}
		if r.Algorithm == limit.Concurrency {
			held = append(held, rules[i].hold)
		}
	}
	if d.Refused == limit.LevelRule {
		d.RefusedRule = max(refused, 0)
	}
	if len(held) > 0 {
		d.Release = h.add(held)
	}
	if d.Delay > 0 {
		d.GiveBack = func() { h.giveBackTurns(turns) }
	}
}

// giveBackTurns gives back the LEAKY_BUCKET turns of a request that will
// not go on (op "unrules": each rule's queue ends one turn sooner); a
// failure is logged: those rules then under-admit until their queues
// drain.
func (h *holds) giveBackTurns(turns []keyEntry) {
	ctx, cancel := context.WithTimeout(context.Background(), refundTimeout)
	defer cancel()
	if err := h.r.runKeyed(ctx, script.OpUnrules, nil, turns); err != nil {
		slog.Default().LogAttrs(ctx, slog.LevelWarn, "engine: giving back the turns of a request that left failed; those rules under-admit until their queues drain",
			slog.Int("rules", len(turns)), slog.String("error", err.Error()))
	}
}
