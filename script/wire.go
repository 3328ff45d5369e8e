package script

// The wire format of the limiter script, declared once. Every struct type
// in this file is a layout: its fields, in order, packed little-endian
// with Redis's struct library (uint8 'B', uint16 'H', uint32 'I4', int32
// 'i4', int64 'i8', float64 'd', [n]byte 'cn'). A field tagged
// `wire:"=N"` is a constant: packed as N, and a value whose constant
// differs does not decode (a stored state of another kind).
//
// `go generate ./script` writes the Go codecs (wire_gen.go: Append,
// Decode and a Size constant per layout) and the Lua prelude
// (lua/wire.lua: wire.read_<layout>, wire.pack_<layout>, the states'
// wire.<layout>(value) readers), field names in snake case
// (RetryUS → retry_us). TestWireRoundTrip sends every layout through Lua
// and back.
//
// Ops take ARGV[1] the operation, ARGV[2] the clock (Unix µs, or "" for
// Redis TIME) and ARGV[3] their packed arguments: a head layout, then its
// entries. Key indexes are 1-based into KEYS (0: none) unless a field
// says otherwise. Times are Unix µs, or s where a name says so.

//go:generate go run ./internal/wiregen

// Codes of the layouts' enumerated fields. The Lua prelude has each as
// wire.<NAME> in upper snake case (RefusedQuota → wire.REFUSED_QUOTA).
const (
	// DecisionSpec.Period
	PeriodDay   = 0
	PeriodWeek  = 1
	PeriodMonth = 2
	PeriodTable = 3 // an anchored or zoned period: a PeriodBounds follows

	// DecisionSpec.RulesElsewhere
	RulesHere     = 0 // decided in this run, from its RuleSpecs
	RulesAdmitted = 1 // decided in their own slots (Redis Cluster): admitted
	RulesRefused  = 2 // decided in their own slots: refused

	// DecisionSpec.CustomerAt
	CustomerHere     = 0 // decided in this run, from Customer
	CustomerAdmitted = 1 // decided in its own slot (Redis Cluster): its units were taken
	CustomerRefused  = 2 // decided in its own slot: refused

	// DecideReply.Status
	RunDone       = 0
	RunDuplicate  = 1 // the run window says this run ran already: nothing was done
	RunUnrestored = 2 // the charges were not counted: the slot awaits its restore

	// DecisionReply.Refused
	RefusedNone       = 0
	RefusedBucket     = 1
	RefusedRules      = 2
	RefusedQuota      = 3
	RefusedUnrestored = 4 // the slot awaits its restore (DecideArgs.Await)
	RefusedPeriod     = 5 // the PeriodBounds does not hold the run's time: nothing was charged
	RefusedCustomer   = 6 // the customer quota

	// ChargeSpec.Kind
	ChargeAdmitted        = 0 // admitted without a decision (fail-open)
	ChargeSettle          = 1 // the settle of a decided request
	ChargeSettleUndecided = 2 // the settle of a request admitted without a decision

	// WindowRuns is how many run numbers a RunWindow remembers.
	WindowRuns = 256

	// RestoreMark is the member of a usage change set, scored +inf, that
	// says its slot holds every key's quota and usage: written by the
	// admin's restore once it wrote them back from the ledger, lost with
	// the slot's data (package usage).
	RestoreMark = "~r"

	// UsageExtra ends the field of a usage hash's day ("YYYY-MM-DD#x")
	// that holds its requests' cost units beyond one per request, when
	// not 0 (ParseUsage).
	UsageExtra = "#x"
)

// DecideArgs is the head of op "decide": Charges × ChargeSpec, then
// Decisions × (DecisionSpec, its BucketSpecs, its RuleSpecs). KEYS are
// laid out states, usage hashes, rule states, then the change set and the
// run window when named.
type DecideArgs struct {
	Decisions  uint16 // decisions that follow
	Charges    uint16 // fail-open charges after them
	States     uint16 // m: KEYS[1..m] are bucket and quota states
	Usages     uint16 // u: KEYS[m+1..m+u] are daily usage hashes
	RuleStates uint16 // r: KEYS[m+u+1..m+u+r] are rule states
	Changes    uint16 // KEYS index of the slot's usage change set; 0 none
	Window     uint16 // KEYS index of the node's run window (RunWindow); 0 none
	Run        int64  // this run's sequence number on the node (with Window)
	Await      uint8  // 1: refuse keyed decisions until the slot is restored
	LeaseUS    int64  // how long a lease taken in this run may hold units before they are back
}

