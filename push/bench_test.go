package push

import (
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
