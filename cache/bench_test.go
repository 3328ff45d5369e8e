package cache

import "testing"

// BenchmarkDigest measures the digest of a request with three key
// parameters (query, header, path).
func BenchmarkDigest(b *testing.B) {
	req := baseRequest()
	req.RawQuery = "utm_source=x&q=one&page=2"
	b.ReportAllocs()
	for b.Loop() {
		_ = Digest(testParams, req)
	}
}
