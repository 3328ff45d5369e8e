package gateway

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"tollgate/plans"
)

// BenchmarkCacheHit measures the hit path of a keyed caching method
// through the handler: key check (record cached locally), one pipelined
// round trip to the real Redis (limiter script, generation, entry of a
// 1 KiB body) and writing the entry; no upstream call. "limiter only" is
// the same request path on an uncached keyed MOCK method (a POST, which
// "*/*" does not cache): the cost the cache adds is the difference.
func BenchmarkCacheHit(b *testing.B) {
	u := newUpstream(b)
	u.set(func(u *upstream) { u.size = 1 << 10 })
	tg := newCacheEnv(b).gateway(b, cacheSnapshot(cachedStage(map[string]plans.MethodSetting{"*/*": caching(3600)}), nil,
		res{"/items/{id}", methods(keyedProxy(u, "/items/{id}", "method.request.querystring.q"), "GET")},
		res{"/mock", methods(mock(true), "POST")}), nil)
	req := httptest.NewRequest(http.MethodGet, "http://"+testHost+"/prod/items/42?q=x", nil)
	req.Header.Set("x-api-key", cacheKey1)
	req.Header.Set("Accept-Encoding", "gzip")
	tg.ServeHTTP(httptest.NewRecorder(), req)
	tg.fills.Wait()
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			w := httptest.NewRecorder()
			tg.ServeHTTP(w, req)
			if w.Header().Get("X-Cache") != "Hit" {
				b.Fatalf("X-Cache: got %q, want Hit", w.Header().Get("X-Cache"))
			}
		}
	})
	b.Run("limiter only", func(b *testing.B) {
		post := httptest.NewRequest(http.MethodPost, "http://"+testHost+"/prod/mock", nil)
		post.Header.Set("x-api-key", cacheKey1)
		b.ReportAllocs()
		for b.Loop() {
			w := httptest.NewRecorder()
			tg.ServeHTTP(w, post)
			if w.Code != http.StatusOK || w.Header().Get("X-Cache") != "" {
				b.Fatalf("got %d X-Cache %q, want 200 uncached", w.Code, w.Header().Get("X-Cache"))
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			req := req.Clone(b.Context()) // the handler sets headers on its request, as a server's are its own
			for pb.Next() {
				w := httptest.NewRecorder()
				tg.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Errorf("status: got %d, want 200", w.Code)
					return
				}
			}
		})
	})
	if u.hits.Load() != 1 {
		b.Errorf("upstream hits: got %d, want 1", u.hits.Load())
	}
}