// DecisionSpec is one decision of op "decide". Check order: its buckets,
// then its rules, then the quota, then the customer quota; admitted only
// when all admit, then all are charged Want units (a capacity lease when
// more than 1). The caller's own limits (the plan bucket, the quota, the
// customer quota) take Cost units per request, the shared buckets and the
// rules one. A Period of PeriodTable has its PeriodBounds right after it,
// then a CustomerPeriod of PeriodTable its own, before its BucketSpecs.
// The quota and the customer quota each run on their own period: a key
// with its own calendar (plans.KeyCalendar) shares its customer's
// period, the plan's, with the customer's other keys.
type DecisionSpec struct {
	Buckets         uint8  // BucketSpecs that follow
	Rules           uint8  // RuleSpecs after them
	Plan            uint8  // 1-based index of the caller's plan bucket among Buckets; 0 none
	RulesElsewhere  uint8  // RulesHere, RulesAdmitted or RulesRefused
	RulesRetryUS    int64  // RulesRefused: the refusing rule's retry (-1 never)
	Quota           uint16 // index among the states of the quota state; 0 none
	Limit           int32  // quota limit (units)
	Period          uint8  // PeriodDay, PeriodWeek, PeriodMonth or PeriodTable
	Offset          uint8  // quota offset (days)
	Usage           uint16 // index among the usage hashes; 0: no usage count
	Want            uint16 // units to take when admitted; 0 counts as 1
	Cost            int32  // units of the caller's own limits per request (0: none; usage counts the request and them)
	Customer        uint16 // index among the states of the customer quota state; 0 none
	CustomerLimit   int32  // the customer quota's limit (units)
	CustomerAt      uint8  // CustomerHere, CustomerAdmitted or CustomerRefused
	CustomerRetryUS int64  // CustomerRefused: its retry-after
	CustomerPeriod  uint8  // the customer quota's period: PeriodDay, PeriodWeek, PeriodMonth or PeriodTable
	CustomerOffset  uint8  // its offset (days)
}

// PeriodBounds is the bounds of a quota period the script cannot compute:
// one anchored to a day or in a time zone other than UTC (package
// calendar, which the node computes them with). It holds three periods,
// [FromS, StartS), [StartS, EndS) and [EndS, ToS): the one holding the
// node's estimate of Redis time and its neighbours. The script picks the
// one holding its own time; when none does, it charges nothing and says
// so (RefusedPeriod; op "quota": PeriodEndS 0), and the node sends a
// table around the time the reply gave.
type PeriodBounds struct {
	FromS  int64
	StartS int64
	EndS   int64
	ToS    int64
}

// BucketSpec is one token bucket of a decision.
type BucketSpec struct {
	Key      uint16  // index among the states; 0: decided in another slot
	Rate     float64 // tokens per second
	Burst    int32   // capacity (tokens)
	Admitted uint8   // Key 0: 1 when it gave a token there
	RetryUS  int64   // Key 0, refused: its retry-after (-1 never)
}

// RuleSpec is one rate-limit rule of a decision (docs/rules.md); the
// fields its Algorithm does not use are 0.
type RuleSpec struct {
	Algorithm  uint8 // limit.Algorithm
	Shadow     uint8 // 1: decided and counted, never refuses
	Key        uint16
	Rate       float64
	Burst      int32
	Limit      int32
	WindowUS   int64
	MaxDelayUS int64
	LeaseUS    int64  // CONCURRENCY: how long the member counts without a renewal
	Node       uint32 // CONCURRENCY: the member "<node>:<seq>"
	Seq        uint32
	Period     uint8 // CALENDAR_QUOTA
	Offset     uint8
}

// ChargeSpec is a charge of op "decide", counted exactly once: the quota
// and usage of requests a node admitted while Redis did not answer
// (ChargeAdmitted, fail-open), or the settle of an admitted request once
// its response is known (ChargeSettle, ChargeSettleUndecided). It counts
// on the day, and in the quota period, of AtUS (the quotas only while that
// period lasts), unless Prev ran (an earlier try of this charge whose
// reply was lost: it was counted then). A Period of PeriodTable has its
// PeriodBounds (around AtUS) right after it, then a CustomerPeriod of
// PeriodTable its own; a table that does not hold AtUS charges no quota.
//
// Run is the decision run that may have decided the requests (in the run
// window). ChargeAdmitted: when it ran, nothing is counted (it was then).
// ChargeSettle (a decided request) and ChargeSettleUndecided whose Run
// ran: the quotas are charged Units − Reserved (what the decision did not
// take; never below 0 in total) and the plan bucket as many. An
// undecided settle whose Run did not run charges the quotas Units (and no
// bucket: it refills). Usage counts Requests with Units cost units. The
// Run and Prev counted are entered in the window, so that a late copy of
// either does nothing.
type ChargeSpec struct {
	Quota    uint16 // index among the states; 0 none
	Period   uint8
	Offset   uint8
	Usage    uint16 // index among the usage hashes; 0 none
	Units    int32  // quota units (settles: the request's whole cost)
	AtUS     int64  // Redis time of the admission (the node's estimate when undecided)
	Run      int64  // the run that may have decided them (in the window); 0: never sent
	Requests int32  // requests counted in usage (with Units, their cost)
	Customer uint16 // index among the states of the customer quota state (its own period); 0 none
	Bucket   uint16 // index among the states of the plan bucket (settles); 0 none
	Kind     uint8  // ChargeAdmitted, ChargeSettle or ChargeSettleUndecided
	Reserved int32  // settles: the units the decision took
	Prev     int64  // an earlier try of this charge whose reply was lost; 0 none
	// CustomerPeriod and CustomerOffset are the customer quota's own
	// period (the plan's calendar, which a key with its own does not
	// share); a CustomerPeriod of PeriodTable has its PeriodBounds after
	// the quota's.
	CustomerPeriod uint8
	CustomerOffset uint8
}

