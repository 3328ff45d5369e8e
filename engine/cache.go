package engine

import (
	"context"
	_ "embed"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/cache"
	"tollgate/keyspace"
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
	keys    keyspace.Space
	rdb     redis.UniversalClient // the cache Redis
	limiter redis.UniversalClient // the limiter Redis: generations
	shared  bool                  // the cache Redis is the limiter Redis: one pipeline
	timeout time.Duration         // of a cache read (Options.Timeout)

	stages *memo[stageRef, *stageCache]
	memory *memoryGuard
	// limiterPipes carries the reads of requests admitted without a round
	// trip (generation, and entry when shared), under the cache's timeout;
	// cachePipes the entry reads on a cache Redis of its own and the fills
	// (fillTimeout). Shared: one pipeBatch, so that reads and fills ride
	// the same round trips.
	limiterPipes, cachePipes *pipeBatch
}

// stageRef names one stage.
type stageRef struct{ api, stage string }

// stageCache is one stage's cache state on this node: the last generation
// seen and the Redis key it is read from.
type stageCache struct {
	gen    atomic.Int64
	genKey string
}

func newEntries(keys keyspace.Space, rdb, limiter redis.UniversalClient, timeout, memoryCheck time.Duration) *entries {
	stages := newMemo(maxNames, func(r stageRef) *stageCache {
		return &stageCache{genKey: keys.CacheGeneration(r.api, r.stage)}
	})
	c := &entries{keys: keys, rdb: rdb, limiter: limiter, shared: rdb == limiter, timeout: timeout, stages: stages, memory: newMemoryGuard(rdb, memoryCheck),
		limiterPipes: &pipeBatch{rdb: limiter, timeout: timeout}, cachePipes: &pipeBatch{rdb: rdb, timeout: timeout}}
	if c.shared {
		c.cachePipes = c.limiterPipes
	}
	return c
}

// stage returns the cache state of (api, stage), created on first use (the
// generation outlives config snapshots; a state dropped when the cache of
// states started again only costs its stage's next request a second entry
// read).
func (c *entries) stage(api, stage string) *stageCache {
	return c.stages.get(stageRef{api, stage})
}

// entryRead is an entry read (EVALSHA of lookup.lua).
type entryRead struct {
	args []any // the command's, sent again after NOSCRIPT
	cmd  *redis.Cmd
}

// Script hashes as command arguments, boxed once.
var lookupHash, storeHash any = lookupScript.Hash(), storeScript.Hash()

// queue sends the read of entry key's variant for request header h on p
// (a pipeline: run it, then call result; or a client).
func (r *entryRead) queue(ctx context.Context, p processor, key string, h http.Header) {
	r.args = []any{"evalsha", lookupHash, 1, key, headerArg(h)}
	r.cmd = sendScript(ctx, p, r.args)
}

// result returns the entry read, nil without an error when there is none
// (stale entries are returned: check Entry.Fresh). A NOSCRIPT reply (a
// restarted or flushed cache Redis) loads the script on the cache Redis
// and reads again under ctx, within the cache's timeout
// (againOnNoScript). An error means the cache Redis did not answer or the
// entry is corrupt.
func (r *entryRead) result(ctx context.Context, c *entries) (*cache.Entry, error) {
	s, err := againOnNoScript(ctx, c.rdb, lookupScript, r.cmd, c.timeout, func(ctx context.Context) *redis.Cmd {
		return sendScript(ctx, c.rdb, r.args)
	}).Text()
	if err == nil && s == "" { // lookup.lua answers '' for no entry
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
	var r entryRead
	r.queue(ctx, c.rdb, key, h)
	return r.result(ctx, c)
}

// put stores e as the variant of entry key for request header h; see Fill.
func (c *entries) put(ctx context.Context, key string, h http.Header, e *cache.Entry) error {
	if c.memory.full() {
		return errCacheFull
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("engine: cache store %s: %w", key, err)
	}
	names, _ := cache.VaryNames(e.Header)
	enc := e.Encode()
	args := []any{"evalsha", storeHash, 1, key, strings.Join(names, ","), cache.Variant(names, h), enc, max((e.TTL + e.Keep).Milliseconds(), 1)}
	var cmd *redis.Cmd
	c.cachePipes.do(true, len(enc), func(ctx context.Context, p redis.Pipeliner) {
		cmd = sendScript(ctx, p, args)
	})
	if cmd == nil {
		return fmt.Errorf("engine: cache store %s: not sent", key)
	}
	cmd = againOnNoScript(ctx, c.rdb, storeScript, cmd, fillTimeout, func(ctx context.Context) *redis.Cmd { return sendScript(ctx, c.rdb, args) })
	if err := cmd.Err(); err != nil {
		return fmt.Errorf("engine: cache store %s: %w", key, err)
	}
	return nil
}

// fillTimeout bounds a fill: a pipeline of fills alone (one with cache
// reads has the reads' deadline), and its second try after NOSCRIPT.
const fillTimeout = time.Second

// storeScript writes one entry variant and the entry's expiry in one
// atomic run (one key: one slot on Redis Cluster), so fills of concurrent
// requests can share a pipeline; fills send its SHA1 (EVALSHA). KEYS[1]
// the entry; ARGV the Vary names, the variant's field, its encoding, the
// expiry in ms.
var storeScript = redis.NewScript(`redis.call('HSET', KEYS[1], 'vary', ARGV[1], ARGV[2], ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1`)

// headerArg flattens a request header into lookup.lua's ARGV[1]: one line
// "<lowercase name>:<VaryValue>\n" per header (HTTP forbids line breaks in
// names and values, and ':' in names). Credentials go as VaryValue's
// digests, never as themselves, exactly as Fill names variants.
func headerArg(h http.Header) string {
	n := 0
	for k, vs := range h { // about the size: a credential's digest may be longer
		n += len(k) + 2 + 64
		for _, v := range vs {
			n += len(v) + 2
		}
	}
	var b strings.Builder
	b.Grow(n)
	for k := range h {
		v, _ := cache.VaryValue(h, k)
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
