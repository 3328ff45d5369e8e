package limiter

import (
	"fmt"
	"testing"
)

// BenchmarkDecide measures one decision over a plan, stage and account
// bucket, a quota and usage counting, against the real Redis (run with
// -benchmem). Keys rotate over 1000 API keys so the plan state stays warm
// but buckets do not all refuse.
func BenchmarkDecide(b *testing.B) {
	l := mustLimiter(b)
	reqs := make([]*Request, 1000)
	for i := range reqs {
		reqs[i] = nodeRequest(l, fmt.Sprintf("key%06d", i), 1000, 1000, 1_000_000_000)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := l.Decide(b.Context(), reqs[i%len(reqs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkDecideParallel is BenchmarkDecide from GOMAXPROCS goroutines.
func BenchmarkDecideParallel(b *testing.B) {
	l := mustLimiter(b)
	reqs := make([]*Request, 1000)
	for i := range reqs {
		reqs[i] = nodeRequest(l, fmt.Sprintf("key%06d", i), 1000, 1000, 1_000_000_000)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := l.Decide(b.Context(), reqs[i%len(reqs)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
