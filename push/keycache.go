package push

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// cacheShards is the number of independently locked parts of a boundedMap.
const cacheShards = 16

// boundedMap is a concurrent map of at most about max entries. When a
// shard is full, storing a new key evicts one arbitrary entry of that shard
// (Go's map iteration starts at a random position), which is simple and
// good enough for a cache of hot API keys.
//
// epoch, shared by the caches of one Reader, makes invalidation safe
// against lookups in flight: a lookup notes the epoch before reading Redis
// and stores its answer only if the epoch is unchanged (putIf), and every
// invalidation bumps the epoch under the same shard lock as its delete, so
// an answer read before an invalidation is never stored after it.
type boundedMap[V any] struct {
	seed     maphash.Seed
	perShard int
	epoch    *atomic.Uint64
	shards   [cacheShards]mapShard[V]
}

type mapShard[V any] struct {
	mu sync.RWMutex
	m  map[string]V
}

func newBoundedMap[V any](max int, epoch *atomic.Uint64) *boundedMap[V] {
	b := &boundedMap[V]{seed: maphash.MakeSeed(), perShard: (max + cacheShards - 1) / cacheShards, epoch: epoch}
	if b.perShard < 1 {
		b.perShard = 1
	}
	for i := range b.shards {
		b.shards[i].m = make(map[string]V)
	}
	return b
}

func (b *boundedMap[V]) shard(k string) *mapShard[V] {
	return &b.shards[maphash.String(b.seed, k)%cacheShards]
}

func (b *boundedMap[V]) get(k string) (V, bool) {
	s := b.shard(k)
	s.mu.RLock()
	v, ok := s.m[k]
	s.mu.RUnlock()
	return v, ok
}

// putIf stores v under k unless the epoch moved past e0.
func (b *boundedMap[V]) putIf(k string, v V, e0 uint64) {
	s := b.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if b.epoch.Load() != e0 {
		return
	}
	if _, ok := s.m[k]; !ok && len(s.m) >= b.perShard {
		for old := range s.m {
			delete(s.m, old)
			break
		}
	}
	s.m[k] = v
}

// invalidate bumps the epoch and deletes k.
func (b *boundedMap[V]) invalidate(k string) {
	s := b.shard(k)
	s.mu.Lock()
	b.epoch.Add(1)
	delete(s.m, k)
	s.mu.Unlock()
}

// clear bumps the epoch and deletes everything.
func (b *boundedMap[V]) clear() {
	b.epoch.Add(1)
	for i := range b.shards {
		s := &b.shards[i]
		s.mu.Lock()
		clear(s.m)
		s.mu.Unlock()
	}
}

// del deletes k without bumping the epoch (expired entries).
func (b *boundedMap[V]) del(k string) {
	s := b.shard(k)
	s.mu.Lock()
	delete(s.m, k)
	s.mu.Unlock()
}

func (b *boundedMap[V]) len() int {
	n := 0
	for i := range b.shards {
		s := &b.shards[i]
		s.mu.RLock()
		n += len(s.m)
		s.mu.RUnlock()
	}
	return n
}
