package gateway

import (
	"context"
	"math"
	"sync/atomic"
	"time"

	"tollgate/cache"
	"tollgate/limit"
)

// redisClock wraps the Engine and learns Redis's clock from the Now of its
// decisions, so that the key check judges expiry on Redis time, the clock
// of everything that limits usage (docs/behaviour.md, "Key lifecycle").
//
// A decision's Now was read by Redis after the call started, so
// Now - start is never less than Redis's offset from this node's clock at
// that moment: the latest such sample puts the estimate on the late side,
// so an expiring key is refused early by at most one decision's wait,
// never late, and a step of either clock counts from the next decision.
// Before any decision (or when Redis is down from the start) the node's
// own clock stands in.
type redisClock struct {
	Engine
	nodeNow func() time.Time
	offset  atomic.Int64 // ns of the latest sample; math.MinInt64 before any
}

func newRedisClock(e Engine, nodeNow func() time.Time) *redisClock {
	c := &redisClock{Engine: e, nodeNow: nodeNow}
	c.offset.Store(math.MinInt64)
	return c
}

// Now returns the estimate of Redis's time.
func (c *redisClock) Now() time.Time {
	now := c.nodeNow()
	if off := c.offset.Load(); off != math.MinInt64 {
		return now.Add(time.Duration(off))
	}
	return now
}

// observe records the decision Now of a call that started at start.
func (c *redisClock) observe(start, redisNow time.Time) {
	if !redisNow.IsZero() { // zero: no decision (failure mode open)
		c.offset.Store(int64(redisNow.Sub(start)))
	}
}

// Decide implements Engine, observing the decision's time.
func (c *redisClock) Decide(ctx context.Context, req *limit.Request) (limit.Decision, error) {
	start := c.nodeNow()
	d, err := c.Engine.Decide(ctx, req)
	if err == nil {
		c.observe(start, d.Now)
	}
	return d, err
}

// DecideLookup implements Engine, observing the decision's time.
func (c *redisClock) DecideLookup(ctx context.Context, req *limit.Request, lk *cache.Lookup) (limit.Decision, error) {
	start := c.nodeNow()
	d, err := c.Engine.DecideLookup(ctx, req, lk)
	if err == nil {
		c.observe(start, d.Now)
	}
	return d, err
}
