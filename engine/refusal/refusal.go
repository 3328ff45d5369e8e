// Package refusal is the limiter layer that remembers refusals
// (docs/behaviour.md): after the layers below refused a request on one of
// the caller's own limits (plan bucket, plan method bucket or quota),
// later requests on that limit are refused on the node, without Redis,
// until the moment it could admit again. So a client that keeps calling
// while refused costs no round trip.
//
// Only per-key limits are remembered: a refusal by a shared stage or
// account bucket would answer another caller with this caller's
// rate-limit headers, and shared buckets refill within microseconds at the
// rates they are set to.
//
// Exactness. The moment is the refusal's RetryAfter counted from when the
// request was sent below: Redis read its time after that, so the local
// deadline is never later than the Redis moment the limit admits again (the
// node's view of Redis time is anchored at each send, which bounds the
// offset by one round trip, on the safe side). A rate-0 refusal is
// remembered until cleared. An entry answers only requests of the same
// config version (limit.Request.Version), so any config change makes older
// entries unusable at once; usage updates and full reloads clear entries
// (Forget*), and a refusal decided before such a clear is not stored after
// it (the generation check).
package refusal

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"tollgate/limit"
	"tollgate/plans"
)

// DefaultEntries bounds the memory when Options.Entries is 0: about 200
// bytes each.
const DefaultEntries = 64 << 10

// maxSkew is how far a decision's time may be from the node's clock for
// its refusal to be remembered. Redis TIME on a synchronised host is within
// milliseconds of it; a decision further off ran on another clock (a test
// clock, or a Redis host whose clock is wrong), on which local deadlines
// cannot be trusted, so it is not remembered.
const maxSkew = time.Second

// shards is the number of independently locked parts of the memory.
const shards = 32

// Options configures a Memory; the zero value gives the defaults.
type Options struct {
	// Entries bounds the memory; 0 means DefaultEntries.
	Entries int
	// Keep, when not 0, bounds how long a refusal is used: with capacity
	// leases, units other nodes took may come back before the moment a
	// refusal names (docs/leases.md).
	Keep time.Duration
}

// Memory is a node's refusal memory, shared by all goroutines and bounded.
// Create it with New; Layer stacks it on a decider.
type Memory struct {
	seed   maphash.Seed
	gen    atomic.Uint64
	count  atomic.Int64
	limit  int // entries per shard
	keep   time.Duration
	shards [shards]shard
}

type shard struct {
	mu sync.RWMutex
	m  map[key]*entry
}

// key names one per-key limit: a plan bucket, a plan method bucket or a
// quota.
type key struct {
	level                    limit.Level
	keyID, planID            string
	api, stage, method, path string // a plan method bucket's
}

// entry is one remembered refusal.
type entry struct {
	version     int64     // config version it was decided under
	until       time.Time // local; zero: until cleared (rate 0)
	forget      time.Time // local; not used from then on (zero: never)
	sent        time.Time // when the refused request went below
	dec         limit.Decision
	plan, quota limit.State // copies behind dec.Plan and dec.Quota
}

// New returns an empty refusal memory.
func New(opts Options) *Memory {
	if opts.Entries <= 0 {
		opts.Entries = DefaultEntries
	}
	m := &Memory{seed: maphash.MakeSeed(), limit: max(1, opts.Entries/shards), keep: opts.Keep}
	for i := range m.shards {
		m.shards[i].m = make(map[key]*entry)
	}
	return m
}

// Layer stacks the memory on next (limit.Layer).
func (m *Memory) Layer(next limit.Decider) limit.Decider { return &decider{m: m, next: next} }

type decider struct {
	m    *Memory
	next limit.Decider
}

// Decide answers req from the memory when one of its per-key limits is
// remembered refusing now (Decision.Remembered); else it asks next and
// remembers a refusal of a per-key limit.
func (d *decider) Decide(ctx context.Context, req *limit.Request) (limit.Decision, error) {
	m := d.m
	gen, sent := m.gen.Load(), time.Now()
	if dec, ok := m.lookup(req, sent); ok {
		return dec, nil
	}
	dec, err := d.next.Decide(ctx, req)
	if err == nil && !dec.Allowed && req.KeyID != "" {
		m.remember(req, dec, sent, gen)
	}
	return dec, err
}

func (m *Memory) shard(k *key) *shard {
	var h maphash.Hash
	h.SetSeed(m.seed)
	h.WriteString(k.keyID)
	h.WriteString(k.planID)
	return &m.shards[h.Sum64()%shards]
}

// planKey and quotaKey name req's plan (or plan method) bucket and quota.
func planKey(req *limit.Request) (key, bool) {
	b := req.PlanBucket()
	if b == nil {
		return key{}, false
	}
	k := key{level: b.Level, keyID: req.KeyID, planID: req.PlanID}
	if b.Level == limit.LevelPlanMethod {
		k.api, k.stage, k.method, k.path = req.API, req.Stage, b.Method, b.Path
	}
	return k, true
}

