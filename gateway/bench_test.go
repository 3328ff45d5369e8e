package gateway

import (
	"fmt"
	"log/slog"
	"net/http/httptest"
	"testing"

	"tollgate/plans"
)

// benchSnapshot has 10 collections of 10 resources each, with parameters
// and a greedy catch-all, about the size of a real API.
func benchSnapshot() *plans.Snapshot {
	m := mock(false)
	var rs []res
	for i := range 10 {
		c := fmt.Sprintf("/c%d", i)
		rs = append(rs,
			res{c, methods(m, "GET", "POST")},
			res{c + "/{id}", methods(m, "GET", "PUT", "DELETE")},
			res{c + "/{id}/items", methods(m, "GET")},
			res{c + "/{id}/items/{item}", methods(m, "GET")},
			res{c + "/search", methods(m, "GET")},
			res{c + "/{id}/{proxy+}", methods(m, "ANY")},
		)
	}
	return snapshot(plans.Stage{}, rs...)
}

func BenchmarkRoute(b *testing.B) {
	st := mustStage(b, benchSnapshot())
	for _, path := range []string{"c5", "c5/search", "c5/123/items/9", "c9/123/a/b/c"} {
		b.Run(path, func(b *testing.B) {
			b.ReportAllocs()
			var ps params
			for b.Loop() {
				ps.n = 0
				if st.root.match(path, &ps) == nil {
					b.Fatalf("no match for %s", path)
				}
			}
		})
	}
}

// BenchmarkServeMock measures the handler's own cost on a MOCK method
// (routing, limiter request, access log to a discarding logger), with a
// limiter that admits without Redis.
func BenchmarkServeMock(b *testing.B) {
	s := New(Options{Keys: newFakeKeys(), Engine: allowEngine{}, Logger: slog.New(slog.DiscardHandler)})
	if err := s.SetSnapshot(benchSnapshot()); err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest("GET", "http://"+testHost+"/prod/c5/123/items/9", nil)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatalf("status %d", w.Code)
		}
	}
}

// BenchmarkServeMockCustomDomain is BenchmarkServeMock through a custom
// domain name's base path mapping (Host lookup, base path tree, the stage
// path rebuilt) instead of the execute-api host.
func BenchmarkServeMockCustomDomain(b *testing.B) {
	s := New(Options{Keys: newFakeKeys(), Engine: allowEngine{}, Logger: slog.New(slog.DiscardHandler)})
	snap := benchSnapshot()
	snap.Domains = map[string]*plans.DomainConfig{}
	addDomain(snap, "api.example.test", nil, "=prod", "v1=prod", "v1/orders=prod")
	if err := s.SetSnapshot(snap); err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest("GET", "http://api.example.test/v1/c5/123/items/9", nil)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatalf("status %d", w.Code)
		}
	}
}
