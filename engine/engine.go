package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redisscript"
	"tollgate/keyspace"
)

// DefaultTimeout is the deadline of one decision when Options.Timeout is 0
// (TOLLGATE_REDIS_TIMEOUT's default, docs/operations.md).
const DefaultTimeout = 50 * time.Millisecond

// Clock is a source of time for the limiter scripts in place of Redis
// TIME: tests inject one (the script is given its time); nil, or a Clock
// that returns the zero time, means Redis TIME. Production never sets one.
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
	// FailOpen says that the caller admits a request whose decision
	// failed (the gateway's failure mode "open"): the engine then charges
	// the request's quota and usage once Redis answers again
	// (failopen.go), so usage and quotas count it.
	FailOpen bool
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
	// RefusalEntries bounds the refusal memory (refusals.go); 0 means
	// DefaultRefusalEntries.
	RefusalEntries int
	// ConcurrencyLease is how long a CONCURRENCY rule counts a request of
	// this node without hearing from it (holds.go); 0 means
	// DefaultConcurrencyLease.
	ConcurrencyLease time.Duration
	// LeaseLifetime is the lifetime L of a capacity lease (docs/leases.md):
	// a hot request shape takes several tokens and quota units at once and
	// the node admits against them without a round trip for at most L; 0
	// means DefaultLeaseLifetime, a negative value no leases (every request
	// is decided in Redis); at most MaxLeaseLifetime. Leases are only taken
	// on one primary, without a test Clock, for requests without
	// rate-limit rules or cache reads.
	LeaseLifetime time.Duration
	// AwaitRestore makes Decide fail keyed requests with
	// limit.ErrNotRestored, charging nothing, while their slot of the
	// limiter Redis lacks the admin's restore mark (restore.go): after the
	// limiter lost its data, until an admin node has written the keys'
	// quota and usage back from the ledger. Gateway nodes set it (cmd);
	// without it a lost limiter counts from zero.
	AwaitRestore bool
}

// Engine is a gateway node's Redis: it decides limits (Decide), reads and
// fills the stage response cache (DecideLookup, Fill), reads and sets
// usage and quotas (Usage, QuotaState, SetRemaining), names every key
// (package keyspace) and routes by cluster slot on Redis Cluster. It is
// safe for concurrent use. Create it with New.
type Engine struct {
	rdb      redis.UniversalClient
	keys     keyspace.Space
	timeout  time.Duration
	clock    Clock
	names    *names
	batch    batcher
	refusals *refusals
	cluster  *cluster // nil unless rdb is a *redis.ClusterClient
	cache    *entries
	holds    *holds  // requests in flight of CONCURRENCY rules
	leases   *leases // nil: no capacity leases
	// changes0 is the usage change set of slot 0: on one primary, every
	// key's (usagesource.go)
	changes0     string
	awaitRestore bool // Options.AwaitRestore
	failOpen     bool
	// inFlight counts runs in flight; downAt is when the last run failed
	// without a reply (Unix ns), 0 when it had one (failopen.go).
	inFlight atomic.Int32
	downAt   atomic.Int64
	charges  charges
	// trips counts the round trips of decisions and lease give-backs on
	// one primary (tests and benchmarks report it per request).
	trips atomic.Int64
}

// CheckPrefix returns an error when prefix cannot be an Options.Prefix:
// when it holds '{' or '}', which Redis Cluster would hash in place of
// each key name's own hash tag (keyspace.CheckPrefix). Call it on
// configuration, before New.
func CheckPrefix(prefix string) error { return keyspace.CheckPrefix(prefix) }

// New returns an Engine over rdb, the limiter Redis: a single client, a
// Sentinel failover client (both: one primary, one script per batch) or a
// Cluster client (per-key state and shared buckets in their own slots,
// taken first and given back on a refusal: cluster.go). Nothing is sent
// until the first call; Load loads the scripts.
func New(rdb redis.UniversalClient, opts Options) *Engine {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	keys := keyspace.Space{Prefix: opts.Prefix}
	e := &Engine{rdb: rdb, keys: keys, timeout: opts.Timeout, clock: opts.Clock, names: newNames(keys),
		refusals: newRefusals(opts.RefusalEntries), changes0: keys.UsageChanges(0), failOpen: opts.FailOpen,
		awaitRestore: opts.AwaitRestore}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		e.cluster = newCluster(e, cc)
	}
	e.holds = newHolds(e, opts.ConcurrencyLease)
	if opts.LeaseLifetime == 0 {
		opts.LeaseLifetime = DefaultLeaseLifetime
	}
	// Leases run on one primary (or Sentinel) only: on Redis Cluster a
	// request's shared buckets sit in other slots than its key's own
	// state, so a lease would need the two-phase take and give-back of
	// cluster.go for each level (not built; docs/leases.md). A test clock
	// keeps them off too: a lease's lifetime is counted in node time while
	// the scripts then read the test clock, and the give-back's refill rule
	// needs both on one clock.
	if opts.LeaseLifetime > 0 && e.cluster == nil && opts.Clock == nil {
		e.leases = newLeases(e, opts.LeaseLifetime)
		e.refusals.keep = 2 * e.leases.life
	}
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

// now returns the injected test clock's time when one is set and not
// zero, else the node's time.
func (e *Engine) now() time.Time {
	if e.clock != nil {
		if t := e.clock(); !t.IsZero() {
			return t
		}
	}
	return time.Now()
}

// changesOf returns the usage change set that a usage hash named usage
// is marked in: the one set on a single primary, else the set of its
// slot (as single.go and cluster.go choose it for decisions).
func (e *Engine) changesOf(usage string) string {
	if e.cluster == nil {
		return e.changes0
	}
	return e.keys.UsageChanges(keyspace.Slot(usage))
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
	if e.leases != nil {
		e.leases.close()
	}
	if e.cluster != nil {
		e.cluster.refunds.Wait()
	}
	return nil
}
