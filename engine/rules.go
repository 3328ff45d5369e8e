package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"time"

	"tollgate/limit"
)

// Rate-limit rules (docs/rules.md) are decided by rules.lua, inserted into
// the limits script (scripts.go). A request's rules are decided with its
// buckets and quota, all or nothing:
//
//   - on one primary, one run of op "decide_rules" takes the rules of every
//     decision of a batch, tells op "decide" the outcome through a bucket
//     "decided in another slot" (the request's rule bucket, after its real
//     buckets), and undoes the rules of every decision that was refused,
//     all in the batch's one atomic run;
//   - on Redis Cluster each (rule, value) has a slot of its own, so rules
//     are taken in phase 1 beside the shared buckets (op "rules"), their
//     outcome goes to phase 2 through the same rule bucket, and the rules
//     of a refused request are undone in phase 3 (op "unrules"), as shared
//     tokens are given back (cluster.go).
//
// A CONCURRENCY rule's request holds a member of the rule's sorted set
// until Decision.Release; the member's lease is renewed while it is held
// (holds.go), so a dead node's requests leave within the lease.

// ruleKinds are the keyspace kinds of each algorithm's state.
var ruleKinds = [...]string{limit.TokenBucket: "tb", limit.SlidingWindow: "sw", limit.FixedWindow: "fw",
	limit.Concurrency: "cc", limit.LeakyBucket: "lb", limit.CalendarQuota: "qt"}

// keyedRule is a limit.Rule with the Redis key of its state and, for a
// CONCURRENCY rule, the member the request holds.
type keyedRule struct {
	Key  string
	Rule *limit.Rule
	hold hold
}

// ruleResultSize is the bytes of one rule's result in a reply ('<i8' x 5).
const ruleResultSize = 5 * 8

// ruleResult is one rule's result: admitted, retry (µs), remaining,
// reset (µs), aux (µs: the delay, or the window counted in).
type ruleResult [5]int64

// resolveRules names the state of every rule of req into kr and, when one
// of them enforces, adds kr's rule bucket (limits.lua sees the rules'
// outcome as that bucket, decided elsewhere, after the real buckets).
func (e *Engine) resolveRules(req *limit.Request, kr *keyedRequest) {
	kr.Rules = make([]keyedRule, len(req.Rules))
	enforcing := false
	for i := range req.Rules {
		r := &req.Rules[i]
		kr.Rules[i] = keyedRule{Key: e.keys.RuleState(r.Counter, r.Value, ruleKind(r.Algorithm)), Rule: r}
		if r.Algorithm == limit.Concurrency {
			kr.Rules[i].hold = e.holds.next(kr.Rules[i].Key)
		}
		enforcing = enforcing || !r.Shadow
	}
	if enforcing {
		kr.Buckets = append(kr.Buckets, keyedBucket{Level: limit.LevelRule})
	}
}

func ruleKind(a limit.Algorithm) string {
	if int(a) < len(ruleKinds) && ruleKinds[a] != "" {
		return ruleKinds[a]
	}
	return "x"
}

// ruleBucket returns the index of req's rule bucket, or -1.
func (r *keyedRequest) ruleBucket() int {
	if n := len(r.Buckets); n > 0 && r.Buckets[n-1].Level == limit.LevelRule {
		return n - 1
	}
	return -1
}

// bucketSpecSize is the bytes of one bucket in op "decide"'s packed
// decisions ('<Hdi4').
const bucketSpecSize = 2 + 8 + 4

