package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"

	"tollgate/cache"
	"tollgate/limit"
)

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
// pipeline it shares with the other requests admitted so meanwhile and
// the fills of the cache Redis, with no limiter script run, under
// Options.Timeout (pipeBatch).
func (e *Engine) DecideLookup(ctx context.Context, top limit.Decider, req *limit.Request, lk *cache.Lookup) (limit.Decision, error) {
	c := e.cache
	st := c.stage(req.API, req.Stage)
	lk.Request.Generation = st.gen.Load()
	digest := cache.Digest(lk.Params, &lk.Request)
	al := &lookupAlong{c: c, st: st, key: c.keys.CacheEntry(digest), header: lk.Request.Header, refresh: lk.Refresh}
	req.Along = al
	d, err := top.Decide(ctx, req)
	req.Along = nil
	if !al.done && err == nil && d.Allowed { // decided without a round trip: read with others
		c.limiterPipes.do(false, 0, al.queue)
	}
	al.parallel.Wait()
	lk.Digest, lk.Entry, lk.Err = "", nil, nil
	gen, genErr := generation(al.gen, err)
	if genErr != nil {
		lk.Err = genErr
		return d, err
	}
	if al.read.cmd != nil {
		lk.Entry, lk.Err = al.read.result(ctx, c)
	}
	if gen != lk.Request.Generation { // flushed since this node last looked
		st.gen.Store(gen)
		lk.Request.Generation = gen
		lk.Entry = nil
		digest = cache.Digest(lk.Params, &lk.Request)
		if !lk.Refresh && lk.Err == nil && d.Allowed { // another node may have filled it already
			// a deadline of its own: the decision may have waited in the queue
			gctx, cancel := context.WithTimeout(ctx, c.timeout)
			lk.Entry, lk.Err = c.get(gctx, c.keys.CacheEntry(digest), lk.Request.Header)
			cancel()
		}
	}
	lk.Digest = digest
	return d, err
}

// lookupAlong is the cache read of a DecideLookup (limit.Request.Along):
// queued in the round trip of its decision, or with the reads of other
// requests when the decision took none. It reads the stage's generation
// and, unless refresh, the entry key's variant for header: on the same
// pipeline when the cache Redis is the limiter Redis, else in parallel,
// in a pipeline shared with other reads and fills of the cache Redis.
type lookupAlong struct {
	c       *entries
	st      *stageCache
	key     string
	header  http.Header
	refresh bool

	done     bool // queued
	gen      *redis.StringCmd
	read     entryRead // cmd nil when not read
	parallel sync.WaitGroup
}

// Done reports whether the read was queued (limit.Along).
func (a *lookupAlong) Done() bool { return a.done }

// queue queues the read on p (the limiter Redis).
func (a *lookupAlong) queue(ctx context.Context, p redis.Pipeliner) {
	a.done = true
	a.gen = genRead(ctx, p, a.st.genKey)
	switch {
	case a.refresh:
	case a.c.shared:
		a.read.queue(ctx, p, a.key, a.header)
	default:
		a.parallel.Go(func() {
			a.c.cachePipes.do(false, 0, func(ctx context.Context, p redis.Pipeliner) { a.read.queue(ctx, p, a.key, a.header) })
		})
	}
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
	s, err := genCmd.Result() // GETRANGE: "" when never flushed, never nil
	if err == nil && s == "" {
		return 0, nil
	}
	if err == nil {
		var gen int64
		if gen, err = strconv.ParseInt(s, 10, 64); err == nil {
			return gen, nil
		}
	}
	return 0, fmt.Errorf("engine: stage cache generation: %w", err)
}

// Fill stores entry ent as the variant of lk's entry for its request
// header (by the Vary names of ent.Header) and sets the key's expiry to
// ent.TTL plus ent.Keep (its stale windows: the entry outlives its
// freshness, which it records itself, see cache.Entry.Expires), in one
// atomic script run; concurrent fills share a pipeline (pipeBatch),
// which waits at most fillTimeout, whatever ctx allows once the fill is
// queued, or with cache reads, under theirs (Options.Timeout: a fill
// never makes a read wait longer).
// lk is a Lookup DecideLookup filled; the caller checked
// cache.Storable. Older variants keep their own Stored and TTL, and the
// caller checks each one's freshness. Errors come from Redis, or say that the
// cache Redis (one master of a cluster) is near maxmemory without eviction
// and the entry was not stored, or that lk has no digest.
func (e *Engine) Fill(ctx context.Context, lk *cache.Lookup, ent *cache.Entry) error {
	if lk.Digest == "" {
		return errors.New("engine: fill: the lookup has no digest (generation unknown)")
	}
	return e.cache.put(ctx, e.cache.keys.CacheEntry(lk.Digest), lk.Request.Header, ent)
}
