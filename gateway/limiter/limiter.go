package limiter

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redisscript"
)

// DefaultTimeout is the deadline of one decision when Options.Timeout is 0
// (TOLLGATE_REDIS_TIMEOUT's default, DESIGN.md 1).
const DefaultTimeout = 50 * time.Millisecond

// Bucket is one token bucket to take a token from: capacity BurstLimit
// tokens, refilled at RateLimit tokens per second (fractional rates allowed;
// 0 means no refill), starting full, one token per request.
type Bucket struct {
	// Key is the Redis key of the bucket's state, from Keys.
	Key string
	// RateLimit is the refill in tokens per second, ≥ 0.
	RateLimit float64
	// BurstLimit is the capacity in tokens, ≥ 0 (0 refuses every request).
	BurstLimit int32
	// Level is reported in Decision.Refused when this bucket refuses.
	Level Level
}

// Quota is the usage plan quota of one API key: Limit requests per UTC
// calendar Period (plans.PeriodDay, PeriodWeek or PeriodMonth) shifted by
// Offset days, as plans.Quota.Bounds.
type Quota struct {
	// Key is the Redis key of the quota state, from Keys.Quota.
	Key string
	// Limit is the number of requests per period, ≥ 0.
	Limit int32
	// Period is "DAY", "WEEK" or "MONTH"; anything else counts as DAY.
	Period string
	// Offset shifts the period start by days (WEEK 0..6 from Sunday,
	// MONTH 0..27 from the 1st, DAY 0).
	Offset int32
}

// Request lists what applies to one request: Buckets in AWS's check order
// (plan or plan-method, stage, account), then the quota.
type Request struct {
	// Buckets are checked in order; the first without a token refuses.
	Buckets []Bucket
	// Quota is the plan quota of the key; nil means no quota.
	Quota *Quota
	// UsageKey is the hash (Keys.Usage) that counts admitted requests per
	// UTC day, kept 100 days; "" means no usage counting.
	UsageKey string
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
	// Now is the Redis TIME (or test clock) the decision was made at.
	Now time.Time
	// Plan is the state of the caller's plan or plan-method bucket (the
	// first bucket with Level LevelPlan or LevelPlanMethod); nil if none.
	Plan *State
	// Quota is the state of the caller's quota; nil if none.
	Quota *State
}

// Options configures a Limiter; the zero value gives the defaults.
type Options struct {
	// Prefix of every key name; "" means DefaultPrefix ("tg").
	Prefix string
	// Timeout is the deadline of one Decide call; 0 means DefaultTimeout.
	Timeout time.Duration
}

// Limiter decides requests against token buckets and quotas kept in Redis
// by one atomic Lua script (limiter.lua), many requests per run. It is safe for concurrent use.
type Limiter struct {
	rdb     redis.UniversalClient
	keys    Keys
	timeout time.Duration
	clock   clockHook
	batch   batcher
}

//go:embed limiter.lua
var decideSource string

//go:embed state.lua
var stateSource string

// decideScript is the decision script (clock.lua + state.lua +
// limiter.lua), hashed once.
var decideScript = redis.NewScript(clockSource + stateSource + decideSource)

// New returns a Limiter over rdb (a single client, Sentinel failover
// client or Cluster client; see the Cluster note in limiter.lua).
func New(rdb redis.UniversalClient, opts Options) *Limiter {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	return &Limiter{rdb: rdb, keys: Keys{Prefix: opts.Prefix}, timeout: opts.Timeout}
}

// Keys returns the key builder with the Limiter's prefix.
func (l *Limiter) Keys() Keys { return l.keys }

// Load runs SCRIPT LOAD of the limiter's scripts on every shard (every
// primary of a Cluster or Ring client, else the one server), so that the
// first requests do not pay a NOSCRIPT round trip. Errors are wrapped.
func (l *Limiter) Load(ctx context.Context) error {
	if err := redisscript.Load(ctx, l.rdb, allScripts...); err != nil {
		return fmt.Errorf("limiter: %w", err)
	}
	return nil
}

