package engine

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/cache"
	"tollgate/internal/redisscript"
	"tollgate/limit"
)

//go:embed lookup.lua
var lookupSource string

// lookupScript is lookup.lua, hashed once: lookups send its SHA1
// (EVALSHA), not its text.
var lookupScript = redis.NewScript(lookupSource)

// entries is the engine's side of the stage response cache
// (docs/behaviour.md, "Response cache"): entries in the cache Redis, one
// hash per entry key holding the stored response's Vary names and one
// field per variant (cache.Variant), expiring with the entry's TTL; and
// the stage cache generations, which live in the limiter Redis (the admin
// bumps them: push.Publisher.FlushStageCache) and are read in the round
// trip of each caching request's limit decision, with the last generation
// seen per stage kept on this node.
type entries struct {
	e      *Engine
	rdb    redis.UniversalClient
	shared bool // the cache Redis is the limiter Redis: one pipeline

	stages *lockFreeMap[stageRef, *stageCache]

	memoryCheck time.Duration
	full        atomic.Bool  // the last memory check found the Redis full
	checked     atomic.Int64 // Unix ns of the last memory check
	checking    atomic.Bool
}

// stageRef names one stage.
type stageRef struct{ api, stage string }

// stageCache is one stage's cache state on this node: the last generation
// seen and the Redis key it is read from.
type stageCache struct {
	gen    atomic.Int64
	genKey string
}

func newEntries(e *Engine, rdb redis.UniversalClient, memoryCheck time.Duration) *entries {
	if memoryCheck <= 0 {
		memoryCheck = DefaultCacheMemoryCheck
	}
	keys := e.keys
	stages := newLockFreeMap(maxNames, func(r stageRef) *stageCache {
		return &stageCache{genKey: keys.CacheGeneration(r.api, r.stage)}
	})
	return &entries{e: e, rdb: rdb, shared: rdb == e.rdb, stages: stages, memoryCheck: memoryCheck}
}

// stage returns the cache state of (api, stage), created on first use (the
// generation outlives config snapshots; a state dropped when the cache of
// states started again only costs its stage's next request a second entry
// read).
func (c *entries) stage(api, stage string) *stageCache {
	return c.stages.get(stageRef{api, stage})
}

// DecideLookup is Decide for a request of a caching method: in the same
// round trip (one per Redis server) it reads the stage's cache generation
// and, unless lk.Refresh, the entry of lk, and fills lk's outputs (see
// cache.Lookup). The decision waits as Decide's (once sent, for its run);
// the cache reads beside and after it run under Options.Timeout. A
// refused request reads no more than that; an admitted one whose stage was
// flushed since this node last looked reads its entry once more, under the
// new generation (only the first request after a flush). The decision and
// its error are Decide's; cache read errors go to lk.Err.
//
// The decision is top's (the layers stacked on the engine): when a layer
// answers without a round trip (a capacity lease admits, or a refusal is
// remembered), an admitted request reads the generation and entry in a
// round trip of its own.
func (e *Engine) DecideLookup(ctx context.Context, top limit.Decider, req *limit.Request, lk *cache.Lookup) (limit.Decision, error) {
	callCtx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	c := e.cache
	st := c.stage(req.API, req.Stage)
	lk.Request.Generation = st.gen.Load()
	digest := cache.Digest(lk.Params, &lk.Request)
	key := e.keys.CacheEntry(digest)
	var (
		genCmd   *redis.StringCmd
		read     *entryRead // queued on the decision's pipeline or read in parallel
		parallel sync.WaitGroup
	)
	al := &lookupAlong{fn: func(ctx context.Context, p redis.Pipeliner) { // ctx: the run's
		genCmd = p.Get(ctx, st.genKey)
		switch {
		case lk.Refresh:
		case c.shared:
			read = queueLookup(ctx, p, key, lk.Request.Header)
		default: // the cache Redis in parallel, under this call's deadline (the batch's ends with its run)
			parallel.Go(func() {
				cp := c.rdb.Pipeline()
				r := queueLookup(callCtx, cp, key, lk.Request.Header)
				_, _ = cp.Exec(callCtx)
				read = r
			})
		}
	}}
	req.Along = al
	d, err := top.Decide(ctx, req)
	req.Along = nil
	if !al.done && err == nil && d.Allowed { // decided without a round trip
		p := e.rdb.Pipeline()
		al.queue(callCtx, p)
		_, _ = p.Exec(callCtx)
	}
	parallel.Wait()
	// The entry reads after the decision get a deadline of their own: the
	// decision may have waited in the queue.
	ctx, cancel = context.WithTimeout(ctx, e.timeout)
	defer cancel()
	lk.Digest, lk.Entry, lk.Err = "", nil, nil
	gen, genErr := generation(genCmd, err)
	if genErr != nil {
		lk.Err = genErr
		return d, err
	}
	if read != nil {
		lk.Entry, lk.Err = read.result(ctx, c.rdb)
	}
	if gen != lk.Request.Generation { // flushed since this node last looked
		st.gen.Store(gen)
		lk.Request.Generation = gen
		lk.Entry = nil
		digest = cache.Digest(lk.Params, &lk.Request)
		key = e.keys.CacheEntry(digest)
		if !lk.Refresh && lk.Err == nil && d.Allowed { // another node may have filled it already
			lk.Entry, lk.Err = c.get(ctx, key, lk.Request.Header)
		}
	}
	lk.Digest = digest
	return d, err
}

