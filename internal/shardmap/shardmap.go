// Package shardmap is the one concurrent, bounded map of the data plane's
// local state: a map split into Shards parts, each under its own lock, so
// that requests touching different keys rarely wait for each other. It
// holds the gateway's local key record cache (package push) and the failed
// key attempts per client address (package clientaddr).
//
// The map bounds its size only through its callers: Update hands them the
// shard's entries and the shard's capacity (about max/Shards), and each
// caller evicts by its own policy when the shard is full.
package shardmap

import (
	"hash/maphash"
	"sync"
)

// Shards is the number of independently locked parts of a Map.
const Shards = 16

// Map is a concurrent map of K to V split in Shards locked parts. The zero
// value is not usable: create one with New. Safe for concurrent use.
type Map[K comparable, V any] struct {
	seed     maphash.Seed
	capacity int
	shards   [Shards]shard[K, V]
}

type shard[K comparable, V any] struct {
	mu sync.RWMutex // reads (Load, Read) share it
	m  map[K]V
}

// New returns an empty map meant to hold about size entries: each shard's
// capacity, which Update passes on, is size/Shards rounded up, at least 1.
func New[K comparable, V any](size int) *Map[K, V] {
	m := &Map[K, V]{seed: maphash.MakeSeed(), capacity: max(1, (size+Shards-1)/Shards)}
	for i := range m.shards {
		m.shards[i].m = make(map[K]V)
	}
	return m
}

func (m *Map[K, V]) shard(k K) *shard[K, V] {
	return &m.shards[maphash.Comparable(m.seed, k)%Shards]
}

// Load returns k's value and whether k is present.
func (m *Map[K, V]) Load(k K) (V, bool) {
	s := m.shard(k)
	s.mu.RLock()
	v, ok := s.m[k]
	s.mu.RUnlock()
	return v, ok
}

// Read calls fn with k's value (the zero V and false when absent) under
// k's shard's read lock, so fn may read what a pointer value points to
// while Update changes it only under the write lock. fn must not call the
// Map.
func (m *Map[K, V]) Read(k K, fn func(v V, ok bool)) {
	s := m.shard(k)
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.m[k]
	fn(v, ok)
}

// Update calls fn with the entries of k's shard and the shard's capacity,
// under the shard's write lock: fn reads, stores and deletes what it
// needs (k's entry, and others to evict when len(entries) >= capacity).
// fn must not call the Map.
func (m *Map[K, V]) Update(k K, fn func(entries map[K]V, capacity int)) {
	s := m.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s.m, m.capacity)
}

// Delete removes k.
func (m *Map[K, V]) Delete(k K) {
	s := m.shard(k)
	s.mu.Lock()
	delete(s.m, k)
	s.mu.Unlock()
}

// Clear removes every entry, one shard at a time.
func (m *Map[K, V]) Clear() {
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		clear(s.m)
		s.mu.Unlock()
	}
}

// Len returns the number of entries, counted one shard at a time (not a
// snapshot while others write).
func (m *Map[K, V]) Len() int {
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.RLock()
		n += len(s.m)
		s.mu.RUnlock()
	}
	return n
}

// EvictAny deletes arbitrary entries of entries until it holds fewer than
// keep (Go's map iteration starts at a random position, which is random
// enough for a cache of hot keys). For Update's fn.
func EvictAny[K comparable, V any](entries map[K]V, keep int) {
	for k := range entries {
		if len(entries) < keep {
			return
		}
		delete(entries, k)
	}
}
