package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/limit"
)

// keyedBucket is a limit.Bucket with the Redis key of its state.
type keyedBucket struct {
	Key        string
	RateLimit  float64
	BurstLimit int32
	Level      limit.Level
}

// keyedQuota is a limit.Quota with the Redis key of its state.
type keyedQuota struct {
	Key    string
	Limit  int32
	Period string
	Offset int32
}

// keyedRequest is a limit.Request resolved to Redis key names: what
// limits.lua decides. UsageKey "" means no usage count.
type keyedRequest struct {
	Buckets  []keyedBucket
	Quota    *keyedQuota
	UsageKey string
	// Rules are the request's rate-limit rules (rules.go); when one of
	// them is not shadow, the last bucket is their rule bucket.
	Rules []keyedRule
	// Want is the tokens and quota units to take when admitted: 0 or 1
	// the request alone, more a capacity lease (leases.go).
	Want uint16
}

// planIndex returns the index of the caller's plan or plan-method bucket
// (the first bucket of either level), or -1.
func (r *keyedRequest) planIndex() int {
	for i := range r.Buckets {
		if r.Buckets[i].Level.PerKey() {
			return i
		}
	}
	return -1
}

// Decide takes one token from every bucket of req and one unit of its quota,
// all or nothing (docs/behaviour.md, "Throttles and quota"). It waits
// while its decision is queued behind the node's own work and for its
// run's reply, and fails when Redis does not answer: the run of its batch
// failed, or Redis is down (ErrRedisDown; batch.go). The first refusing limit in check order decides.
// A request with no buckets and no quota is admitted (and its usage
// counted when it has a key). A refusal of the caller's own plan bucket or
// quota is remembered until the moment it could admit (refusals.go), and
// later requests on it are answered from that memory, without Redis
// (Decision.Remembered). Concurrent calls are decided together, one script
// run per batch (batch.go) on one primary, one per slot on Redis Cluster
// (cluster.go). req must not change until Decide returns. Errors (Redis
// down or not answering, a malformed reply, ctx ended) are
// wrapped; the caller applies the failure mode, and with Options.FailOpen
// the engine charges the request's quota and usage once Redis answers
// (failopen.go).
func (e *Engine) Decide(ctx context.Context, req *limit.Request) (limit.Decision, error) {
	return e.decideAlong(ctx, req, nil)
}

// decideAlong is Decide with along. along, when not nil, queues commands
// on the pipeline of the round trip that decides req (on Redis Cluster,
// its last phase), so the caller reads other keys of the limiter Redis in
// the same round trip (the stage cache generation and entry). along runs
// before the round trip, possibly on another goroutine, and must only
// queue commands on p, with ctx (the run's deadline). When along is not
// nil and the call was sent, decideAlong returns only after the run
// (bounded by runTimeout), so the commands along queued hold their
// replies; when it fails before its run was sent (or a refusal was
// answered from memory), along is not called. A call with along (a
// caching request reading its entry in the same round trip) neither takes
// nor uses a lease: it needs the round trip anyway.
func (e *Engine) decideAlong(ctx context.Context, req *limit.Request, along func(context.Context, redis.Pipeliner)) (limit.Decision, error) {
	c := e.newCall(ctx, req)
	gen, sent := e.refusals.generation(), time.Now()
	var leaseGen uint64
	if e.leases != nil && along == nil && leasable(c.req) {
		var d limit.Decision
		var ok bool
		if d, ok, leaseGen = e.leases.admit(c.req, req.Version, sent); ok {
			return d, nil
		}
	}
	if d, ok := e.refusals.lookup(c.req, req.Version, sent); ok {
		if c.req.Want > 1 {
			e.leases.taken(c.req, req.Version, sent, leaseGen, nil, &d, nil)
		}
		return d, nil
	}
	d, err := e.wait(ctx, c, along)
	if c.req.Want > 1 {
		e.leases.taken(c.req, req.Version, sent, leaseGen, &c.res, &d, err)
	}
	if err == nil && !d.Allowed && req.KeyID != "" {
		e.refusals.remember(c.req, req, d, sent, gen)
	}
	return d, err
}