func quotaKey(req *limit.Request) key {
	return key{level: limit.LevelQuota, keyID: req.KeyID, planID: req.PlanID}
}

// lookup returns a refusal of req if one of its per-key limits is
// remembered as refusing at now, in check order (plan or plan-method
// bucket first, then the quota).
func (m *Memory) lookup(req *limit.Request, now time.Time) (limit.Decision, bool) {
	if m.count.Load() == 0 || req.KeyID == "" {
		return limit.Decision{}, false
	}
	if k, ok := planKey(req); ok {
		if d, ok := m.get(&k, req.Version, now); ok {
			return d, true
		}
	}
	if req.Quota != nil {
		k := quotaKey(req)
		return m.get(&k, req.Version, now)
	}
	return limit.Decision{}, false
}

// get returns the remembered refusal of k, with RetryAfter and Now moved
// on to now, if it is still in force for config version version.
func (m *Memory) get(k *key, version int64, now time.Time) (limit.Decision, bool) {
	sh := m.shard(k)
	sh.mu.RLock()
	e := sh.m[*k]
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

// remember stores the refusal d of req (sent below at sent) if a per-key
// limit refused, its time is within maxSkew of sent, and no clear happened
// since generation gen was read.
func (m *Memory) remember(req *limit.Request, d limit.Decision, sent time.Time, gen uint64) {
	var k key
	switch d.Refused {
	case limit.LevelPlan, limit.LevelPlanMethod:
		var ok bool
		if k, ok = planKey(req); !ok {
			return
		}
	case limit.LevelQuota:
		if req.Uncounted {
			// a settle after a response may give its units back (a
			// settled cost, tollgate:quota-counts=non-5xx): it could
			// admit again before its period ends
			return
		}
		k = quotaKey(req)
	default:
		return
	}
	if skew := d.Now.Sub(sent); skew > maxSkew || skew < -maxSkew {
		return
	}
	e := &entry{version: req.Version, sent: sent, dec: d}
	if !d.NoRetry {
		e.until = sent.Add(d.RetryAfter)
	}
	if m.keep > 0 {
		e.forget = sent.Add(m.keep)
	}
	if d.Plan != nil {
		e.plan = *d.Plan
	}
	if d.Quota != nil {
		e.quota = *d.Quota
	}
	sh := m.shard(&k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if m.gen.Load() != gen {
		return
	}
	if _, ok := sh.m[k]; !ok {
		if len(sh.m) >= m.limit && !m.evict(sh, sent) {
			return
		}
		m.count.Add(1)
	}
	sh.m[k] = e
}

// evict makes room in a full shard (its lock held): it drops the entries
// that have run out at now, or else one arbitrary entry. It reports
// whether there is room.
func (m *Memory) evict(sh *shard, now time.Time) bool {
	for k, e := range sh.m {
		if !e.until.IsZero() && !now.Before(e.until) {
			delete(sh.m, k)
			m.count.Add(-1)
		}
	}
	for k := range sh.m {
		if len(sh.m) < m.limit {
			break
		}
		delete(sh.m, k)
		m.count.Add(-1)
	}
	return len(sh.m) < m.limit
}

// forget drops every entry for which match is true (nil: all of them).
// The generation moves first, so a refusal decided before the clear is
// not stored after it.
func (m *Memory) forget(match func(*key) bool) {
	m.gen.Add(1)
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		for k := range sh.m {
			if match == nil || match(&k) {
				delete(sh.m, k)
				m.count.Add(-1)
			}
		}
		sh.mu.Unlock()
	}
}

// Len returns the number of entries.
func (m *Memory) Len() int { return int(m.count.Load()) }

// ForgetChange clears the memory a config change may have made wrong
// (push.ReaderOptions.OnEvent). A change that carries a new snapshot
// (plan, stage, account or API edits) clears everything: requests of the
// new version could not use older entries anyway. A change of key records
// alone clears nothing: it changes no limit's state, and a key that moves
// to another plan is decided on that plan's own state.
func (m *Memory) ForgetChange(c plans.Change) {
	if c.Snapshot || len(c.Plans) > 0 || len(c.Stages) > 0 {
		m.forget(nil)
	}
}

// ForgetUsage clears the remembered refusals of keyID in planID after its
// usage was updated (UpdateUsage; push.ReaderOptions.OnUsage).
func (m *Memory) ForgetUsage(planID, keyID string) {
	m.forget(func(k *key) bool { return k.keyID == keyID && k.planID == planID })
}

// ForgetAll clears the memory (push.ReaderOptions.OnReload: events may
// have been missed, or Redis may have lost its counters).
func (m *Memory) ForgetAll() { m.forget(nil) }
