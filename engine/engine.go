package engine

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
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

// Clock is a source of time for the scripts in place of Redis TIME: tests
// inject one (the script is given its time); nil, or a Clock that returns
// the zero time, means Redis TIME. Production never sets one.
type Clock func() time.Time

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
type Engine struct {
	rdb     redis.UniversalClient
	keys    keyspace.Space
	timeout time.Duration
	clock   Clock
	names   *names
	batch   batcher
	cluster *cluster // nil unless rdb is a *redis.ClusterClient
	cache   *entries
	holds   *holds // requests in flight of CONCURRENCY rules
	// changes0 is the usage change set of slot 0: on one primary, every
	// key's
	changes0     string
	awaitRestore bool
	leaseHold    time.Duration
	// node numbers this engine's runs (the run windows of decide.lua);
	// runs counts them.
	node uint32
	runs atomic.Int64
	// inFlight counts runs in flight; downAt is when the last run failed
	// without a reply (Unix ns), 0 when it had one (down.go).
	inFlight atomic.Int32
	downAt   atomic.Int64
	// offset is Redis time minus the node's, in µs, as the last reply
	// showed it (down.go).
	offset atomic.Int64
	// trips counts the round trips of decisions and lease give-backs on
	// one primary (tests and benchmarks report it per request).
	trips atomic.Int64
}

// Trips returns the round trips of decisions and lease give-backs on one
// primary so far (tests and benchmarks report them per request).
func (e *Engine) Trips() int64 { return e.trips.Load() }

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
	e := &Engine{rdb: rdb, keys: keys, timeout: opts.Timeout, clock: opts.Clock, names: newNames(keys),
		changes0: keys.UsageChanges(0), awaitRestore: opts.AwaitRestore, leaseHold: opts.LeaseHold,
		node: binary.LittleEndian.Uint32(b[:])}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		e.cluster = newCluster(e, cc)
	}
	e.holds = newHolds(e, opts.ConcurrencyLease)
	cacheRDB := opts.CacheRedis
	if cacheRDB == nil {
		cacheRDB = rdb
	}
	e.cache = newEntries(e, cacheRDB, opts.CacheMemoryCheck)
	return e
}

// Load runs SCRIPT LOAD of the engine's scripts on every shard of the
// limiter and the cache Redis (every primary of a Cluster, else the one
// server), so that the first requests do not pay a NOSCRIPT round trip.
// Errors are wrapped; scripts load on first use anyway.
func (e *Engine) Load(ctx context.Context) error {
	err := redisscript.Load(ctx, e.rdb, limitsScript)
	if cerr := redisscript.Load(ctx, e.cache.rdb, lookupScript); cerr != nil {
		err = errors.Join(err, cerr)
	}
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	return nil
}

// Ping checks that the limiter Redis answers (readiness), within ctx.
func (e *Engine) Ping(ctx context.Context) error {
	if err := e.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("engine: limiter redis: %w", err)
	}
	return nil
}

// changesOf returns the usage change set that a key's state named key is
// counted in: the one set on a single primary, else the set of its slot.
func (e *Engine) changesOf(key string) string {
	if e.cluster == nil {
		return e.changes0
	}
	return e.keys.UsageChanges(keyspace.Slot(key))
}

// clockArg returns the scripts' time argument: the injected clock's time
// in Unix microseconds, or "" for Redis TIME.
func (e *Engine) clockArg() string {
	if e.clock == nil {
		return ""
	}
	t := e.clock()
	if t.IsZero() {
		return ""
	}
	return strconv.FormatInt(t.UnixMicro(), 10)
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
