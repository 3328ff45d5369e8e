// Package hammertest makes concurrent calls in tests: the one "hammer" of
// the tree, for limits that must admit exactly N however calls interleave.
package hammertest

import (
	"sync"
	"sync/atomic"
)

// Count makes n calls in each of g goroutines at once, call(w, i) for
// goroutine w and its call i (both from 0), and returns how many returned
// true. A call reports its own failures (testing.TB's Errorf is safe from
// any goroutine); Count returns when every call has.
func Count(g, n int, call func(w, i int) bool) int64 {
	var ok atomic.Int64
	var wg sync.WaitGroup
	for w := range g {
		wg.Go(func() {
			for i := range n {
				if call(w, i) {
					ok.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return ok.Load()
}
