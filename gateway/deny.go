package gateway

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"tollgate/gateway/limiter"
)

// DefaultDenyEntries bounds the refusal memory when Options.DenyEntries is
// 0: about 200 bytes each, so 64 Ki entries cost some 13 MiB at most.
const DefaultDenyEntries = 64 << 10

// maxDenySkew is how far a decision's time may be from the node's clock
// for its refusal to be remembered. Redis TIME on a synchronised host is
// within milliseconds of it; a decision further off ran on another clock
// (a test clock, or a Redis host whose clock is wrong), on which local
// deadlines cannot be trusted, so it is not remembered.
const maxDenySkew = time.Second

// denyShards is the number of independently locked parts of the refusal
// memory.
const denyShards = 32

// denyCache is the node's refusal memory (DESIGN.md 4.3): after Redis
// refused a request on one of the caller's own limits (plan bucket, plan
// method bucket or quota), later requests on that limit are refused
// locally, without Redis, until the moment it could admit again. It is
// shared by all goroutines and bounded in memory.
//
// Only per-key limits are remembered: a refusal by a shared stage or
// account bucket would answer another caller with this caller's
// rate-limit headers, and shared buckets refill within microseconds at
// the rates they are set to.
//
// Exactness. The moment is the refusal's RetryAfter counted from when
// the request was sent to Redis: the script read Redis TIME after that,
// so the local deadline is never later than the Redis moment the limit
// admits again (the node's view of Redis time is anchored at each send,
// which bounds the offset by one round trip, on the safe side). A
// rate-0 refusal is remembered until cleared. An entry is only used by
// requests compiled from the same snapshot (the stage pointer), so any
// config change makes older entries unusable at once; usage updates and
// full reloads clear entries (Forget*), and a refusal decided before such
// a clear is not stored after it (the generation check).
type denyCache struct {
	seed   maphash.Seed
	gen    atomic.Uint64
	count  atomic.Int64
	limit  int // entries per shard
	shards [denyShards]denyShard
}

type denyShard struct {
	mu sync.RWMutex
	m  map[string]*denyEntry
}

// denyEntry is one remembered refusal.
type denyEntry struct {
	stage         *stageConfig // snapshot it was decided under
	keyID, planID string
	until         time.Time // local; zero: until cleared (rate 0)
	sent          time.Time // when the refused request went to Redis
	dec           limiter.Decision
	plan, quota   limiter.State // copies behind dec.Plan and dec.Quota
}

// newDenyCache returns an empty refusal memory of at most about entries
// entries (DefaultDenyEntries when entries ≤ 0).
func newDenyCache(entries int) *denyCache {
	if entries <= 0 {
		entries = DefaultDenyEntries
	}
	c := &denyCache{seed: maphash.MakeSeed(), limit: max(1, entries/denyShards)}
	for i := range c.shards {
		c.shards[i].m = make(map[string]*denyEntry)
	}
	return c
}

func (c *denyCache) shard(key string) *denyShard {
	return &c.shards[maphash.String(c.seed, key)%denyShards]
}

// generation returns the clear count; read it before asking Redis and
// pass it to remember.
func (c *denyCache) generation() uint64 { return c.gen.Load() }

// lookup returns a refusal for req if one of its per-key limits is
// remembered as refusing at now, in check order (plan or plan-method
// bucket first, then the quota).
func (c *denyCache) lookup(req *limiter.Request, st *stageConfig, now time.Time) (limiter.Decision, bool) {
	if c.count.Load() == 0 {
		return limiter.Decision{}, false
	}
	if b := planBucket(req); b != nil {
		if d, ok := c.get(b.Key, st, now); ok {
			return d, true
		}
	}
	if req.Quota != nil {
		return c.get(req.Quota.Key, st, now)
	}
	return limiter.Decision{}, false
}

// get returns the remembered refusal of key, with RetryAfter and Now
// moved on to now, if it is still in force for stage st.
func (c *denyCache) get(key string, st *stageConfig, now time.Time) (limiter.Decision, bool) {
	sh := c.shard(key)
	sh.mu.RLock()
	e := sh.m[key]
	sh.mu.RUnlock()
	if e == nil || e.stage != st || (!e.until.IsZero() && !now.Before(e.until)) {
		return limiter.Decision{}, false
	}
	d := e.dec
	d.Now = d.Now.Add(now.Sub(e.sent))
	if !d.NoRetry {
		d.RetryAfter = e.until.Sub(now)
	}
	if d.Plan != nil {
		p := e.plan
		d.Plan = &p
	}
	if d.Quota != nil {
		q := e.quota
		d.Quota = &q
	}
	return d, true
}

// remember stores the refusal d of req (sent to Redis at sent, decided
// under stage st) if a per-key limit refused, its time is within
// maxDenySkew of sent, and no clear happened since generation gen was
// read.
func (c *denyCache) remember(req *limiter.Request, st *stageConfig, keyID, planID string, d limiter.Decision, sent time.Time, gen uint64) {
	var key string
	switch d.Refused {
	case limiter.LevelPlan, limiter.LevelPlanMethod:
		key = planBucket(req).Key
	case limiter.LevelQuota:
		key = req.Quota.Key
	default:
		return
	}
	if skew := d.Now.Sub(sent); skew > maxDenySkew || skew < -maxDenySkew {
		return
	}
	e := &denyEntry{stage: st, keyID: keyID, planID: planID, sent: sent, dec: d}
	if !d.NoRetry {
		e.until = sent.Add(d.RetryAfter)
	}
	if d.Plan != nil {
		e.plan = *d.Plan
	}
	if d.Quota != nil {
		e.quota = *d.Quota
	}
	sh := c.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if c.gen.Load() != gen {
		return
	}
	if _, ok := sh.m[key]; !ok {
		if len(sh.m) >= c.limit && !c.evict(sh, sent) {
			return
		}
		c.count.Add(1)
	}
	sh.m[key] = e
}

// evict makes room in a full shard (its lock held): it drops the entries
// that have run out at now, or else one arbitrary entry. It reports
// whether there is room.
func (c *denyCache) evict(sh *denyShard, now time.Time) bool {
	for k, e := range sh.m {
		if !e.until.IsZero() && !now.Before(e.until) {
			delete(sh.m, k)
			c.count.Add(-1)
		}
	}
	for k := range sh.m {
		if len(sh.m) < c.limit {
			break
		}
		delete(sh.m, k)
		c.count.Add(-1)
	}
	return len(sh.m) < c.limit
}

// forget drops every entry for which match is true (nil: all of them).
// The generation moves first, so a refusal decided before the clear is
// not stored after it.
func (c *denyCache) forget(match func(*denyEntry) bool) {
	c.gen.Add(1)
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		for k, e := range sh.m {
			if match == nil || match(e) {
				delete(sh.m, k)
				c.count.Add(-1)
			}
		}
		sh.mu.Unlock()
	}
}

// len returns the number of entries.
func (c *denyCache) len() int { return int(c.count.Load()) }
