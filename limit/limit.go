package limit

import (
	"context"
	"errors"
	"time"

	"tollgate/calendar"
)

// ErrNotRestored is the error (wrapped) of a decision on a keyed request
// while the limiter Redis lost its data and an admin node has not yet
// written the key's quota and usage back from the usage ledger
// (docs/usage.md, "Restore after a loss"). Nothing was charged; the
// gateway answers 503 with Retry-After whatever its failure mode, so a
// key that had used up its quota is never admitted meanwhile.
var ErrNotRestored = errors.New("limiter state not restored from the usage ledger yet")

// Bucket is one token bucket a request takes a token from: capacity
// BurstLimit tokens, refilled at RateLimit tokens per second (fractional
// rates allowed; 0 means no refill), starting full, one token per request.
// Its Level and the request say which bucket it is; the engine names its
// Redis state (package keyspace), never the caller.
type Bucket struct {
	// Level is the bucket's kind: LevelPlan (the key's plan bucket, named by
	// Request.KeyID and PlanID), LevelPlanMethod (the key's per-method
	// bucket: KeyID, PlanID, API, Stage, Method, Path), LevelStage (the
	// stage method bucket shared by every caller: API, Stage, Method, Path)
	// or LevelAccount (one bucket for all traffic). It is reported in
	// Decision.Refused when this bucket refuses.
	Level Level
	// RateLimit is the refill in tokens per second, ≥ 0.
	RateLimit float64
	// BurstLimit is the capacity in tokens, ≥ 0 (0 refuses every request).
	BurstLimit int32
	// Method and Path name the method of a LevelPlanMethod or LevelStage
	// bucket as configured ("GET", "ANY"; resource path "/pets/{petId}");
	// empty for the others.
	Method, Path string
}

// Quota is the usage plan quota of one API key: Limit requests per
// calendar Period (plans.PeriodDay, PeriodWeek or PeriodMonth) shifted by
// Offset days in UTC, as AWS counts, or anchored to a day in a time zone
// (package calendar, Quota.Calendar).
type Quota struct {
	// Limit is the number of requests per period, ≥ 0.
	Limit int32
	// Period is "DAY", "WEEK" or "MONTH"; anything else counts as DAY.
	Period string
	// Offset shifts the period start by days (WEEK 0..6 from Sunday,
	// MONTH 0..27 from the 1st, DAY 0) when there is no Anchor.
	Offset int32
	// Anchor is the day a WEEK or MONTH period starts on; 0 none.
	Anchor calendar.Anchor
	// Zone is where the period's days start; nil is UTC.
	Zone *time.Location
}

// Calendar returns the period rule of q.
func (q *Quota) Calendar() calendar.Calendar {
	return calendar.Calendar{Period: q.Period, Offset: int(q.Offset), Anchor: q.Anchor, Zone: q.Zone}
}

