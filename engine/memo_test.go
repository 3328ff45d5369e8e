package engine

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// Every caller of a key gets the value built once for it, whatever the
// interleaving, and a key asked for again is read without building.
func TestMemoBuildsEachKeyOnce(t *testing.T) {
	t.Parallel()
	var builds atomic.Int64
	m := newMemo(1<<10, func(k int) *int {
		builds.Add(1)
		v := k
		return &v
	})
	const keys, callers = 300, 8
	got := make([][keys]*int, callers)
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := range 3 * keys {
				k := (i*7 + c) % keys
				got[c][k] = m.get(k)
			}
		})
	}
	wg.Wait()
	if n := builds.Load(); n != keys {
		t.Fatalf("builds: got %d, want %d (one per key)", n, keys)
	}
	for k := range keys {
		for c := range callers {
			if got[c][k] != got[0][k] || *got[c][k] != k {
				t.Fatalf("key %d: caller %d got %p (%d), caller 0 %p, want one value %d", k, c, got[c][k], *got[c][k], got[0][k], k)
			}
		}
	}
}

// A full memo starts again from the keys asked for now; it never holds
// more than max keys.
func TestMemoStartsAgainWhenFull(t *testing.T) {
	t.Parallel()
	m := newMemo(16, func(k string) string { return "v" + k })
	for i := range 100 {
		if v := m.get(fmt.Sprint(i)); v != "v"+fmt.Sprint(i) {
			t.Fatalf("get(%d): got %q", i, v)
		}
		if n := m.len(); n > 16 || n < 1 {
			t.Fatalf("after %d keys: %d held, want 1 to 16", i+1, n)
		}
	}
}

// BenchmarkNamesGet reads stage bucket names, which every request needs,
// from a warm memo, from GOMAXPROCS goroutines (docs/scale.md has the
// figures).
func BenchmarkNamesGet(b *testing.B) {
	m := newMemo(maxNames, func(k stageMethod) string { return k.api + ":" + k.stage + ":" + k.method + ":" + k.path })
	keys := make([]stageMethod, 256)
	for i := range keys {
		keys[i] = stageMethod{"a1b2c3d4e5", "prod", "GET", fmt.Sprintf("/items/%d", i)}
		m.get(keys[i])
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			_ = m.get(keys[i%len(keys)])
			i++
		}
	})
}
