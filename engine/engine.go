package engine

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redisscript"
	"tollgate/keyspace"
)

// DefaultTimeout is how long decisions fail at once after Redis was found
// down, when Options.Timeout is 0 (TOLLGATE_REDIS_TIMEOUT's default,
// docs/operations.md).
const DefaultTimeout = 50 * time.Millisecond

// DefaultLeaseHold is Options.LeaseHold's default: twice the longest
// capacity lease (docs/leases.md).
const DefaultLeaseHold = 200 * time.Millisecond

// Options configures an Engine; the zero value gives the defaults.
type Options struct {
	// Prefix of every Redis key name; "" means keyspace.DefaultPrefix
	// ("tg"). Tests use a unique prefix each.
	Prefix string
	// Timeout is how long decisions fail at once (ErrRedisDown) after a
	// run failed because Redis did not answer, before a batch tries Redis
	// again, and the deadline of a stage cache read; 0 means
	// DefaultTimeout. A decision is not bounded by it: it waits while
	// queued behind the node's own work, and for its run's reply up to
	// runTimeout (batch.go).
	Timeout time.Duration
	// Clock replaces Redis TIME in the scripts (tests); nil means Redis
	// TIME.
	Clock Clock
	// CacheRedis is the cache Redis (TOLLGATE_CACHE_REDIS_URL); nil means
	// the limiter Redis, and then a request's limits and its cache entry
	// are read in one pipeline.
	CacheRedis redis.UniversalClient
	// CacheMemoryCheck is how often Fill re-reads the memory state of the
	// cache Redis (every master of a cluster), to refuse storing while it is
	// near maxmemory without eviction; 0 means DefaultCacheMemoryCheck.
	CacheMemoryCheck time.Duration
	// ConcurrencyLease is how long a CONCURRENCY rule counts a request of
	// this node without hearing from it (holds.go); 0 means
	// DefaultConcurrencyLease.
	ConcurrencyLease time.Duration
	// LeaseHold is how long a capacity lease taken by a decision may hold
	// units before they are back (at least its lifetime, plus its
	// give-back): a refusal meanwhile carries limit.Decision.LeaseWait. 0
	// means DefaultLeaseHold.
	LeaseHold time.Duration
	// AwaitRestore makes Decide fail keyed requests with
	// limit.ErrNotRestored, charging nothing, while their slot of the
	// limiter Redis lacks the admin's restore mark (package usage): after
	// the limiter lost its data, until an admin node has written the keys'
	// quota and usage back from the ledger. Gateway nodes set it (cmd);
	// without it a lost limiter counts from zero.
	AwaitRestore bool
}

// Engine is a gateway node's Redis, the core the limiter layers stack on
// (engine/refusal, engine/lease, engine/failopen): it decides limits
// (Decide), gives back capacity leases (Unlease), charges fail-open
// admissions (Charge), reads and fills the stage response cache, settles
// and reads a key's quota. It names every key (package keyspace) and
// routes by cluster slot on Redis Cluster. It is safe for concurrent use.
// Create it with New.
//
// Its parts, bottom up: runner (run.go: what every run shares, resends,
// answers), single and cluster (the deciders of a batch), batcher (the
// queue and its flushers), resolver (key names), holds (CONCURRENCY
// members), entries (the cache store); the files with Engine's methods
// (decide.go, charge.go, unlease.go, quota.go, lookup.go, port.go) sit on
// top of them and nothing below reaches back up.
type Engine struct {
	r       *runner
	health  *health
	batch   *batcher
	cluster *cluster // nil on one primary
	holds   *holds   // requests in flight of CONCURRENCY rules
	res     *resolver
	cache   *entries
}

// Trips returns the round trips of decisions, lease give-backs and
// charges (fail-open admissions, settles) so far: one per run on one
// primary, one per phase's pipeline on Redis Cluster (tests and
// benchmarks report them per request).
func (e *Engine) Trips() int64 { return e.r.trips.Load() }

// CheckPrefix returns an error when prefix cannot be an Options.Prefix:
// when it holds '{' or '}', which Redis Cluster would hash in place of
// each key name's own hash tag (keyspace.CheckPrefix). Call it on
// configuration, before New.
func CheckPrefix(prefix string) error { return keyspace.CheckPrefix(prefix) }

// New returns an Engine over rdb, the limiter Redis: a single client, a
// Sentinel failover client (both: one primary, one script per batch) or a
// Cluster client (per-key state and shared buckets in their own slots,
// taken first and given back on a refusal: cluster.go). Nothing is sent
// until the first call; Load loads the script.
func New(rdb redis.UniversalClient, opts Options) *Engine {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.LeaseHold <= 0 {
		opts.LeaseHold = DefaultLeaseHold
	}
	keys := keyspace.Space{Prefix: opts.Prefix}
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	r := &runner{rdb: rdb, keys: keys, clock: opts.Clock, node: binary.LittleEndian.Uint32(b[:]),
		changes0: keys.UsageChanges(0), awaitRestore: opts.AwaitRestore, leaseHoldUS: opts.LeaseHold.Microseconds()}
	h := newHolds(r, opts.ConcurrencyLease)
	e := &Engine{r: r, health: &health{timeout: opts.Timeout}, holds: h, res: &resolver{keys: keys, names: newNames(keys), holds: h, now: r.estimate}}
	var d decider = &single{r: r, concurrencyUS: h.leaseUS}
	r.runs = make([]atomic.Int64, 1)
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		r.cc = cc
		r.runs = make([]atomic.Int64, keyspace.Slots)
		e.cluster = &cluster{r: r, concurrencyUS: h.leaseUS}
		d = e.cluster
	}
	e.batch = &batcher{health: e.health, decider: d, redisNow: r.redisNow}
	cacheRDB := opts.CacheRedis
	if cacheRDB == nil {
		cacheRDB = rdb
	}
	e.cache = newEntries(keys, cacheRDB, rdb, opts.Timeout, opts.CacheMemoryCheck)
	return e
}

// Load runs SCRIPT LOAD of the engine's scripts on every shard of the
// limiter and the cache Redis (every primary of a Cluster, else the one
// server), so that the first requests do not pay a NOSCRIPT round trip.
// Errors are wrapped; scripts load on first use anyway.
func (e *Engine) Load(ctx context.Context) error {
	err := redisscript.Load(ctx, e.r.rdb, limitsScript)
	if cerr := redisscript.Load(ctx, e.cache.rdb, lookupScript, storeScript); cerr != nil {
		err = errors.Join(err, cerr)
	}
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	return nil
}

// Ping checks that the limiter Redis answers (readiness), within ctx.
func (e *Engine) Ping(ctx context.Context) error {
	if err := e.r.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("engine: limiter redis: %w", err)
	}
	return nil
}

// Close waits until the give-backs of shared tokens still in flight have
// landed (Redis Cluster; each is bounded by its own deadline), so that
// closing the Redis client afterwards loses none, and stops renewing the
// leases of requests in flight. It closes no client: their owner does,
// after Close. Safe to call more than once.
func (e *Engine) Close() error {
	e.holds.close()
	if e.cluster != nil {
		e.cluster.refunds.Wait()
	}
	return nil
}