// appendRule packs rule r as a rule spec of rules.lua with key index ki
// and the concurrency lease leaseUS.
func appendRule(s []byte, r *keyedRule, ki uint16, leaseUS int64) []byte {
	le := binary.LittleEndian
	rl := r.Rule
	flags := byte(0)
	if rl.Shadow {
		flags = 1
	}
	s = append(s, byte(rl.Algorithm), flags)
	s = le.AppendUint16(s, ki)
	switch rl.Algorithm {
	case limit.TokenBucket:
		s = le.AppendUint64(s, math.Float64bits(rl.RateLimit))
		s = le.AppendUint32(s, uint32(max(rl.BurstLimit, 0)))
	case limit.SlidingWindow, limit.FixedWindow:
		s = le.AppendUint32(s, uint32(max(rl.Limit, 0)))
		s = le.AppendUint64(s, uint64(max(rl.Window.Microseconds(), 1)))
	case limit.Concurrency:
		s = le.AppendUint32(s, uint32(max(rl.Limit, 0)))
		s = le.AppendUint64(s, uint64(leaseUS))
		s = le.AppendUint32(s, r.hold.node)
		s = le.AppendUint32(s, r.hold.seq)
	case limit.CalendarQuota:
		s = le.AppendUint32(s, uint32(max(rl.Limit, 0)))
		s = append(s, periodCode(rl.Period), uint8(min(max(rl.Offset, 0), math.MaxUint8)))
	default: // LeakyBucket
		s = le.AppendUint64(s, math.Float64bits(rl.RateLimit))
		s = le.AppendUint32(s, uint32(max(rl.BurstLimit, 0)))
		s = le.AppendUint64(s, uint64(max(rl.MaxDelay.Microseconds(), 0)))
	}
	return s
}

// appendUndo packs the undo of rule r (op "unrules") with key index ki;
// res is the result of its take.
func appendUndo(s []byte, r *keyedRule, ki uint16, res *ruleResult) []byte {
	le := binary.LittleEndian
	s = append(s, byte(r.Rule.Algorithm), 0)
	s = le.AppendUint16(s, ki)
	switch r.Rule.Algorithm {
	case limit.SlidingWindow, limit.FixedWindow:
		s = le.AppendUint64(s, uint64(max(r.Rule.Window.Microseconds(), 1)))
		s = le.AppendUint64(s, uint64(res[4]))
	case limit.CalendarQuota:
		s = le.AppendUint64(s, uint64(res[4]))
	case limit.Concurrency:
		s = le.AppendUint32(s, r.hold.node)
		s = le.AppendUint32(s, r.hold.seq)
	case limit.LeakyBucket:
		s = le.AppendUint64(s, math.Float64bits(r.Rule.RateLimit))
	}
	return s
}

// maxRules is the most rules one request may have (the script packs the
// count in a byte); a stage has at most 100.
const maxRules = math.MaxUint8

// checkRules refuses a request whose rules cannot be packed: too many, an
// unknown algorithm, or a LEAKY_BUCKET rule without a rate above 0 (the
// admin API allows none of these).
func checkRules(req *keyedRequest) error {
	if len(req.Rules) > maxRules {
		return fmt.Errorf("%d rules, at most %d", len(req.Rules), maxRules)
	}
	for i := range req.Rules {
		r := req.Rules[i].Rule
		if r.Algorithm < limit.TokenBucket || r.Algorithm > limit.CalendarQuota {
			return fmt.Errorf("rule %q: unknown algorithm %d", r.Name, r.Algorithm)
		}
		if r.Algorithm == limit.LeakyBucket && !(r.RateLimit > 0) {
			return fmt.Errorf("rule %q: LEAKY_BUCKET needs a rate above 0", r.Name)
		}
	}
	return nil
}

// ruleArgs lays out the rule states and rule specs of one op
// "decide_rules" or op "rules" run.
type ruleArgs struct {
	keys []string
	idx  map[string]uint16
	spec []byte
}

func newRuleArgs() *ruleArgs { return &ruleArgs{idx: map[string]uint16{}} }

// decision packs one decision's rules, with the offset of its rule bucket
// in the decide spec (placeholder; -1: none).
func (ra *ruleArgs) decision(rules []keyedRule, placeholder int, leaseUS int64) {
	le := binary.LittleEndian
	s := le.AppendUint32(ra.spec, uint32(placeholder+1))
	s = append(s, byte(len(rules)))
	for i := range rules {
		s = appendRule(s, &rules[i], index(&ra.keys, ra.idx, rules[i].Key), leaseUS)
	}
	ra.spec = s
}

