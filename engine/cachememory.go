package engine

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// errCacheFull is Fill's error while the cache Redis is near its maxmemory and
// would not evict to make room: the entry is not written, so cache entries
// never push other state (the limiter's, when the cache shares its Redis)
// into out-of-memory refusals.
var errCacheFull = errors.New("engine: cache Redis near maxmemory without eviction; entry not stored")

// Memory guard defaults.
const (
	// DefaultCacheMemoryCheck is how often Fill re-reads the cache Redis's memory
	// state (INFO memory), in the background.
	DefaultCacheMemoryCheck = 2 * time.Second
	// fullShare is the share of maxmemory above which a non-evicting
	// Redis counts as full.
	fullShare = 0.8
)

// memoryGuard keeps whether the cache Redis is full, from an INFO memory
// read at most once per interval, in the background.
type memoryGuard struct {
	rdb      redis.UniversalClient
	every    time.Duration
	isFull   atomic.Bool  // the last memory check found the Redis full
	checked  atomic.Int64 // Unix ns of the last memory check
	checking atomic.Bool
}

func newMemoryGuard(rdb redis.UniversalClient, every time.Duration) *memoryGuard {
	if every <= 0 {
		every = DefaultCacheMemoryCheck
	}
	return &memoryGuard{rdb: rdb, every: every}
}

// full reports what the last check found, and starts a new check in the
// background when that one is older than the interval and none is running.
func (g *memoryGuard) full() bool {
	now := time.Now().UnixNano()
	if now-g.checked.Load() >= int64(g.every) && g.checking.CompareAndSwap(false, true) {
		g.checked.Store(now)
		go g.checkInBackground()
	}
	return g.isFull.Load()
}

func (g *memoryGuard) checkInBackground() {
	defer g.checking.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = g.check(ctx)
}

// check reads INFO memory of the cache Redis (of every master of a
// Redis Cluster: entries spread over all of them) and sets whether Fill
// must refuse: when one of them is full. An error leaves the previous
// state.
func (g *memoryGuard) check(ctx context.Context) error {
	cc, ok := g.rdb.(*redis.ClusterClient)
	if !ok {
		info, err := g.rdb.Info(ctx, "memory").Result()
		if err != nil {
			return err
		}
		g.isFull.Store(memoryFull(info))
		return nil
	}
	var full atomic.Bool
	err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		info, err := m.Info(ctx, "memory").Result()
		if err == nil && memoryFull(info) {
			full.Store(true)
		}
		return err
	})
	if err != nil {
		return err
	}
	g.isFull.Store(full.Load())
	return nil
}

// memoryFull reports whether an INFO memory reply describes a Redis that
// refuses writes when full (maxmemory-policy noeviction) and uses more
// than fullShare of its maxmemory. Without maxmemory (0) or with an
// evicting policy (entries all have a TTL, so volatile-* policies evict
// them too) it is never full. The reply is one server's.
func memoryFull(info string) bool {
	var used, limit float64
	policy := ""
	for line := range strings.SplitSeq(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch k {
		case "used_memory":
			used, _ = strconv.ParseFloat(v, 64)
		case "maxmemory":
			limit, _ = strconv.ParseFloat(v, 64)
		case "maxmemory_policy":
			policy = v
		}
	}
	return policy == "noeviction" && limit > 0 && used >= fullShare*limit
}
