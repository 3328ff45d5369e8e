package push

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"tollgate/internal/shardmap"
)

func TestBoundedMapStaysBounded(t *testing.T) {
	t.Parallel()
	var epoch atomic.Uint64
	for _, max := range []int{1, 16, 100, 1000} {
		m := newBoundedMap[int](max, &epoch)
		for i := range 10 * max {
			m.putIf(fmt.Sprint(i), i, epoch.Load())
		}
		limit := max
		if limit < shardmap.Shards {
			limit = shardmap.Shards // at least one per shard
		} else {
			limit = (max + shardmap.Shards - 1) / shardmap.Shards * shardmap.Shards
		}
		if got := m.len(); got > limit || got == 0 {
			t.Errorf("max %d: got %d entries, want 1..%d", max, got, limit)
		}
		if v, ok := m.get(fmt.Sprint(10*max - 1)); !ok || v != 10*max-1 {
			t.Errorf("max %d: last stored entry: got (%d, %v), want (%d, true)", max, v, ok, 10*max-1)
		}
	}
}

func TestBoundedMapEpoch(t *testing.T) {
	t.Parallel()
	var epoch atomic.Uint64
	m := newBoundedMap[string](100, &epoch)
	cases := []struct {
		name   string
		before func()
		wantOK bool
	}{
		{"no invalidation in between", func() {}, true},
		{"invalidation of another key in between", func() { m.invalidate("other") }, false},
		{"invalidation of the key in between", func() { m.invalidate("k") }, false},
		{"clear in between", func() { m.clear() }, false},
	}
	for _, c := range cases {
		m.clear()
		e0 := epoch.Load()
		c.before()
		m.putIf("k", "v", e0)
		if _, ok := m.get("k"); ok != c.wantOK {
			t.Errorf("%s: stored got %v, want %v", c.name, ok, c.wantOK)
		}
	}
}

// TestBoundedMapInvalidateRace hammers putIf against invalidate of the same
// key: once an invalidation that started after a read finished, the stale
// value must never be present.
func TestBoundedMapInvalidateRace(t *testing.T) {
	t.Parallel()
	var epoch atomic.Uint64
	m := newBoundedMap[int](100, &epoch)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				e0 := epoch.Load()
				m.putIf("k", w*10000+i, e0)
			}
		})
	}
	wg.Go(func() {
		for range 2000 {
			m.invalidate("k")
		}
	})
	wg.Wait()
	e0 := epoch.Load()
	m.invalidate("k")
	m.putIf("k", -1, e0)
	if v, ok := m.get("k"); ok {
		t.Errorf("after invalidate: got %d, want nothing stored with the old epoch", v)
	}
}
