package cache

import (
	"net/http"
	"testing"
	"time"

	"tollgate/internal/redistest"
)

// BenchmarkKey measures the key builder on a request with three key
// parameters (query, header, path).
func BenchmarkKey(b *testing.B) {
	req := baseRequest()
	req.RawQuery = "utm_source=x&q=one&page=2"
	b.ReportAllocs()
	for b.Loop() {
		_ = Key("tg", testParams, req)
	}
}

// BenchmarkStoreGet measures one entry read (1 KiB body, Vary:
// Accept-Encoding) in its own round trip to the real Redis.
func BenchmarkStoreGet(b *testing.B) {
	rdb, prefix := redistest.MustClient(b)
	s := New(rdb, Options{Prefix: prefix})
	key := s.Key(testParams, baseRequest())
	h := http.Header{"Accept-Encoding": {"gzip"}, "User-Agent": {"bench"}, "Accept": {"*/*"}}
	e := &Entry{Status: 200, Header: http.Header{"Vary": {"Accept-Encoding"}, "Content-Type": {"application/json"}},
		Body: make([]byte, 1<<10), Stored: time.Now(), TTL: time.Hour}
	if err := s.Put(b.Context(), key, h, e); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if got, err := s.Get(b.Context(), key, h); err != nil || got == nil {
			b.Fatalf("Get: got %v, %v, want the entry", got, err)
		}
	}
}