// packBatch adds every call of live to a (op "decide") and returns the
// run's KEYS and ARGV, and whether it is a run of op "decide_rules" (one
// of the calls has rules): then each call's rule bucket is packed as a
// placeholder, and the rule states and specs follow op "decide"'s.
func (e *Engine) packBatch(a *batchArgs, live []*call) ([]string, []any, bool) {
	var ra *ruleArgs
	for _, c := range live {
		if len(c.req.Rules) > 0 {
			ra = newRuleArgs()
			break
		}
	}
	for _, c := range live {
		rem := c.req.ruleRemotes(true, 0)
		a.add(c.req, rem)
		if ra != nil {
			at := -1
			if rem != nil { // the rule bucket is the last one packed
				at = len(a.spec) - bucketSpecSize
			}
			ra.decision(c.req.Rules, at, e.holds.leaseUS)
		}
	}
	keys, args := a.keysAndArgs(live[0].clock, len(live))
	if ra == nil {
		return keys, args, false
	}
	// decide_rules: the rule states follow the usage hashes, and the
	// change set (when named) comes last, its index in ARGV[8]
	changes := ""
	if args[5] != "" {
		keys = keys[:len(keys)-1]
	}
	keys = append(keys, ra.keys...)
	if args[5] != "" {
		keys = append(keys, a.changes)
		changes = strconv.Itoa(len(keys))
	}
	out := make([]any, 0, len(args)+3)
	out = append(out, opDecideRules)
	out = append(out, args[1:5]...)
	out = append(out, len(a.usage), ra.spec, changes, args[6])
	return keys, out, true
}

// splitReply peels the rule results off a reply of op "decide_rules" and
// gives each call its own; it returns the decide part.
func splitReply(reply string, err error, live []*call) (string, error) {
	if err != nil {
		return reply, err
	}
	n := len(live) * replySize
	want := n
	for _, c := range live {
		want += len(c.req.Rules) * ruleResultSize
	}
	if len(reply) != want {
		return "", fmt.Errorf("reply has %d bytes, want %d", len(reply), want)
	}
	off := n
	for _, c := range live {
		c.ruleRes = make([]ruleResult, len(c.req.Rules))
		for i := range c.ruleRes {
			c.ruleRes[i] = decodeRuleResult(reply, off)
			off += ruleResultSize
		}
	}
	return reply[:n], nil
}

// decodeRuleResult reads the rule result at byte offset off of reply.
func decodeRuleResult(reply string, off int) (r ruleResult) {
	for j := range r {
		p := off + 8*j
		r[j] = int64(uint64(reply[p]) | uint64(reply[p+1])<<8 | uint64(reply[p+2])<<16 | uint64(reply[p+3])<<24 |
			uint64(reply[p+4])<<32 | uint64(reply[p+5])<<40 | uint64(reply[p+6])<<48 | uint64(reply[p+7])<<56)
	}
	return r
}

// ruleRemotes returns the remote outcomes op "decide" packs for req: nil
// without a rule bucket; else every bucket packed with its key but the
// rule bucket, a placeholder rules.lua sets (one primary) or the rules'
// outcome (cluster: admitted, retryUS).
func (r *keyedRequest) ruleRemotes(admitted bool, retryUS int64) []remote {
	rb := r.ruleBucket()
	if rb < 0 {
		return nil
	}
	rem := make([]remote, len(r.Buckets))
	rem[rb] = remote{decided: true, admitted: admitted, retryUS: retryUS}
	return rem
}

// ruleOutcome returns whether the rules results admit the request (every
// rule that is not shadow admitted) and the retry of the first that
// refused.
func ruleOutcome(rules []keyedRule, res []ruleResult) (bool, int64) {
	for i := range rules {
		if !rules[i].Rule.Shadow && res[i][0] != 1 {
			return false, res[i][1]
		}
	}
	return true, 0
}

