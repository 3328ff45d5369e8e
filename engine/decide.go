package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"tollgate/limit"
	"tollgate/script"
)

// Decide takes req.Want (at least one) tokens from every bucket of req and
// as many units of its quota, and charges its rules, all or nothing
// (docs/behaviour.md, "Throttles and quota"); the first refusing limit in
// check order decides a refusal, and a refused request is charged
// nothing. A request with no buckets and no quota is admitted (and its
// usage counted when it has a key). When req.Along is the engine's cache
// lookup, its reads go in the decision's round trip.
//
// Concurrent calls are decided together (batch.go). Decide fails when
// Redis does not answer (a limit.UndecidedError) or is down
// (ErrRedisDown), and with limit.ErrNotRestored while the key's slot
// awaits its restore. req must not change until Decide returns. Errors
// are wrapped.
func (e *Engine) Decide(ctx context.Context, req *limit.Request) (limit.Decision, error) {
	c := &call{ctx: ctx, done: make(chan struct{})}
	e.res.resolve(req, &c.own, c.ownBuckets[:0], &c.ownQuota, &c.ownCust)
	c.req = &c.own
	if al, ok := req.Along.(*lookupAlong); ok {
		c.along = al
	}
	for try := 1; ; try++ {
		d, err := e.wait(ctx, c)
		if !errors.Is(err, errPeriodMoved) || try == periodTries {
			return d, err
		}
		c = c.again()
	}
}

// errPeriodMoved is the error of a decision whose quota period table did
// not hold Redis's time (script.RefusedPeriod): nothing was charged, and
// Decide sends it again with a table around the time of the reply. Only a
// node whose estimate of Redis time is a period off, or a jump of
// Redis's clock, sees it; Decide returns it after periodTries.
var errPeriodMoved = errors.New("the quota period table does not hold Redis time")

// periodTries is how many times Decide sends a decision whose period
// table missed.
const periodTries = 3

// wait queues c and waits for its decision (batch.go: a caller never
// gives up because of the node's own queue, nor on a run in flight); it
// fails at once when Redis is down (ErrRedisDown), and returns when ctx
// ends (the caller left) while c is queued.
func (e *Engine) wait(ctx context.Context, c *call) (limit.Decision, error) {
	c.clock = e.r.clockArg()
	now := time.Now()
	if err := e.health.down(now); err != nil {
		return limit.Decision{}, fmt.Errorf("engine: decide: %w", &limit.UndecidedError{At: e.r.redisNow(now), Err: err})
	}
	e.batch.enqueue(c)
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
	// a period miss charged nothing; its reply carries Redis's time, which
	// a request admitted open after the last try is charged at
	if c.res.Refused == script.RefusedPeriod || errors.Is(c.err, errPeriodMoved) {
		return limit.Decision{}, fmt.Errorf("engine: decide: %w", &limit.UndecidedError{At: time.UnixMicro(c.res.NowUS).UTC(), Err: errPeriodMoved})
	}
	if c.err != nil {
		return limit.Decision{}, fmt.Errorf("engine: decide: %w", c.err)
	}
	if c.res.Refused == script.RefusedUnrestored {
		return limit.Decision{}, fmt.Errorf("engine: decide: %w", limit.ErrNotRestored)
	}
	d := parseDecision(&c.res, c.req)
	d.TakenAt = c.takenAt
	e.holds.ruleDecision(&d, c)
	return d, nil
}
