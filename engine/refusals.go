package engine

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"tollgate/limit"
	"tollgate/plans"
)

// DefaultRefusalEntries bounds the refusal memory when
// Options.RefusalEntries is 0: about 200 bytes each, so 64 Ki entries cost some 13 MiB at most.
const DefaultRefusalEntries = 64 << 10

// maxRefusalSkew is how far a decision's time may be from the node's clock
// for its refusal to be remembered. Redis TIME on a synchronised host is
// within milliseconds of it; a decision further off ran on another clock
// (a test clock, or a Redis host whose clock is wrong), on which local
// deadlines cannot be trusted, so it is not remembered.
const maxRefusalSkew = time.Second

// refusalShards is the number of independently locked parts of the refusal
// memory.
const refusalShards = 32

// refusals is the node's refusal memory (docs/behaviour.md): after Redis
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
// requests of the same config version (limit.Request.Version), so any
// config change makes older entries unusable at once; usage updates and
// full reloads clear entries (Forget*), and a refusal decided before such
// a clear is not stored after it (the generation check).
type refusals struct {
	seed  maphash.Seed
	gen   atomic.Uint64
	count atomic.Int64
	limit int // entries per shard
	// keep, when not 0, bounds how long a refusal is used: with capacity
	// leases, units and tokens other nodes took may come back before the
	// moment the refusal names (docs/leases.md).
	keep   time.Duration
	shards [refusalShards]refusalShard
}

type refusalShard struct {
	mu sync.RWMutex
	m  map[string]*refusal
}

// refusal is one remembered refusal.
type refusal struct {
	version       int64 // config version it was decided under
	keyID, planID string
	until         time.Time // local; zero: until cleared (rate 0)
	forget        time.Time // local; not used from then on (zero: never)
	sent          time.Time // when the refused request went to Redis
	dec           limit.Decision
	plan, quota   limit.State // copies behind dec.Plan and dec.Quota
}

// newRefusals returns an empty refusal memory of at most about entries
// entries (DefaultRefusalEntries when entries ≤ 0).
func newRefusals(entries int) *refusals {
	if entries <= 0 {
		entries = DefaultRefusalEntries
	}
	c := &refusals{seed: maphash.MakeSeed(), limit: max(1, entries/refusalShards)}
	for i := range c.shards {
		c.shards[i].m = make(map[string]*refusal)
	}
	return c
}

func (c *refusals) shard(key string) *refusalShard {
	return &c.shards[maphash.String(c.seed, key)%refusalShards]
}

// generation returns the clear count; read it before asking Redis and
// pass it to remember.
func (c *refusals) generation() uint64 { return c.gen.Load() }

// lookup returns a refusal for req if one of its per-key limits is
// remembered as refusing at now, in check order (plan or plan-method
// bucket first, then the quota).
func (c *refusals) lookup(req *keyedRequest, version int64, now time.Time) (limit.Decision, bool) {
	if c.count.Load() == 0 {
		return limit.Decision{}, false
	}
	if i := req.planIndex(); i >= 0 {
		if d, ok := c.get(req.Buckets[i].Key, version, now); ok {
			return d, true
		}
	}
	if req.Quota != nil {
		return c.get(req.Quota.Key, version, now)
	}
	return limit.Decision{}, false
}

// get returns the remembered refusal of key, with RetryAfter and Now
// moved on to now, if it is still in force for config version version.
func (c *refusals) get(key string, version int64, now time.Time) (limit.Decision, bool) {
	sh := c.shard(key)
	sh.mu.RLock()
	e := sh.m[key]
	sh.mu.RUnlock()
	if e == nil || e.version != version || (!e.until.IsZero() && !now.Before(e.until)) ||
		(!e.forget.IsZero() && !now.Before(e.forget)) {
		return limit.Decision{}, false
	}
	d := e.dec
	d.Remembered = true
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

// remember stores the refusal d of req (resolved from lr, sent to Redis at
// sent) if a per-key limit refused, its time is within
// maxRefusalSkew of sent, and no clear happened since generation gen was
// read.
func (c *refusals) remember(req *keyedRequest, lr *limit.Request, d limit.Decision, sent time.Time, gen uint64) {
	var key string
	switch d.Refused {
	case limit.LevelPlan, limit.LevelPlanMethod:
		key = req.Buckets[req.planIndex()].Key
	case limit.LevelQuota:
		key = req.Quota.Key
	default:
		return
	}
	if skew := d.Now.Sub(sent); skew > maxRefusalSkew || skew < -maxRefusalSkew {
		return
	}
	e := &refusal{version: lr.Version, keyID: lr.KeyID, planID: lr.PlanID, sent: sent, dec: d}
	if !d.NoRetry {
		e.until = sent.Add(d.RetryAfter)
	}
	if c.keep > 0 {
		e.forget = sent.Add(c.keep)
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
func (c *refusals) evict(sh *refusalShard, now time.Time) bool {
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
func (c *refusals) forget(match func(*refusal) bool) {
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
func (c *refusals) len() int { return int(c.count.Load()) }

// ForgetChange clears the refusal memory a config change may have made
// wrong (push.ReaderOptions.OnEvent). A change that carries a new snapshot
// (plan, stage, account or API edits) clears everything: requests of the
// new version could not use older entries anyway. A change of key records
// alone clears nothing: it changes no limit's state, and a key that moves
// to another plan is decided on that plan's own Redis keys. Every change
// ends every open capacity lease (docs/leases.md), key records included (a
// disabled key gives its leases back at once).
func (e *Engine) ForgetChange(c plans.Change) {
	if c.Snapshot || len(c.Plans) > 0 || len(c.Stages) > 0 {
		e.refusals.forget(nil)
	}
	if e.leases != nil {
		e.leases.void(nil, false)
	}
}

// ForgetUsage clears the remembered refusals of keyID in planID after its
// usage was updated (UpdateUsage; push.ReaderOptions.OnUsage), and ends
// its open capacity leases without giving their quota units back (the
// quota was set since the take).
func (e *Engine) ForgetUsage(planID, keyID string) {
	e.refusals.forget(func(r *refusal) bool { return r.keyID == keyID && r.planID == planID })
	if e.leases != nil {
		usage := e.keys.Usage(keyID, planID)
		e.leases.void(func(l *lease) bool { return l.req.UsageKey == usage }, true)
	}
}

// ForgetAll clears all refusal memory and ends every open capacity lease
// (push.ReaderOptions.OnReload: events may have been missed, or Redis may
// have lost its counters).
func (e *Engine) ForgetAll() {
	e.refusals.forget(nil)
	if e.leases != nil {
		e.leases.void(nil, false)
	}
}