// Decide takes one token from every bucket of req and one unit of its quota,
// all or nothing, under a deadline of Options.Timeout; concurrent calls
// are decided together in one script run (batch.go). The first refusing
// limit in check order decides. A request with no buckets and no quota is
// admitted (and its usage counted). req must not change until Decide
// returns. Errors (Redis unreachable, deadline exceeded, a malformed
// reply) are wrapped; the caller applies the failure mode.
func (l *Limiter) Decide(ctx context.Context, req *Request) (Decision, error) {
	return l.DecideAlong(ctx, req, nil)
}

// DecideAlong is Decide, with along's commands queued on the same pipeline
// right after the script run that decides req, so the caller reads other
// keys of the limiter Redis in the same round trip (the gateway's cache
// generation and entry, DESIGN.md 4.2 step 3). along runs before the
// round trip, possibly on another goroutine, and must only queue commands
// on p, with ctx (the run's deadline). When along is not nil, DecideAlong
// returns only after the run, which ends by the call's deadline
// (Options.Timeout from the call), so the commands along queued hold their
// replies; when the deadline passed before the run, along is not called
// and the error is the context's.
func (l *Limiter) DecideAlong(ctx context.Context, req *Request, along func(ctx context.Context, p redis.Pipeliner)) (Decision, error) {
	// The deadline goes with the call: a call still queued when it passes
	// is never sent (so never charged), and a batch runs under the
	// earliest deadline of its calls.
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	c := &call{ctx: ctx, req: req, clock: l.clock.arg(), along: along, done: make(chan struct{})}
	l.enqueue(c)
	if along != nil {
		<-c.done // the run's own deadline bounds this wait
	} else {
		select {
		case <-c.done:
		case <-ctx.Done():
			return Decision{}, fmt.Errorf("limiter: decide: %w", ctx.Err())
		}
	}
	if c.err != nil {
		return Decision{}, fmt.Errorf("limiter: decide: %w", c.err)
	}
	return parseDecision(&c.res, req, c.plan), nil
}

// Reply positions of limiter.lua (1-based there, 0-based here).
const (
	rAllowed = iota
	rRefused
	rNow
	rRetry
	rPlanRemaining
	rPlanFull
	rQuotaRemaining
	rQuotaStart
	rQuotaEnd
	rLen
)

// parseDecision turns one decision of the script's reply into a Decision.
func parseDecision(r *[rLen]int64, req *Request, plan int) Decision {
	d := Decision{Allowed: r[rAllowed] == 1, Now: time.UnixMicro(r[rNow]).UTC()}
	if !d.Allowed {
		d.Refused = refusedLevel(req, int(r[rRefused]))
		if r[rRetry] < 0 {
			d.NoRetry = true
		} else {
			d.RetryAfter = time.Duration(r[rRetry]) * time.Microsecond
		}
	}
	if plan >= 0 {
		d.Plan = bucketState(&req.Buckets[plan], d.Now, r[rPlanRemaining], r[rPlanFull])
	}
	if req.Quota != nil {
		start, end := time.Unix(r[rQuotaStart], 0).UTC(), time.Unix(r[rQuotaEnd], 0).UTC()
		d.Quota = &State{Limit: int64(req.Quota.Limit), Remaining: r[rQuotaRemaining], Reset: end, Window: end.Sub(start)}
	}
	return d
}

// refusedLevel maps the script's 1-based refusing index to a Level: a
// bucket's own Level, or LevelQuota just past the buckets.
func refusedLevel(req *Request, i int) Level {
	if i >= 1 && i <= len(req.Buckets) {
		return req.Buckets[i-1].Level
	}
	return LevelQuota
}

// bucketState builds the header state of a bucket from the tokens left and
// the microseconds until it is full (-1: never, at rate 0).
func bucketState(b *Bucket, now time.Time, remaining, fullUS int64) *State {
	s := &State{Limit: int64(b.BurstLimit), Remaining: remaining}
	if fullUS >= 0 {
		s.Reset = now.Add(time.Duration(fullUS) * time.Microsecond)
	}
	if b.RateLimit > 0 {
		s.Window = time.Duration(float64(b.BurstLimit) / b.RateLimit * float64(time.Second))
	}
	return s
}