// DecideReply heads op "decide"'s reply: then one DecisionReply per
// decision, then one RuleReply per rule of every decision, in order.
type DecideReply struct {
	Status  uint8  // RunDone, RunDuplicate (nothing was done) or RunUnrestored
	Counted uint16 // charges counted
	Skipped uint16 // charges whose run had run
}

// DecisionReply is the outcome of one decision.
type DecisionReply struct {
	Allowed       uint8
	Refused       uint8 // RefusedNone, RefusedBucket, RefusedRules, RefusedQuota, RefusedUnrestored
	Bucket        uint8 // RefusedBucket: the 1-based index of the refusing bucket
	NowUS         int64 // the run's time
	RetryUS       int64 // refused: until it could admit (-1 never)
	PlanLeft      int64 // whole tokens left in the plan bucket; -1 none
	PlanFullUS    int64 // until the plan bucket is full (-1 never)
	QuotaLeft     int64 // quota units left; -1 no quota
	QuotaStart    int64 // quota period start (s)
	QuotaEnd      int64 // quota period end (s)
	Granted       int32 // units taken (0 refused; more than 1: a lease)
	LeaseWaitUS   int64 // refused while leases on the refusing level have units out: how long they may still take
	CustomerLeft  int64 // customer quota units left; -1 no customer quota (or decided in its own slot)
	CustomerStart int64 // customer quota period start (s)
	CustomerEnd   int64 // customer quota period end (s)
}

// RuleReply is the outcome of one rule.
type RuleReply struct {
	Admitted  uint8 // a shadow rule: would it have
	RetryUS   int64 // until it could admit (-1 never)
	Remaining int64 // whole requests left after this one
	ResetUS   int64 // until remaining is whole again (-1 none)
	Aux       int64 // LEAKY_BUCKET: the delay (µs); windows: the window counted in (µs); CALENDAR_QUOTA: the period counted in (s)
}

// RefundSpec is one give-back of op "refund" (no head): tokens a request
// took from a bucket of this slot but did not use.
type RefundSpec struct {
	Key    uint16
	Tokens int32
}

// UnleaseArgs is the head of op "unlease": Leases × (LeaseSpec, its
// LeaseBucketSpecs, its LeaseWindowSpecs); KEYS as op "decide"'s (states,
// usage hashes, then the change set), a lease's rule states among the
// states.
type UnleaseArgs struct {
	Leases  uint16
	States  uint16
	Usages  uint16
	Changes uint16 // KEYS index of the change set; 0 none
}

// LeaseSpec ends one capacity lease: its unspent units go back, and the
// requests the node admitted on it are counted.
type LeaseSpec struct {
	Buckets      uint8  // LeaseBucketSpecs that follow (its buckets and TOKEN_BUCKET rules)
	Windows      uint8  // LeaseWindowSpecs after them
	Quota        uint16 // index among the states; 0 none
	Usage        uint16 // index among the usage hashes; 0 none
	Spent        int32  // requests admitted on the lease
	Day          int32  // the UTC day of the take (days since 1970-01-01): spent counts there
	Unspent      int32  // quota units to give back
	PeriodStartS int64  // the quota period of the take: nothing goes back to another
	// Held is 1 for a trim of a lease that goes on (Redis Cluster: a
	// level of another slot took more than the lease's other levels):
	// its units go back, and its levels still count the lease out.
	Held uint8
}

// LeaseBucketSpec is one bucket of an ended lease.
type LeaseBucketSpec struct {
	Key       uint16
	Taken     int32 // tokens the take took
	Unspent   int32
	TakenAtUS int64 // the take's time
}

// LeaseWindowSpec is one FIXED_WINDOW or SLIDING_WINDOW rule of an ended
// lease: its unspent units go back to the window the take counted them in
// (the one holding TakenAtUS), while the rule's state still counts that
// window.
type LeaseWindowSpec struct {
	Key       uint16 // index among the states
	Algorithm uint8  // limit.Algorithm
	WindowUS  int64
	TakenAtUS int64 // the take's time
	Unspent   int32
}

