package limit

import "time"

// Algorithm is the algorithm of a rate-limit rule (docs/rules.md).
type Algorithm uint8

// Algorithms of rules, in the order limits.lua's rules section numbers
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