// newCall resolves req into a call: its Redis key names (the per-key ones
// built here, the shared ones from a cache of names).
func (e *Engine) newCall(ctx context.Context, req *limit.Request) *call {
	c := &call{ctx: ctx, done: make(chan struct{})}
	kr := &c.own
	kr.Buckets = c.ownBuckets[:0]
	for i := range req.Buckets {
		b := &req.Buckets[i]
		kr.Buckets = append(kr.Buckets, keyedBucket{Key: e.bucketKey(req, b), RateLimit: b.RateLimit, BurstLimit: b.BurstLimit, Level: b.Level})
	}
	if req.KeyID != "" {
		if q := req.Quota; q != nil {
			c.ownQuota = keyedQuota{Key: e.keys.Quota(req.KeyID, req.PlanID), Limit: q.Limit, Period: q.Period, Offset: q.Offset}
			kr.Quota = &c.ownQuota
		}
		if !req.Uncounted {
			kr.UsageKey = e.keys.Usage(req.KeyID, req.PlanID)
		}
	}
	if len(req.Rules) > 0 {
		e.resolveRules(req, kr)
	}
	c.req = kr
	return c
}

// bucketKey names the state of bucket b of req.
func (e *Engine) bucketKey(req *limit.Request, b *limit.Bucket) string {
	switch b.Level {
	case limit.LevelPlan:
		return e.keys.PlanBucket(req.KeyID, req.PlanID)
	case limit.LevelPlanMethod:
		return e.keys.PlanMethodBucket(req.KeyID, req.PlanID, req.API, req.Stage, b.Method, b.Path)
	case limit.LevelStage:
		return e.names.stageBucket(req.API, req.Stage, b.Method, b.Path)
	default:
		return e.names.account
	}
}

// wait queues c and waits for its decision (batch.go: a caller never
// gives up because of the node's own queue, nor on a run in flight); it
// fails at once when Redis is down (ErrRedisDown), and returns when ctx
// ends (the caller left) while c is queued.
func (e *Engine) wait(ctx context.Context, c *call, along func(context.Context, redis.Pipeliner)) (limit.Decision, error) {
	c.ctx, c.clock, c.along = ctx, e.clockArg(), along
	if err := e.down(time.Now()); err != nil {
		if e.failOpen && ctx.Err() == nil {
			e.charges.add(c.req)
		}
		return limit.Decision{}, fmt.Errorf("engine: decide: %w", err)
	}
	e.enqueue(c)
	select {
	case <-c.done:
	case <-ctx.Done():
		if c.abandon() {
			return limit.Decision{}, fmt.Errorf("engine: decide: %w", ctx.Err())
		}
		<-c.done // answered soon, or an along call's run was sent
	}
	return e.result(c)
}

// result returns the decision of answered call c.
func (e *Engine) result(c *call) (limit.Decision, error) {
	if c.err != nil {
		return limit.Decision{}, fmt.Errorf("engine: decide: %w", c.err)
	}
	if c.res[rAllowed] != 1 && c.res[rRefused] == -1 {
		return limit.Decision{}, fmt.Errorf("engine: decide: %w", limit.ErrNotRestored)
	}
	d := parseDecision(&c.res, c.req)
	e.ruleDecision(&d, c)
	return d, nil
}

// Reply positions of limits.lua's op "decide" (1-based there, 0-based
// here).
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
	rGranted
	rLen
)

// parseDecision turns one decision of the script's reply into a Decision.
func parseDecision(r *[rLen]int64, req *keyedRequest) limit.Decision {
	d := limit.Decision{Allowed: r[rAllowed] == 1, Now: time.UnixMicro(r[rNow]).UTC()}
	if !d.Allowed {
		d.Refused = refusedLevel(req, int(r[rRefused]))
		if r[rRetry] < 0 {
			d.NoRetry = true
		} else {
			d.RetryAfter = time.Duration(r[rRetry]) * time.Microsecond
		}
	}
	if plan := req.planIndex(); plan >= 0 {
		d.Plan = bucketState(&req.Buckets[plan], d.Now, r[rPlanRemaining], r[rPlanFull])
	}
	if req.Quota != nil {
		start, end := time.Unix(r[rQuotaStart], 0).UTC(), time.Unix(r[rQuotaEnd], 0).UTC()
		d.Quota = &limit.State{Limit: int64(req.Quota.Limit), Remaining: r[rQuotaRemaining], Reset: end, Window: end.Sub(start)}
	}
	return d
}

// refusedLevel maps the script's 1-based refusing index to a Level: a
// bucket's own Level, or LevelQuota just past the buckets.
func refusedLevel(req *keyedRequest, i int) limit.Level {
	if i >= 1 && i <= len(req.Buckets) {
		return req.Buckets[i-1].Level
	}
	return limit.LevelQuota
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
