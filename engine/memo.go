package engine

import (
	"sync"
	"sync/atomic"
)

// memo holds values built once per key, for what every request looks up
// and config changes add rarely (shared bucket names, stage cache states):
// sync.Map's documented case, a key written once and read many times, so
// a read takes no lock. It holds at most max keys: one more starts it
// again empty (config churn), refilled by the requests that follow.
type memo[K comparable, V any] struct {
	m     sync.Map // K → V
	n     atomic.Int64
	max   int64
	build func(K) V
	mu    sync.Mutex // held while building, so each key is built once
}

func newMemo[K comparable, V any](max int, build func(K) V) *memo[K, V] {
	return &memo[K, V]{max: int64(max), build: build}
}

// get returns k's value, built the first time k is asked for.
func (m *memo[K, V]) get(k K) V {
	if v, ok := m.m.Load(k); ok {
		return v.(V)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.m.Load(k); ok { // built while this call waited
		return v.(V)
	}
	if m.n.Load() >= m.max {
		m.m.Clear()
		m.n.Store(0)
	}
	v := m.build(k)
	m.m.Store(k, v)
	m.n.Add(1)
	return v
}

// len returns how many keys m holds.
func (m *memo[K, V]) len() int { return int(m.n.Load()) }