// Request lists what applies to one request (docs/behaviour.md, "Throttles
// and quota"): Buckets in AWS's check order (plan or plan-method, stage,
// account), then the quota. It names its limits by scope (key, plan, API,
// stage, method), not by Redis key.
type Request struct {
	// KeyID and PlanID are the caller's API key and the usage plan that
	// covers the stage; both "" for a request without a key (no plan
	// bucket, no quota, no usage count). A keyed request counts in its
	// key's daily usage when admitted.
	KeyID, PlanID string
	// API and Stage name the stage the request is for (stage and
	// plan-method buckets).
	API, Stage string
	// Buckets are checked in order; the first without a token refuses.
	Buckets []Bucket
	// Quota is the plan quota of the key; nil means no quota.
	Quota *Quota
	// Rules are the rate-limit rules that apply to the request, decided
	// with its buckets and quota, all or nothing: a rule that refuses
	// charges nothing anywhere, and a refusal by another limit charges no
	// rule. They are checked after the buckets and before the quota.
	Rules []Rule
	// Uncounted leaves the request out of its key's daily usage (the
	// partner usage endpoint, which takes from the plan bucket only: no
	// Quota, not counted).
	Uncounted bool
	// Version is the config version the limits come from. A refusal the
	// engine remembers (docs/behaviour.md) answers only requests of the
	// same Version.
	Version int64
	// Want is how many units (a token of every bucket, a unit of the
	// quota) to take when admitted: 0 or 1 the request alone, more a
	// capacity lease (docs/leases.md). The lease layer sets it.
	Want int32
	// Cost is the units the request's own limits take when admitted: its
	// plan or plan-method bucket, its quota and its customer quota; usage
	// counts them beside the request (docs/cost.md). 0 means 1, as AWS
	// counts; NoCost takes none (a weight of 0). Shared buckets and rules
	// count requests. A settled cost reserves its estimate here and
	// settles the rest once the response is known (engine.Settle).
	Cost int32
	// CustomerID names the customer whose CustomerQuota the key shares
	// with the customer's other keys; "" when the key is its own customer.
	CustomerID string
	// CustomerQuota is the quota every key of the customer shares in the
	// plan (tollgate:customer-quota), decided with the key's own limits,
	// all or nothing, checked after Quota; nil for none. Its period,
	// offset, anchor and zone are its own (the plan's calendar), which may
	// differ from Quota's when the key has its own (plans.KeyCalendar).
	CustomerQuota *Quota
	// Along, when not nil, is work the decider does in the round trip of
	// the decision (the stage cache entry's read). A decider that answers
	// without a round trip leaves it undone (Along.Done reports false), and
	// the caller does it on its own.
	Along Along
}

// NoCost is Request.Cost for a request that takes no units (it still
// needs one left: an overdrawn quota refuses it).
const NoCost int32 = -1

// Units returns the units req's own limits take per request: Cost, 1 for
// 0, 0 for NoCost (any negative).
func (r *Request) Units() int32 {
	switch {
	case r.Cost == 0:
		return 1
	case r.Cost < 0:
		return 0
	}
	return r.Cost
}

// Along is work done in a decision's round trip; the engine knows its
// concrete type.
type Along interface {
	// Done reports whether it was done.
	Done() bool
}

// Decider decides limit requests: the engine, and each of the layers
// stacked on it (refusal memory, capacity leases, fail-open charges), as
// chi's middleware wraps an http.Handler. An error means the limits could
// not be decided (the failure mode applies); ErrNotRestored means the
// request must wait, and nothing was charged.
type Decider interface {
	Decide(ctx context.Context, req *Request) (Decision, error)
}

// Layer wraps a Decider with a mechanism of its own.
type Layer func(next Decider) Decider

// Stack returns base wrapped by layers: the first is nearest base, the
// last is on top (decides first).
func Stack(base Decider, layers ...Layer) Decider {
	d := base
	for _, l := range layers {
		d = l(d)
	}
	return d
}

// UndecidedError is the error of a decision the limiter could not make
// (Redis did not answer, or answered an error). Run is the run that may
// have decided it all the same, its reply lost; 0 when none was sent, so
// nothing was decided. At is the limiter's time at the failure, as
// estimated by the node. On Redis Cluster a customer quota in a slot of
// its own is taken by a run of its own first: CustomerRun is that run when
// its reply was lost (0: none, or it replied), and CustomerTaken says its
// reply came and its units stay taken.
type UndecidedError struct {
	Run           int64
	At            time.Time
	Err           error
	CustomerRun   int64
	CustomerTaken bool
}

func (e *UndecidedError) Error() string { return e.Err.Error() }
func (e *UndecidedError) Unwrap() error { return e.Err }

// ChargeKind says what a Charge is.
type ChargeKind uint8

// Kinds of charges.
const (
	// ChargeAdmitted is requests a node admitted without a decision
	// (failure mode open): nothing is counted when Run decided them.
	ChargeAdmitted ChargeKind = iota
	// ChargeSettle is the settle of a decided request (Settlement).
	ChargeSettle
	// ChargeSettleUndecided is the settle of a request admitted without a
	// decision: Units less Reserved when Run decided it, else Units.
	ChargeSettleUndecided
)

// Parts names the parts of a charge: the key's own state (quota, usage,
// plan bucket) and the customer quota, which on Redis Cluster may sit in
// another slot and land apart.
type Parts uint8