// ruleDecision adds the rules' outcomes to d (Rules, RefusedRule, Delay)
// and, when d admitted the request and it holds CONCURRENCY members,
// registers them and sets d.Release.
func (e *Engine) ruleDecision(d *limit.Decision, c *call) {
	rules := c.req.Rules
	if len(rules) == 0 || len(c.ruleRes) != len(rules) {
		return
	}
	d.Rules = make([]limit.RuleOutcome, len(rules))
	refused := -1
	var held []hold
	var turns []keyEntry
	for i := range rules {
		r, res := rules[i].Rule, &c.ruleRes[i]
		d.Rules[i] = ruleOutcome1(r, res, d.Now)
		if refused < 0 && !r.Shadow && res[0] != 1 {
			refused = i
		}
		if !d.Allowed || res[0] != 1 {
			continue
		}
		if r.Algorithm == limit.LeakyBucket {
			if !r.Shadow {
				d.Delay = max(d.Delay, d.Rules[i].Delay)
			}
			kr, rr := &rules[i], *res
			turns = append(turns, keyEntry{key: kr.Key, pack: func(s []byte, ki uint16) []byte { return appendUndo(s, kr, ki, &rr) }})
		}
		if r.Algorithm == limit.Concurrency {
			held = append(held, rules[i].hold)
		}
	}
	if d.Refused == limit.LevelRule {
		d.RefusedRule = max(refused, 0)
	}
	if len(held) > 0 {
		d.Release = e.holds.add(held)
	}
	if d.Delay > 0 {
		d.GiveBack = func() { e.giveBackTurns(turns) }
	}
}

// giveBackTurns gives back the LEAKY_BUCKET turns of a request that will
// not go on (op "unrules": each rule's queue ends one turn sooner); a
// failure is logged: those rules then under-admit until their queues
// drain.
func (e *Engine) giveBackTurns(turns []keyEntry) {
	ctx, cancel := context.WithTimeout(context.Background(), refundTimeout)
	defer cancel()
	if err := e.runKeyed(ctx, func(spec []byte) []any { return []any{opUnrules, e.clockArg(), spec} }, turns); err != nil {
		slog.Default().LogAttrs(ctx, slog.LevelWarn, "engine: giving back the turns of a request that left failed; those rules under-admit until their queues drain",
			slog.Int("rules", len(turns)), slog.String("error", err.Error()))
	}
}

// ruleOutcome1 turns one rule result into a limit.RuleOutcome at now.
func ruleOutcome1(r *limit.Rule, res *ruleResult, now time.Time) limit.RuleOutcome {
	o := limit.RuleOutcome{Admitted: res[0] == 1}
	if !o.Admitted {
		if res[1] < 0 {
			o.NoRetry = true
		} else {
			o.RetryAfter = time.Duration(res[1]) * time.Microsecond
		}
	}
	o.State = limit.State{Remaining: max(res[2], 0)}
	if res[3] >= 0 {
		o.State.Reset = now.Add(time.Duration(res[3]) * time.Microsecond)
	}
	switch r.Algorithm {
	case limit.TokenBucket:
		o.State.Limit = int64(r.BurstLimit)
		if r.RateLimit > 0 {
			o.State.Window = time.Duration(float64(r.BurstLimit) / r.RateLimit * float64(time.Second))
		}
	case limit.SlidingWindow, limit.FixedWindow:
		o.State.Limit, o.State.Window = int64(r.Limit), r.Window
	case limit.Concurrency, limit.CalendarQuota:
		o.State.Limit = int64(r.Limit)
	case limit.LeakyBucket:
		q := leakyAtOnce(r)
		o.State.Limit = q
		o.State.Window = time.Duration(float64(q) / r.RateLimit * float64(time.Second))
		if o.Admitted {
			o.Delay = time.Duration(res[4]) * time.Microsecond
		}
	}
	return o
}

// leakyAtOnce is how many requests a LEAKY_BUCKET rule admits at once from
// empty: one at once and those that may wait (at most BurstLimit, each at
// most MaxDelay), as rules.lua counts them.
func leakyAtOnce(r *limit.Rule) int64 {
	turn := leakyTurnUS(r.RateLimit)
	longest := min(r.MaxDelay.Microseconds(), int64(max(r.BurstLimit, 0))*turn)
	return longest/turn + 1
}

// leakyTurnUS is rules.lua's turn_us: 1/rate in whole µs, rounded up (with
// its 1 ns tolerance), at least 1.
func leakyTurnUS(rate float64) int64 {
	if !(rate > 0) {
		return math.MaxInt64
	}
	return max(1, int64(math.Ceil(1e6/rate-1e-3)))
}