// UndoSpec undoes a rule charge, or ends a CONCURRENCY request, in op
// "unrules" (no head).
type UndoSpec struct {
	Algorithm uint8
	Key       uint16
	WindowUS  int64   // windows
	Charged   int64   // windows: the window charged (µs); CALENDAR_QUOTA: the period (s)
	Node      uint32  // CONCURRENCY
	Seq       uint32  // CONCURRENCY
	Rate      float64 // LEAKY_BUCKET
}

// RenewArgs is the head of op "renew": then RenewSpecs.
type RenewArgs struct {
	LeaseUS int64
}

// RenewSpec extends the lease of one CONCURRENCY member.
type RenewSpec struct {
	Key  uint16
	Node uint32
	Seq  uint32
}

// SettleArgs is op "settle": Redis Cluster's give-back of a customer
// quota's units taken in phase 1 for a request its key's limits refused
// (a request's settle once its response is known is a ChargeSpec of op
// "decide"). KEYS[1] is the customer quota state.
type SettleArgs struct {
	PeriodStartS int64 // the period the units were taken in: they go back only into it
	Charge       int32 // units added (negative: given back, never below 0 in total)
}

// QuotaArgs is op "quota": KEYS 1 the quota state, 2 the usage hash
// (with Today). A Period of PeriodTable has its PeriodBounds right after
// it.
type QuotaArgs struct {
	Limit     int32
	Period    uint8
	Offset    uint8
	Set       uint8 // 1: set the remaining units to Remaining (clamped by the caller)
	Remaining int64
	Today     uint8 // 1: read today's usage count from KEYS[2]
}

// QuotaReply is op "quota"'s reply.
type QuotaReply struct {
	Remaining    int64
	PeriodStartS int64
	PeriodEndS   int64 // 0: the PeriodBounds does not hold NowUS (nothing was set)
	NowUS        int64
	Today        int64 // today's count (UTC day of NowUS); -1 not read
	TodayUnits   int64 // their cost units; -1 not read
	Used         int64 // units used in the period (may pass the limit by a settled cost's excess)
}

// BucketState is a token bucket's stored state.
type BucketState struct {
	Mark          uint8 `wire:"=1"`
	Tokens        float64
	AtUS          float64 // when Tokens was counted
	Rate          float64 // the limits it was written under
	Burst         float64
	Leases        float64 // leases that hold tokens of it and have not given them back
	LeasedUntilUS float64 // the latest end of such a lease (a dead node's counts until then)
}

// QuotaState is a quota's stored state.
type QuotaState struct {
	Mark          uint8   `wire:"=2"`
	PeriodStartS  float64 // the latest period start seen
	Used          float64 // units admitted since
	PeriodEndS    float64 // the period end its TTL was set for (0: none)
	Seq           float64 // change sequence number: +1 per admission and per set (the ledger keeps the highest)
	Leases        float64 // as BucketState's
	LeasedUntilUS float64
}

// SlidingState is a SLIDING_WINDOW rule's stored state.
type SlidingState struct {
	Mark    uint8   `wire:"=3"`
	StartUS float64 // the current window's start (a multiple of the window)
	Prev    float64
	Curr    float64
}

// FixedState is a FIXED_WINDOW rule's stored state.
type FixedState struct {
	Mark    uint8 `wire:"=4"`
	StartUS float64
	Count   float64
}

// SlidingLeasedState is a SLIDING_WINDOW rule's stored state while
// capacity leases hold units of it (SlidingState otherwise, the layout
// nodes of earlier versions read): Leases and LeasedUntilUS as
// BucketState's.
type SlidingLeasedState struct {
	Mark          uint8 `wire:"=7"`
	StartUS       float64
	Prev          float64
	Curr          float64
	Leases        float64
	LeasedUntilUS float64
}

// FixedLeasedState is a FIXED_WINDOW rule's stored state while capacity
// leases hold units of it (FixedState otherwise), as SlidingLeasedState.
type FixedLeasedState struct {
	Mark          uint8 `wire:"=8"`
	StartUS       float64
	Count         float64
	Leases        float64
	LeasedUntilUS float64
}

// LeakyState is a LEAKY_BUCKET rule's stored state.
type LeakyState struct {
	Mark  uint8   `wire:"=5"`
	TatUS float64 // when the queue of admitted requests has drained
}

// RunWindow is the runs of one node that ran in one slot: the highest run
// number seen and, for the WindowRuns numbers up to it, 1 when it ran (or
// a retried charge was counted in its stead), 2 when a charge counted a
// request of it instead (it never runs; its other requests' charges count
// too), else 0 (decide.lua).
type RunWindow struct {
	Mark uint8 `wire:"=6"`
	Max  float64
	Ran  [256]byte
}
