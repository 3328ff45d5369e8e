package shardmap

import (
	"fmt"
	"sync"
	"testing"
)

// Update's capacity bounds the map when callers evict by it: a flood of
// distinct keys leaves at most Shards × capacity entries, and the last
// one stored is present.
func TestMapBoundedByUpdateCapacity(t *testing.T) {
	t.Parallel()
	for _, size := range []int{1, 16, 100, 1000} {
		m := New[string, int](size)
		for i := range 10 * size {
			k := fmt.Sprint(i)
			m.Update(k, func(entries map[string]int, capacity int) {
				if _, ok := entries[k]; !ok {
					EvictAny(entries, capacity)
				}
				entries[k] = i
			})
		}
		limit := max(1, (size+Shards-1)/Shards) * Shards
		if got := m.Len(); got == 0 || got > limit {
			t.Errorf("size %d: got %d entries, want 1..%d", size, got, limit)
		}
		if v, ok := m.Load(fmt.Sprint(10*size - 1)); !ok || v != 10*size-1 {
			t.Errorf("size %d: last stored: got (%d, %v), want (%d, true)", size, v, ok, 10*size-1)
		}
	}
}

// Load, Read, Delete and Clear see what Update stored, for any key type.
func TestMapOperations(t *testing.T) {
	t.Parallel()
	type addr struct{ a, b uint64 }
	m := New[addr, *int](64)
	one := 1
	m.Update(addr{1, 2}, func(e map[addr]*int, _ int) { e[addr{1, 2}] = &one })
	if v, ok := m.Load(addr{1, 2}); !ok || *v != 1 {
		t.Fatalf("Load: got (%v, %v), want (1, true)", v, ok)
	}
	m.Read(addr{9, 9}, func(v *int, ok bool) {
		if ok || v != nil {
			t.Errorf("Read of an absent key: got (%v, %v), want (nil, false)", v, ok)
		}
	})
	m.Delete(addr{1, 2})
	if _, ok := m.Load(addr{1, 2}); ok || m.Len() != 0 {
		t.Errorf("after Delete: present %v, Len %d, want absent and 0", ok, m.Len())
	}
	for i := range 50 {
		m.Update(addr{uint64(i), 0}, func(e map[addr]*int, _ int) { e[addr{uint64(i), 0}] = &one })
	}
	m.Clear()
	if n := m.Len(); n != 0 {
		t.Errorf("after Clear: Len %d, want 0", n)
	}
}

// Readers and writers of the same and of other keys run at once without a
// race (run with -race): a pointer value changed only in Update is read
// only in Read.
func TestMapConcurrentReadAndUpdate(t *testing.T) {
	t.Parallel()
	m := New[int, *int](32)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				k := (g + i) % 40
				m.Update(k, func(e map[int]*int, capacity int) {
					p := e[k]
					if p == nil {
						EvictAny(e, capacity)
						p = new(int)
						e[k] = p
					}
					*p++
				})
				m.Read((k+1)%40, func(p *int, ok bool) {
					if ok && *p < 1 {
						t.Errorf("key %d: a stored counter below 1", k+1)
					}
				})
			}
		})
	}
	wg.Wait()
}
