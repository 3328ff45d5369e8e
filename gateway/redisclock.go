package gateway

import (
	"context"
	"math"
	"sync/atomic"
	"time"

	"tollgate/cache"
	"tollgate/limit"
)

// clockWindow is how long one window of the Redis clock's offset samples
// lasts; the estimate uses the current and the previous window, so a
// change of either clock is followed within two windows.
const clockWindow = 10 * time.Second

// redisClock wraps the Engine and learns Redis's clock from the Now of its
// decisions, so that the key check judges expiry on Redis time, the clock
// of everything that limits usage (docs/behaviour.md, "Key lifecycle").
//
// A decision's Now was read by Redis after the call started, so
// Now - start is never less than Redis's true offset from this node's
// clock; the smallest such sample of the last one or two windows is the
// tightest such bound. An estimate on the late side refuses an expiring key
// early by at most one decision's wait, never late. Before any decision
// (or when Redis is down from the start) the node's own clock stands in.
type redisClock struct {
	Engine
	nodeNow func() time.Time
	started atomic.Int64 // unix ns the current window started; 0 before any sample
	cur     atomic.Int64 // smallest offset (ns) of the current window; math.MaxInt64 none
	prev    atomic.Int64 // of the previous window
}

func newRedisClock(e Engine, nodeNow func() time.Time) *redisClock {
	c := &redisClock{Engine: e, nodeNow: nodeNow}
	c.cur.Store(math.MaxInt64)
	c.prev.Store(math.MaxInt64)
	return c
}

// Now returns the estimate of Redis's time.
func (c *redisClock) Now() time.Time {
	now := c.nodeNow()
	off := min(c.cur.Load(), c.prev.Load())
	if off == math.MaxInt64 {
		return now
	}
	return now.Add(time.Duration(off))
}

// observe records the decision Now of a call that started at start.
func (c *redisClock) observe(start, redisNow time.Time) {
	if redisNow.IsZero() {
		return // no decision (failure mode open, or a refusal before Redis)
	}
	off := int64(redisNow.Sub(start))
	at := start.UnixNano()
	if w := c.started.Load(); at-w >= int64(clockWindow) && c.started.CompareAndSwap(w, at) {
		c.prev.Store(c.cur.Swap(math.MaxInt64))
	}
	for {
		old := c.cur.Load()
		if off >= old || c.cur.CompareAndSwap(old, off) {
			return
		}
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
