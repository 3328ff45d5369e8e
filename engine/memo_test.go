package engine

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// Every caller of a key gets the value built once for it, whatever the
// interleaving, and a key asked for again is read without building.
func TestLockFreeMapBuildsEachKeyOnce(t *testing.T) {
	t.Parallel()
	var builds atomic.Int64
	m := newLockFreeMap(1<<10, func(k int) *int {
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
	if r := m.read.Load(); r == nil || len(*r) < keys-keys/8-1 {
		t.Errorf("read-only map: got %v entries, want nearly all %d merged", r, keys)
	}
}

// A full map starts again from the keys asked for now; it never holds
// more than max keys.
func TestLockFreeMapStartsAgainWhenFull(t *testing.T) {
	t.Parallel()
	m := newLockFreeMap(16, func(k string) string { return "v" + k })
	for i := range 100 {
		if v := m.get(fmt.Sprint(i)); v != "v"+fmt.Sprint(i) {
			t.Fatalf("get(%d): got %q", i, v)
		}
		if r := m.read.Load(); r != nil && len(*r) > 16 {
			t.Fatalf("after %d keys: %d in the read-only map, want at most 16", i+1, len(*r))
		}
	}
}
