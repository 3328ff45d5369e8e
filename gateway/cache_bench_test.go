package gateway

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"tollgate/engine"
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

// BenchmarkCacheMiss measures the miss path of a keyed caching method as
// production runs it: key check, a decision admitted by a capacity lease,
// the generation and entry read, the upstream call (answered in memory:
// fixedTransport), the fill after the response, metrics and the access log
// (JSON, to io.Discard), against the real Redis; every request has a query
// parameter of its own, so each misses. "uncached" is the same request
// path on the uncached POST of the method: the cost the cache adds is the
// difference. Serial requests decide in a round trip each (a lease is
// taken for requests that overlap); "parallel" runs 4 callers per
// processor, which do. trips/op are the Redis round trips (pipelines and
// single commands) per request, cmds/op the commands the node sent.
func BenchmarkCacheMiss(b *testing.B) {
	env := newCacheEnv(b)
	var trips tripCounter
	env.rdb.AddHook(&trips)
	eng := engine.New(env.rdb, engine.Options{Prefix: env.prefix, Timeout: time.Second})
	if err := eng.Load(b.Context()); err != nil {
		b.Fatal(err)
	}
	m := proxy(true, "http://upstream.test/items")
	m.MethodIntegration.CacheKeyParameters = []string{"method.request.querystring.q"}
	snap := cacheSnapshot(cachedStage(map[string]plans.MethodSetting{"*/*": caching(3600)}), func(s *plans.Snapshot) {
		s.Account = plans.Throttle{RateLimit: 1e6, BurstLimit: 1e6}
		s.Plans["plan01"].Throttle = &plans.Throttle{RateLimit: 1e6, BurstLimit: 1e6}
		s.Plans["plan01"].Quota = &plans.Quota{Limit: 2e9, Period: "MONTH"}
	}, res{"/items", methods(m, "GET", "POST")})
	keys := newFakeKeys()
	keys.add(cacheKey1, &plans.KeyRecord{KeyID: "key0000001", Enabled: true, PlanIDs: []string{"plan01"}})
	s := New(Options{Keys: keys, Engine: newLimiter(b, eng, true), Metrics: NewMetrics(), Transport: fixedTransport{},
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), AccessLog: NewAccessLog(io.Discard, false)})
	if err := s.SetSnapshot(snap); err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	serve := func(b *testing.B, method string) {
		req := httptest.NewRequest(method, "http://"+testHost+"/prod/items?q="+strconv.FormatInt(n.Add(1), 10), nil)
		req.Header.Set("x-api-key", cacheKey1)
		w := &benchWriter{h: http.Header{}}
		s.ServeHTTP(w, req)
		if want := map[string]string{http.MethodGet: "Miss", http.MethodPost: ""}[method]; w.code != http.StatusOK || w.h.Get("X-Cache") != want {
			b.Fatalf("%s: got %d X-Cache %q, want 200 %q", method, w.code, w.h.Get("X-Cache"), want)
		}
	}
	run := func(name, method string, parallelism int) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			trips.cmds.Store(0)
			trips.pipes.Store(0)
			trips.piped.Store(0)
			if parallelism == 0 {
				for b.Loop() {
					serve(b, method)
				}
			} else {
				b.SetParallelism(parallelism)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						serve(b, method)
					}
				})
			}
			b.ReportMetric(float64(trips.cmds.Load()+trips.pipes.Load())/float64(b.N), "trips/op")
			b.ReportMetric(float64(trips.cmds.Load()+trips.piped.Load())/float64(b.N), "cmds/op")
		})
	}
	run("serial", http.MethodGet, 0)
	run("uncached serial", http.MethodPost, 0)
	run("parallel", http.MethodGet, 4)
	run("uncached parallel", http.MethodPost, 4)
}