// Parts of a charge.
const (
	PartKey Parts = 1 << iota
	PartCustomer
)

// Charge is what the limiter counts for requests after their decision, at
// most once each (engine.Engine.Charge): the quota and usage of requests a
// node admitted without a decision (failure mode open, engine/failopen),
// or a request's settle once its response is known (Settlement.AsCharge).
// Units of Req's quota, customer quota and usage, in the period and day of
// At, as Kind says.
type Charge struct {
	Req   *Request
	Units int32
	At    time.Time
	Run   int64
	// Requests is how many requests they were, counted in usage beside
	// Units; 0 means Units (requests of one unit each) for ChargeAdmitted,
	// none for a settle.
	Requests int32
	Kind     ChargeKind
	// Reserved is the units the decision took (settles).
	Reserved int32
	// Bucket charges the plan bucket too (a settled cost's difference).
	Bucket bool
	// CustomerRun and CustomerTaken are UndecidedError's (Redis Cluster).
	CustomerRun   int64
	CustomerTaken bool
	// Done lists the parts counted already (by an earlier try), Prev the
	// earlier try whose reply was lost (0 none): the rest is counted
	// unless Prev ran.
	Done Parts
	Prev int64
}

// Return ends a capacity lease (engine/lease): its Unspent units go back
// to every level it took Taken from at At (the take's Decision.Now, in the
// quota period that started at PeriodStart), and the Spent requests the
// node admitted on it are counted in usage on At's day. KeepQuota keeps
// the quota units (the quota was set since the take).
type Return struct {
	Req                   *Request
	Taken, Unspent, Spent int32
	At, PeriodStart       time.Time
	// CustomerPeriodStart is the customer quota's period of the take (its
	// own calendar, the plan's; zero: PeriodStart).
	CustomerPeriodStart time.Time
	KeepQuota           bool
	// TakenAt is the take's Decision.TakenAt: when each bucket's and
	// rule's units were taken, by its own slot's clock (nil: all at At).
	TakenAt []time.Time
}

// Settlement is the charge of one admitted request once its response is
// known (the gateway's settle): Charge units beyond what its decision
// took on its own limits (negative: given back; a settled cost's real
// cost less its reservation), in the quota period that started at
// PeriodStart (the decision's Quota.Reset − Quota.Window) only; and, when
// Count, the request counted in usage with Units cost units (a request
// decided Uncounted). Reserved is what the decision took (needed when
// not Count, for an undecided request). Bucket says Charge applies to the plan bucket too
// (a settled cost; a 5xx given back keeps its token). At is the decision's
// time (limit.Decision.Now): usage counts on its day.
//
// Undecided, when not nil, is the failure of a request admitted without a
// decision (failure mode open): its decision's run may have taken
// Reserved units, or not (then the settle charges the whole cost, Charge
// plus Reserved, to the quotas, and nothing to the bucket), and At is its
// Undecided.At.
type Settlement struct {
	Req         *Request
	PeriodStart time.Time
	At          time.Time
	Charge      int32
	Count       bool
	Units       int32
	Bucket      bool
	Reserved    int32
	Undecided   *UndecidedError
}

// AsCharge returns s as a Charge of kind ChargeSettle (or
// ChargeSettleUndecided).
func (s Settlement) AsCharge() Charge {
	reserved := s.Reserved
	if s.Count { // usage counts Units: the reservation is what Charge adds to
		reserved = s.Units - s.Charge
	}
	ch := Charge{Req: s.Req, Units: s.Charge + reserved, Reserved: reserved, Kind: ChargeSettle, At: s.At, Bucket: s.Bucket && s.Charge != 0}
	if s.At.IsZero() {
		ch.At = s.PeriodStart
	}
	if s.Count {
		ch.Requests = 1
	}
	if u := s.Undecided; u != nil {
		ch.Kind, ch.Run, ch.At, ch.CustomerRun, ch.CustomerTaken = ChargeSettleUndecided, u.Run, u.At, u.CustomerRun, u.CustomerTaken
	}
	return ch
}