// lookupAlong is a cache read done in the round trip of a decision
// (limit.Request.Along): fn queues it on the decision's pipeline.
type lookupAlong struct {
	fn   func(ctx context.Context, p redis.Pipeliner)
	done bool
}

// Done reports whether the read was queued (limit.Along).
func (a *lookupAlong) Done() bool { return a.done }

// queue queues the read on p.
func (a *lookupAlong) queue(ctx context.Context, p redis.Pipeliner) {
	a.done = true
	a.fn(ctx, p)
}

// errNoGeneration is the cache error of a request whose decision never
// ran (refused from memory, or its deadline passed while queued).
var errNoGeneration = errors.New("engine: stage cache generation not read")

// generation returns the generation genCmd read; an error when it could
// not be read or the decision failed (decErr): then nothing may be served
// or stored.
func generation(genCmd *redis.StringCmd, decErr error) (int64, error) {
	if decErr != nil {
		return 0, decErr
	}
	if genCmd == nil {
		return 0, errNoGeneration
	}
	gen, err := genCmd.Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil // never flushed
	}
	if err != nil {
		return 0, fmt.Errorf("engine: stage cache generation: %w", err)
	}
	return gen, nil
}

// Fill stores entry ent as the variant of lk's entry for its request
// header (by the Vary names of ent.Header) and sets the key's expiry to
// ent.TTL plus ent.Keep (its stale windows: the entry outlives its
// freshness, which it records itself, see cache.Entry.Expires), in one
// MULTI. lk is a Lookup DecideLookup filled; the caller checked
// cache.Storable. Older variants keep their own Stored and TTL, and the
// caller checks each one's freshness. Errors come from Redis, or say that the
// cache Redis (one master of a cluster) is near maxmemory without eviction
// and the entry was not stored, or that lk has no digest.
func (e *Engine) Fill(ctx context.Context, lk *cache.Lookup, ent *cache.Entry) error {
	if lk.Digest == "" {
		return errors.New("engine: fill: the lookup has no digest (generation unknown)")
	}
	return e.cache.put(ctx, e.keys.CacheEntry(lk.Digest), lk.Request.Header, ent)
}

// entryRead is an entry read queued on a pipeline by queueLookup.
type entryRead struct {
	key string
	arg string
	cmd *redis.Cmd
}

// queueLookup adds the read of entry key's variant for request header h
// to pipe (EVALSHA of lookup.lua). Run pipe, then call result.
func queueLookup(ctx context.Context, pipe redis.Pipeliner, key string, h http.Header) *entryRead {
	r := &entryRead{key: key, arg: headerArg(h)}
	r.cmd = lookupScript.EvalSha(ctx, pipe, []string{key}, r.arg)
	return r
}

// result returns the entry read, nil without an error when there is none
// (stale entries are returned: check Entry.Fresh). A NOSCRIPT reply (a
// restarted or flushed cache Redis; go-redis cannot fall back inside a
// pipeline) loads the script on rdb and reads again under ctx
// (redisscript.Reload). An error means the cache Redis did not answer or
// the entry is corrupt.
func (r *entryRead) result(ctx context.Context, rdb redis.UniversalClient) (*cache.Entry, error) {
	s, err := r.cmd.Text()
	if again, rerr := redisscript.Reload(ctx, rdb, lookupScript, err); rerr != nil {
		err = rerr
	} else if again {
		s, err = lookupScript.EvalSha(ctx, rdb, []string{r.key}, r.arg).Text()
	}
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("engine: cache lookup: %w", err)
	}
	return cache.DecodeEntry([]byte(s))
}

// get reads entry key's variant for request header h in its own round
// trip; see entryRead.result.
func (c *entries) get(ctx context.Context, key string, h http.Header) (*cache.Entry, error) {
	pipe := c.rdb.Pipeline()
	r := queueLookup(ctx, pipe, key, h)
	_, _ = pipe.Exec(ctx)
	return r.result(ctx, c.rdb)
}

// put stores e as the variant of entry key for request header h; see Fill.
func (c *entries) put(ctx context.Context, key string, h http.Header, e *cache.Entry) error {
	c.maybeCheckMemory()
	if c.full.Load() {
		return errCacheFull
	}
	names, _ := cache.VaryNames(e.Header)
	_, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, "vary", strings.Join(names, ","), cache.Variant(names, h), e.Encode())
		p.PExpire(ctx, key, e.TTL+e.Keep)
		return nil
	})
	if err != nil {
		return fmt.Errorf("engine: cache store %s: %w", key, err)
	}
	return nil
}

// headerArg flattens a request header into lookup.lua's ARGV[1]: one line
// "<lowercase name>:<VaryValue>\n" per header (HTTP forbids line breaks in
// names and values, and ':' in names). Credentials go as VaryValue's
// digests, never as themselves, exactly as Fill names variants.
func headerArg(h http.Header) string {
	var b strings.Builder
	for k := range h {
		v, _ := cache.VaryValue(h, k)
		b.Grow(len(k) + len(v) + 2)
		for i := 0; i < len(k); i++ {
			c := k[i]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b.WriteByte(c)
		}
		b.WriteByte(':')
		b.WriteString(v)
		b.WriteByte('\n')
	}
	return b.String()
}
