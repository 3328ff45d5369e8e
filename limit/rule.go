package limit

import (
	"math"
	"time"
)

// Algorithm is the algorithm of a rate-limit rule (docs/rules.md).
type Algorithm uint8

// Algorithms of rules, in the order script/lua/rules.lua numbers
// them.
const (
	// TokenBucket: RateLimit tokens per second into a bucket of
	// BurstLimit; one per request.
	TokenBucket Algorithm = iota + 1
	// SlidingWindow: at most Limit per Window, estimated from two fixed
	// windows as prev × (1 − elapsed/Window) + curr.
	SlidingWindow
	// FixedWindow: at most Limit per window of Window aligned to Redis
	// time.
	FixedWindow
	// Concurrency: at most Limit requests in flight; Decision.Release
	// ends a request's slot.
	Concurrency
	// LeakyBucket: requests leave at RateLimit per second; one that
	// arrives early is admitted with a Delay (at most MaxDelay, and at
	// most BurstLimit waiting), else refused.
	LeakyBucket
	// CalendarQuota: at most Limit requests per UTC calendar Period
	// ("DAY", "WEEK", "MONTH") shifted by Offset days, counted as a usage
	// plan's quota (Quota) is. The gateway decides the quota of a usage
	// plan in shadow mode with it (docs/rules.md, "Shadow mode").
	CalendarQuota
)

// Rule is one rate-limit rule that applies to a request, with the value
// the request counts under (docs/rules.md). The engine names its state
// from Counter and Value (package keyspace).
type Rule struct {
	// Name labels the rule in headers and logs.
	Name string
	// Counter is the rule's counter id (plans.StageRule.CounterID).
	Counter string
	// Value is the request's combination of the rule's keyBy values,
	// encoded by the caller so that distinct combinations differ; the
	// engine hashes it.
	Value string
	// Algorithm and its parameters: RateLimit (per second) and
	// BurstLimit for TokenBucket and LeakyBucket, Limit for the windows
	// and Concurrency, Window for the windows, MaxDelay for LeakyBucket,
	// Limit, Period and Offset for CalendarQuota (as Quota's).
	Algorithm  Algorithm
	RateLimit  float64
	BurstLimit int32
	Limit      int32
	Window     time.Duration
	MaxDelay   time.Duration
	Period     string
	Offset     int32
	// Shadow rules are decided and counted but never refuse or delay the
	// request (docs/rules.md, "Shadow mode").
	Shadow bool
	// Private is true when the rule's counter belongs to the caller alone
	// (it counts by something the caller sends or is), so its state may be
	// shown in the caller's rate-limit headers; a rule with an empty keyBy
	// counts every caller together and is never shown.
	Private bool
}

// RuleOutcome is the outcome of one rule of a request (Decision.Rules).
type RuleOutcome struct {
	// Admitted is whether the rule admitted the request (for a shadow
	// rule: whether it would have). A rule is charged only when it and
	// the whole request were admitted.
	Admitted bool
	// RetryAfter is, when not Admitted, the time until it could admit;
	// NoRetry when it never will without a limit change (rate 0, limit 0).
	RetryAfter time.Duration
	NoRetry    bool
	// Delay is how long an admitted request of a LeakyBucket rule waits
	// for its turn; 0 for the other algorithms.
	Delay time.Duration
	// State is the rule's state after the request, for rate-limit
	// headers: Limit (burst, limit), Remaining, Reset (when Remaining is
	// whole again: the bucket full, the window over, the queue empty, the
	// period over; zero for Concurrency) and Window (0 for Concurrency and
	// CalendarQuota).
	State State
}

// RuleResult is the raw result of one rule as the limiter computes it (µs
// are microseconds): Admitted (a shadow rule: would it have); RetryUS until
// it could admit (-1 never); the whole requests Remaining after this one;
// ResetUS until Remaining is whole again (-1 none); Aux, LeakyBucket's
// delay (the others' Aux is the limiter's, for undoing a charge).
type RuleResult struct {
	Admitted                    bool
	RetryUS, Remaining, ResetUS int64
	Aux                         int64
}

// Outcome turns r's raw result res, decided at now, into its RuleOutcome.
func (r *Rule) Outcome(res RuleResult, now time.Time) RuleOutcome {
	o := RuleOutcome{Admitted: res.Admitted}
	if !o.Admitted {
		if res.RetryUS < 0 {
			o.NoRetry = true
		} else {
			o.RetryAfter = time.Duration(res.RetryUS) * time.Microsecond
		}
	}
	o.State = State{Remaining: max(res.Remaining, 0)}
	if res.ResetUS >= 0 {
		o.State.Reset = now.Add(time.Duration(res.ResetUS) * time.Microsecond)
	}
	switch r.Algorithm {
	case TokenBucket:
		o.State.Limit = int64(r.BurstLimit)
		if r.RateLimit > 0 {
			o.State.Window = time.Duration(float64(r.BurstLimit) / r.RateLimit * float64(time.Second))
		}
	case SlidingWindow, FixedWindow:
		o.State.Limit, o.State.Window = int64(r.Limit), r.Window
	case Concurrency, CalendarQuota:
		o.State.Limit = int64(r.Limit)
	case LeakyBucket:
		q := r.LeakyAtOnce()
		o.State.Limit = q
		o.State.Window = time.Duration(float64(q) / r.RateLimit * float64(time.Second))
		if o.Admitted {
			o.Delay = time.Duration(res.Aux) * time.Microsecond
		}
	}
	return o
}

// LeakyAtOnce is how many requests a LeakyBucket rule admits at once from
// empty: one at once and those that may wait (at most BurstLimit, each at
// most MaxDelay).
func (r *Rule) LeakyAtOnce() int64 {
	turn := r.LeakyTurnUS()
	longest := min(r.MaxDelay.Microseconds(), int64(max(r.BurstLimit, 0))*turn)
	return longest/turn + 1
}

// LeakyTurnUS is a LeakyBucket rule's interval between turns: 1/rate in
// whole µs, rounded up (with a 1 ns tolerance), at least 1; the largest
// int64 at rate 0.
func (r *Rule) LeakyTurnUS() int64 {
	if !(r.RateLimit > 0) {
		return math.MaxInt64
	}
	return max(1, int64(math.Ceil(1e6/r.RateLimit-1e-3)))
}