// PlanBucket returns the request's plan or plan-method bucket (the first
// bucket, by construction), or nil.
func (r *Request) PlanBucket() *Bucket {
	if len(r.Buckets) > 0 {
		if r.Buckets[0].Level.PerKey() {
			return &r.Buckets[0]
		}
	}
	return nil
}

// State describes one limit of the caller, for rate-limit headers.
type State struct {
	// Limit is the burst limit (bucket) or the quota limit.
	Limit int64
	// Remaining is the whole tokens left (bucket) or the requests left in
	// the period (quota) after this request; never negative. On a refusal
	// it is the unchanged value.
	Remaining int64
	// Reset is, for a bucket, when it is full again (zero at rate 0 unless
	// it is full, then Now); for a quota, the period end. Redis time.
	Reset time.Time
	// Window is, for a bucket, the time to refill from empty (burst/rate;
	// 0 at rate 0); for a quota, the length of the current period.
	Window time.Duration
}

// Decision is the outcome of one request over every applicable limit.
type Decision struct {
	// Allowed is true when every bucket had a token and the quota had room;
	// then all of them were charged. Otherwise nothing was charged.
	Allowed bool
	// Refused is the first refusing level in check order; LevelNone when
	// Allowed.
	Refused Level
	// RetryAfter is the time until the refusing limit could admit (a
	// bucket: one token refilled; the quota: the period end). 0 when
	// Allowed or when NoRetry.
	RetryAfter time.Duration
	// NoRetry is true when the refusing bucket has rate 0 and so never
	// refills until its limits change.
	NoRetry bool
	// Now is the Redis TIME (or the injected test clock) the decision was
	// made at.
	Now time.Time
	// Plan is the state of the caller's plan or plan-method bucket; nil if
	// none.
	Plan *State
	// Quota is the state of the caller's quota; nil if none.
	Quota *State
	// Customer is the state of the caller's customer quota (its Reset and
	// Window are the quota period's); nil if none, or decided in its own
	// Redis Cluster slot.
	Customer *State
	// Remembered is true when the engine answered from its memory of an
	// earlier refusal, without Redis.
	Remembered bool
	// Rules holds one outcome per Request.Rules entry, in order; nil when
	// the request had none or Remembered.
	Rules []RuleOutcome
	// RefusedRule is the index in Rules of the rule that refused (the
	// first refusing one in order); meaningful only when Refused is
	// LevelRule.
	RefusedRule int
	// Delay is how long an admitted request must wait before it goes on:
	// the longest Delay of its enforcing LeakyBucket rules; 0 otherwise.
	Delay time.Duration
	// GiveBack gives back the request's LeakyBucket turns when it will not
	// go on after all (its client went away while it waited its Delay);
	// call it at most once, instead of going on. Nil when Delay is 0.
	// The request's other charges (buckets, quota, other rules) stay.
	GiveBack func()
	// Release ends the request's Concurrency slots; call it once when the
	// response has ended (also when the client went away). Nil when the
	// request holds none. A slot whose node dies expires within the
	// engine's concurrency lease (docs/rules.md).
	Release func()
	// Granted is the units taken when admitted: 1, or more for a
	// capacity lease (Request.Want).
	Granted int32
	// LeaseWait, on a refusal of a bucket or quota, is how long capacity
	// leases may still give units of it back (docs/leases.md); 0 for none.
	LeaseWait time.Duration
	// TakenAt, for a lease (Granted > 1) taken on Redis Cluster, is when
	// each bucket of the request, then each of its rules, in order, then
	// its customer quota when in a slot of its own, gave its units, by the
	// clock of the master of its slot: a shared bucket, a rule or the
	// customer quota in the first phase (its own slot), the request's own
	// buckets at Now. Nil when every level
	// was taken at Now (one primary). The lease's give-back hands it back
	// (Return.TakenAt).
	TakenAt []time.Time
}

// Usage is one key's usage in one plan now, as the limiter counts it.
type Usage struct {
	// Now is the limiter's time (Redis TIME).
	Now time.Time
	// Quota is the current quota period's state; nil without a quota.
	Quota *State
	// Today is the requests counted on Now's UTC day.
	Today int64
	// TodayUnits is the cost units of those requests.
	TodayUnits int64
}
