package push

import (
	"sync/atomic"

	"tollgate/internal/shardmap"
)

// boundedMap is a concurrent map of at most about max entries (a
// shardmap.Map). When a shard is full, storing a new key evicts one
// arbitrary entry of that shard, which is simple and good enough for a
// cache of hot API keys.
//
// epoch, shared by the caches of one Reader, makes invalidation safe
// against lookups in flight: a lookup notes the epoch before reading Redis
// and stores its answer only if the epoch is unchanged (putIf), and every
// invalidation bumps the epoch under the same shard lock as its delete, so
// an answer read before an invalidation is never stored after it.
type boundedMap[V any] struct {
	m     *shardmap.Map[string, V]
	epoch *atomic.Uint64
}

func newBoundedMap[V any](max int, epoch *atomic.Uint64) *boundedMap[V] {
	return &boundedMap[V]{m: shardmap.New[string, V](max), epoch: epoch}
}

func (b *boundedMap[V]) get(k string) (V, bool) { return b.m.Load(k) }

// putIf stores v under k unless the epoch moved past e0.
func (b *boundedMap[V]) putIf(k string, v V, e0 uint64) {
	b.m.Update(k, func(entries map[string]V, capacity int) {
		if b.epoch.Load() != e0 {
			return
		}
		if _, ok := entries[k]; !ok {
			shardmap.EvictAny(entries, capacity)
		}
		entries[k] = v
	})
}

// invalidate bumps the epoch and deletes k.
func (b *boundedMap[V]) invalidate(k string) {
	b.m.Update(k, func(entries map[string]V, _ int) {
		b.epoch.Add(1)
		delete(entries, k)
	})
}

// clear bumps the epoch and deletes everything.
func (b *boundedMap[V]) clear() {
	b.epoch.Add(1)
	b.m.Clear()
}

// del deletes k without bumping the epoch (expired entries).
func (b *boundedMap[V]) del(k string) { b.m.Delete(k) }

func (b *boundedMap[V]) len() int { return b.m.Len() }
