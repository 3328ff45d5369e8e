package engine

import (
	"maps"
	"sync"
	"sync/atomic"
)

// lockFreeMap is a cache whose reads take no lock, for what every request
// looks up and config changes add rarely (shared bucket names, stage cache
// states): a read is one atomic load and one lookup in a read-only map.
// A key missing there is found in, or built (build) and added to, a map
// of recent additions under mu; once the lookups that took mu since the
// last merge number an eighth of the read-only map, the recent additions
// are merged into a new read-only map (so each such lookup pays for at
// most eight entries copied, and a key is read without a lock soon after
// its first use). It holds at most max keys: a merge that would pass max
// starts the read-only map again from the recent additions.
type lockFreeMap[K comparable, V any] struct {
	read   atomic.Pointer[map[K]V]
	build  func(K) V
	max    int
	mu     sync.Mutex
	recent map[K]V
	misses int // lookups under mu since the last merge
}

func newLockFreeMap[K comparable, V any](max int, build func(K) V) *lockFreeMap[K, V] {
	return &lockFreeMap[K, V]{build: build, max: max}
}

// get returns k's value, built the first time k is asked for.
func (m *lockFreeMap[K, V]) get(k K) V {
	if r := m.read.Load(); r != nil {
		if v, ok := (*r)[k]; ok {
			return v
		}
	}
	return m.slow(k)
}

// slow returns k's value from the recent additions, building and adding
// it when new, and merges them when due.
func (m *lockFreeMap[K, V]) slow(k K) V {
	m.mu.Lock()
	defer m.mu.Unlock()
	var read map[K]V
	if r := m.read.Load(); r != nil {
		read = *r
	}
	if v, ok := read[k]; ok { // merged since get looked
		return v
	}
	v, ok := m.recent[k]
	if !ok {
		v = m.build(k)
		if m.recent == nil {
			m.recent = map[K]V{}
		}
		m.recent[k] = v
	}
	if m.misses++; m.misses > len(read)/8 {
		m.merge(read)
	}
	return v
}

// merge publishes read with the recent additions as the new read-only map
// (without read when that would pass max).
func (m *lockFreeMap[K, V]) merge(read map[K]V) {
	if len(read)+len(m.recent) > m.max {
		read = nil // full (config churn): start again from what is asked now
	}
	next := make(map[K]V, len(read)+len(m.recent))
	maps.Copy(next, read)
	maps.Copy(next, m.recent)
	m.read.Store(&next)
	m.recent, m.misses = nil, 0
}
