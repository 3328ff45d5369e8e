package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"tollgate/internal/benchproxy"
	"tollgate/limit"
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

// BenchmarkServeProxyKeyed measures the handler's own cost on the path of
// an uncached keyed request as production runs it: key check, a plan with
// throttle and quota (the limit request built), an HTTP_PROXY call through
// the reverse proxy, rate-limit headers, metrics and the access log (JSON,
// to io.Discard), with a limiter that admits without Redis (statesEngine)
// and an upstream answered in memory (fixedTransport: its response is 6 of
// the allocations). The allocations per request are those README reports.
func BenchmarkServeProxyKeyed(b *testing.B) { serveProxyKeyed(b, plans.KeyCalendar{}) }

// BenchmarkServeProxyKeyedOwnCalendar is BenchmarkServeProxyKeyed for a
// key on its own calendar (the 15th in Tokyo, docs/usage.md).
func BenchmarkServeProxyKeyedOwnCalendar(b *testing.B) {
	serveProxyKeyed(b, plans.KeyCalendar{Anchor: "15", TimeZone: "Asia/Tokyo"})
}

func serveProxyKeyed(b *testing.B, cal plans.KeyCalendar) {
	snap := snapshot(plans.Stage{}, res{"/items/{id}", methods(proxy(true, "http://upstream.test/items/{id}"), "GET")})
	addPlan(snap, plans.UsagePlan{ID: "plan01", Throttle: &plans.Throttle{RateLimit: 1e6, BurstLimit: 1e6},
		Quota: &plans.Quota{Limit: 1e9, Period: "MONTH"}})
	keys := newFakeKeys()
	addTestKeys(keys)
	keys.records[plans.HashKey(goodKey, nil)].Calendar = cal
	s := New(Options{Keys: keys, Engine: statesEngine{}, Metrics: NewMetrics(), Transport: fixedTransport{},
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), AccessLog: NewAccessLog(io.Discard, false)})
	if err := s.SetSnapshot(snap); err != nil {
		b.Fatal(err)
	}
	serveKeyedRequests(b, s)
}

// serveKeyedRequests has h serve GET /prod/items/42 with the test key
// until the benchmark ends, each answered 200.
func serveKeyedRequests(b *testing.B, h http.Handler) {
	req := httptest.NewRequest("GET", "http://"+testHost+"/prod/items/42", nil)
	req.Header.Set("x-api-key", goodKey)
	w := &benchWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		w.code = 0
		delete(req.Header, HeaderAPIKeyID) // as a fresh request: the gateway sets it
		h.ServeHTTP(w, req)
		if w.code != 200 {
			b.Fatalf("status %d", w.code)
		}
	}
}

// BenchmarkBareProxyFixed is the bench's bare proxy (internal/benchproxy,
// cmd/bareproxy) serving BenchmarkServeProxyKeyed's request through the
// same in-memory upstream: what a request costs a proxy that does nothing
// else, the base the gateway's own work is measured against
// (docs/benchmarks.md).
func BenchmarkBareProxyFixed(b *testing.B) {
	up, _ := url.Parse("http://upstream.test")
	p := benchproxy.New(up, 32)
	p.Transport = fixedTransport{}
	serveKeyedRequests(b, p)
}

// statesEngine admits every request with the plan and quota states a
// real decision carries (the rate-limit headers are written from them).
type statesEngine struct{ allowEngine }

var benchStates = [2]limit.State{{Limit: 1e6, Remaining: 999_999, Window: time.Second},
	{Limit: 1e9, Remaining: 999_999_999, Window: 30 * 24 * time.Hour}}

func (statesEngine) Decide(context.Context, *limit.Request) (limit.Decision, error) {
	now := time.Now()
	d := limit.Decision{Allowed: true, Now: now, Plan: &benchStates[0], Quota: &benchStates[1]}
	return d, nil
}

// fixedTransport answers every request with a small JSON 200.
type fixedTransport struct{}

func (fixedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, ProtoMajor: 1, ProtoMinor: 1, Request: r, ContentLength: 11,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(`{"ok":true}`))}, nil
}

// benchWriter is a ResponseWriter that keeps the status and drops the
// body (a recorder's allocations would count as the handler's).
type benchWriter struct {
	h    http.Header
	code int
}

func (w *benchWriter) Header() http.Header  { return w.h }
func (w *benchWriter) Flush()               {} // a server's response flushes without allocating
func (w *benchWriter) WriteHeader(code int) { w.code = code }
func (w *benchWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = 200
	}
	return len(p), nil
}
