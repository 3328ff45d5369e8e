package push

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"tollgate/internal/redistest"
	"tollgate/keyspace"
)

// BenchmarkLookupWarm measures a key lookup once the record is in the
// node's local cache (the gateway's warm path: no Redis). Run with
// -benchmem.
func BenchmarkLookupWarm(b *testing.B) {
	rdb, prefix := redistest.MustClient(b)
	h := testHash(1)
	rec := `{"version":1,"keyId":"benchkey01","enabled":true,"planIds":["plan01"]}`
	if err := rdb.Set(b.Context(), keyspace.Space{Prefix: prefix}.KeyRecord(h), rec, 0).Err(); err != nil {
		b.Fatal(err)
	}
	r := NewReader(rdb, ReaderOptions{Prefix: prefix})
	if got, err := r.Lookup(b.Context(), h); err != nil || got == nil || got.KeyID != "benchkey01" {
		b.Fatalf("first Lookup: got (%+v, %v), want key benchkey01", got, err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if got, err := r.Lookup(b.Context(), h); err != nil || got == nil {
				b.Fatalf("Lookup: got (%+v, %v), want the record", got, err)
			}
		}
	})
}

// BenchmarkLookupCold is key lookups that each find a key the node has not
// cached (as a node meeting 10,000 keys in turn for the first time), from
// 8 and 32 goroutines on the test Redis; trips/op is the pipelines that
// read key records per lookup (docs/benchmarks.md, "What the many-keys
// rows pay Redis").
func BenchmarkLookupCold(b *testing.B) {
	for _, callers := range []int{8, 32} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			r, counter := mustCountedReader(b, b.N)
			var next atomic.Int64
			b.SetParallelism(max(1, callers/runtime.GOMAXPROCS(0)))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if got, err := r.Lookup(b.Context(), testHash(int(next.Add(1)-1))); err != nil || got == nil {
						b.Fatalf("Lookup: got (%+v, %v), want the record", got, err)
					}
				}
			})
			b.ReportMetric(float64(counter.n.Load())/float64(b.N), "trips/op")
		})
	}
}
