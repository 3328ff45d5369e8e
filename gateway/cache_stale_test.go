package gateway

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tollgate/internal/clocktest"
	"tollgate/internal/waittest"
	"tollgate/plans"
)

// staleStage is stage testStage caching GET for ttl seconds, with tags.
func staleStage(ttl int32, tags map[string]string) plans.Stage {
	st := cachedStage(map[string]plans.MethodSetting{"*/*": caching(ttl)})
	st.Tags = tags
	return st
}

// clockEnv is a cache environment whose nodes read a test clock.
func clockEnv(t *testing.T) (*cacheEnv, *clocktest.Clock) {
	clock := clocktest.New(time.Unix(1_800_000_000, 0))
	env := newCacheEnv(t)
	env.clock = clock.Now
	return env, clock
}

// upstreamFailure is one way an upstream fails, and what a client gets
// when no stale entry covers it.
type upstreamFailure struct {
	name    string
	reason  string // tollgate_cache_stale_total's
	fail    func(t *testing.T, u *upstream)
	status  int
	errType string // x-amzn-ErrorType of the gateway's own answer; "" for the upstream's
}

var upstreamFailures = []upstreamFailure{
	{"answers 503", staleError, func(_ *testing.T, u *upstream) { u.set(func(u *upstream) { u.status = 503 }) }, 503, ""},
	{"answers 500", staleError, func(_ *testing.T, u *upstream) { u.set(func(u *upstream) { u.status = 500 }) }, 500, ""},
	{"times out", staleTimeout, func(t *testing.T, u *upstream) { u.hold(t) }, 504, "IntegrationTimeoutException"},
	{"refuses the connection", staleRefused, func(_ *testing.T, u *upstream) { u.srv.Close() }, 502, "BadGatewayException"},
}

// wantStale checks a stale answer: 200, X-Cache Stale, the entry's body
// and Age, no error type.
func wantStale(t *testing.T, label string, got response, body string, age int) {
	t.Helper()
	want(t, label, got, 200, "Stale", body)
	if a := got.header.Get("Age"); a != strconv.Itoa(age) {
		t.Errorf("%s: Age: got %q, want %d", label, a, age)
	}
	if e := got.header.Get("x-amzn-ErrorType"); e != "" {
		t.Errorf("%s: x-amzn-ErrorType: got %q, want none", label, e)
	}
}

// TestCacheStaleIfErrorOnTwoNodes: with the stage tagged
// tollgate:cache-stale-if-error=30, an entry filled by one node answers on
// both, stale, for 30 s past its TTL while the upstream answers 5xx,
// times out or refuses the connection; each is counted by reason; after
// the window the failure passes.
func TestCacheStaleIfErrorOnTwoNodes(t *testing.T) {
	for _, f := range upstreamFailures {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			u := newUpstream(t)
			env, clock := clockEnv(t)
			m := keyedProxy(u, "/items")
			m.MethodIntegration.TimeoutInMillis = 1000
			snap := func() *plans.Snapshot {
				return cacheSnapshot(staleStage(60, map[string]string{plans.CacheStaleIfErrorTag: "30"}), nil, res{"/items", methods(m, "GET")})
			}
			nodes := []*testGateway{env.gateway(t, snap(), nil), env.gateway(t, snap(), nil)}
			want(t, "fill on node 1", nodes[0].get(t, "/prod/items"), 200, "Miss", "v1 GET /items")
			f.fail(t, u)
			clock.Add(30 * time.Second)
			want(t, "fresh on node 2", nodes[1].get(t, "/prod/items"), 200, "Hit", "v1 GET /items")
			clock.Add(31 * time.Second) // 1 s past the TTL
			for i, n := range nodes {
				got := n.get(t, "/prod/items")
				wantStale(t, fmt.Sprintf("node %d, 1 s past the TTL", i+1), got, "v1 GET /items", 61)
				line := n.logLine(t, got.header.Get("x-amzn-RequestId")) // metrics are recorded before it
				if line["error_type"] != nil || line["cache"] != "Stale" {
					t.Errorf("node %d: access log: got error_type %v, cache %v, want none and Stale", i+1, line["error_type"], line["cache"])
				}
				stale := counterValue(t, n.metrics.CacheStale.WithLabelValues(testAPI, testStage, "GET", "/items", f.reason))
				hits := counterValue(t, n.metrics.CacheHits.WithLabelValues(testAPI, testStage, "GET", "/items"))
				if stale != 1 || hits != float64(i+1) {
					t.Errorf("node %d: tollgate_cache_stale_total{reason=%q}, _hits_total: got %v, %v, want 1, %d", i+1, f.reason, stale, hits, i+1)
				}
			}
			clock.Add(29 * time.Second) // the window ended
			for i, n := range nodes {
				got := n.get(t, "/prod/items")
				want(t, fmt.Sprintf("node %d, 30 s past the TTL", i+1), got, f.status, "Miss", "")
				if e := got.header.Get("x-amzn-ErrorType"); e != f.errType {
					t.Errorf("node %d: x-amzn-ErrorType: got %q, want %q", i+1, e, f.errType)
				}
			}
		})
	}
}

// TestCacheStaleEntryOutlivesItsTTLInRedis: on the real clock, the entry
// of a 1 s TTL stays in Redis for its stale window, so a node that never
// saw it answers stale once the upstream fails.
func TestCacheStaleEntryOutlivesItsTTLInRedis(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	env := newCacheEnv(t)
	snap := func() *plans.Snapshot {
		return cacheSnapshot(staleStage(1, map[string]string{plans.CacheStaleIfErrorTag: "60"}), nil, res{"/items", methods(keyedProxy(u, "/items"), "GET")})
	}
	nodes := []*testGateway{env.gateway(t, snap(), nil), env.gateway(t, snap(), nil)}
	want(t, "fill on node 1", nodes[0].get(t, "/prod/items"), 200, "Miss", "v1 GET /items")
	u.set(func(u *upstream) { u.status = 503 })
	waittest.Until(t, "node 2 answers stale", 10*time.Second, func() bool {
		got := nodes[1].get(t, "/prod/items")
		if x := got.header.Get("X-Cache"); got.status != 200 || x != "Hit" && x != "Stale" || got.body != "v1 GET /items" {
			t.Fatalf("past the TTL: got %d %q %q, want 200 Hit or Stale with the entry", got.status, x, got.body)
		}
		return got.header.Get("X-Cache") == "Stale"
	})
}

// TestCacheStaleIfErrorFromTheUpstream: an upstream's own
// "Cache-Control: stale-if-error=N" lets its entry answer stale for N s
// past the TTL, without any stage tag; without it the failure passes.
func TestCacheStaleIfErrorFromTheUpstream(t *testing.T) {
	t.Parallel()
	granted, plain := newUpstream(t), newUpstream(t)
	granted.set(func(u *upstream) { u.header = http.Header{"Cache-Control": {"max-age=5, stale-if-error=100"}} })
	env, clock := clockEnv(t)
	tg := env.gateway(t, cacheSnapshot(staleStage(60, nil), nil,
		res{"/granted", methods(keyedProxy(granted, "/granted"), "GET")},
		res{"/plain", methods(keyedProxy(plain, "/plain"), "GET")}), nil)
	want(t, "fill granted", tg.get(t, "/prod/granted"), 200, "Miss", "")
	want(t, "fill plain", tg.get(t, "/prod/plain"), 200, "Miss", "")
	for _, u := range []*upstream{granted, plain} {
		u.set(func(u *upstream) { u.status, u.header = 503, nil })
	}
	clock.Add(61 * time.Second)
	wantStale(t, "granted, 1 s past the TTL", tg.get(t, "/prod/granted"), "v1 GET /granted", 61)
	want(t, "plain, 1 s past the TTL", tg.get(t, "/prod/plain"), 503, "Miss", "")
	clock.Add(99*time.Second - time.Millisecond)
	wantStale(t, "granted, just within its window", tg.get(t, "/prod/granted"), "v1 GET /granted", 159)
	clock.Add(time.Millisecond)
	want(t, "granted, its window ended", tg.get(t, "/prod/granted"), 503, "Miss", "")
}

// TestCacheNeverStaleWhenForbidden: must-revalidate, proxy-revalidate and
// no-cache forbid stale answers, on error and while revalidating,
// whatever the stage and the upstream grant; what the cache never stores
// is never served stale either.
func TestCacheNeverStaleWhenForbidden(t *testing.T) {
	cases := []struct {
		name   string
		header http.Header
	}{
		{"must-revalidate", http.Header{"Cache-Control": {"max-age=60, stale-if-error=600, must-revalidate"}}},
		{"proxy-revalidate", http.Header{"Cache-Control": {"proxy-revalidate"}}},
		{"no-cache", http.Header{"Cache-Control": {`no-cache="X-A", stale-if-error=600`}}},
		{"no-store", http.Header{"Cache-Control": {"no-store, stale-if-error=600"}}},
		{"private", http.Header{"Cache-Control": {"private, stale-if-error=600"}}},
		{"Set-Cookie", http.Header{"Set-Cookie": {"s=1"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			u := newUpstream(t)
			u.set(func(u *upstream) { u.header = c.header })
			env, clock := clockEnv(t)
			tg := env.gateway(t, cacheSnapshot(staleStage(60, map[string]string{plans.CacheStaleIfErrorTag: "600", plans.CacheStaleWhileRevalidateTag: "600"}), nil,
				res{"/items", methods(keyedProxy(u, "/items"), "GET")}), nil)
			want(t, "fill", tg.get(t, "/prod/items"), 200, "Miss", "")
			u.set(func(u *upstream) { u.status, u.header = 503, nil })
			clock.Add(61 * time.Second)
			want(t, "1 s past the TTL", tg.get(t, "/prod/items"), 503, "Miss", "")
		})
	}
}

// TestCacheFlushEndsStaleAnswers: a stage cache flush makes the old
// entries unreachable, stale ones too: on both nodes the failure passes,
// for either window. HEAD is answered stale without a body before the
// flush.
func TestCacheFlushEndsStaleAnswers(t *testing.T) {
	for _, tag := range []string{plans.CacheStaleIfErrorTag, plans.CacheStaleWhileRevalidateTag} {
		t.Run(tag, func(t *testing.T) {
			t.Parallel()
			flushEndsStaleAnswers(t, tag)
		})
	}
}

func flushEndsStaleAnswers(t *testing.T, tag string) {
	u := newUpstream(t)
	env, clock := clockEnv(t)
	snap := func() *plans.Snapshot {
		return cacheSnapshot(staleStage(60, map[string]string{tag: "600"}), nil, res{"/items", methods(keyedProxy(u, "/items"), "GET")})
	}
	nodes := []*testGateway{env.gateway(t, snap(), nil), env.gateway(t, snap(), nil)}
	want(t, "fill", nodes[0].get(t, "/prod/items"), 200, "Miss", "v1 GET /items")
	u.set(func(u *upstream) { u.status = 503 })
	clock.Add(61 * time.Second)
	for i, n := range nodes {
		wantStale(t, fmt.Sprintf("node %d before the flush", i+1), n.get(t, "/prod/items"), "v1 GET /items", 61)
	}
	head := nodes[1].do(t, http.MethodHead, "/prod/items", "x-api-key", cacheKey1)
	wantStale(t, "HEAD before the flush", head, "", 61)
	if head.body != "" || head.header.Get("Content-Length") != strconv.Itoa(len("v1 GET /items")) {
		t.Errorf("stale HEAD: got body %q, Content-Length %q, want none and %d", head.body, head.header.Get("Content-Length"), len("v1 GET /items"))
	}
	env.flush(t, testStage)
	for i, n := range nodes {
		want(t, fmt.Sprintf("node %d after the flush", i+1), n.get(t, "/prod/items"), 503, "Miss", "")
	}
}

// TestCacheStaleAnswersAreCharged: a stale answer needs a valid key and
// passes the throttles and quota, which it is charged to, as a hit.
func TestCacheStaleAnswersAreCharged(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	env, clock := clockEnv(t)
	tg := env.gateway(t, cacheSnapshot(staleStage(60, map[string]string{plans.CacheStaleIfErrorTag: "600"}), func(s *plans.Snapshot) {
		s.Plans["plan01"].Quota = &plans.Quota{Limit: 3, Period: plans.PeriodDay}
	}, res{"/items", methods(keyedProxy(u, "/items"), "GET")}), nil)
	want(t, "fill", tg.get(t, "/prod/items"), 200, "Miss", "")
	u.set(func(u *upstream) { u.status = 503 })
	clock.Add(61 * time.Second)
	got := tg.getAs(t, "", "/prod/items")
	wantError(t, got, 403, "Forbidden", "ForbiddenException")
	if got.header.Get("X-Cache") != "" {
		t.Errorf("without a key: X-Cache: got %q, want none", got.header.Get("X-Cache"))
	}
	for _, remaining := range []string{"1", "0"} {
		got := tg.get(t, "/prod/items")
		wantStale(t, "stale", got, "v1 GET /items", 61)
		if r := got.header.Get("X-RateLimit-Remaining"); r != remaining {
			t.Errorf("quota remaining: got %q, want %s", r, remaining)
		}
	}
	wantError(t, tg.get(t, "/prod/items"), 429, "Limit Exceeded", "LimitExceededException")
}

// TestCacheStaleIfErrorSingleFlight: concurrent requests for one stale
// entry on one node make one upstream call; when it fails, they all
// answer stale from its failure.
func TestCacheStaleIfErrorSingleFlight(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	env, clock := clockEnv(t)
	tg := env.gateway(t, cacheSnapshot(staleStage(60, map[string]string{plans.CacheStaleIfErrorTag: "600"}), nil,
		res{"/items", methods(keyedProxy(u, "/items"), "GET")}), nil)
	want(t, "fill", tg.get(t, "/prod/items"), 200, "Miss", "")
	u.set(func(u *upstream) { u.status = 503 })
	release := u.hold(t)
	clock.Add(61 * time.Second)
	const n = 5
	answers := make([]response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { answers[i] = tg.get(t, "/prod/items") })
	}
	waits := tg.metrics.CacheFillWaits.WithLabelValues(testAPI, testStage, "GET", "/items")
	waittest.Until(t, "one call, the others waiting for it", 10*time.Second, func() bool { return u.hits.Load() == 2 && counterValue(t, waits) == n-1 })
	release()
	wg.Wait()
	for i, got := range answers {
		wantStale(t, "request "+strconv.Itoa(i), got, "v1 GET /items", 61)
	}
	u.wantHits(t, "end", 2)
}

// TestCacheStaleWhenAFailedBodyBreaksOff: an upstream that answers 503
// and drops the connection mid-body still gets the stale entry answering,
// not a broken response.
func TestCacheStaleWhenAFailedBodyBreaksOff(t *testing.T) {
	t.Parallel()
	var broken atomic.Bool
	up := httptestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !broken.Load() {
			_, _ = io.WriteString(w, "whole")
			return
		}
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "part")
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	}))
	env, clock := clockEnv(t)
	tg := env.gateway(t, cacheSnapshot(staleStage(60, map[string]string{plans.CacheStaleIfErrorTag: "600"}), nil,
		res{"/items", methods(proxy(true, up.URL+"/items"), "GET")}), nil)
	want(t, "fill", tg.get(t, "/prod/items"), 200, "Miss", "whole")
	broken.Store(true)
	clock.Add(61 * time.Second)
	wantStale(t, "the failed body broke off", tg.get(t, "/prod/items"), "whole", 61)
}

// TestCacheStaleWhileRevalidateOnTwoNodes: with the stage tagged
// tollgate:cache-stale-while-revalidate=30, concurrent requests for an
// expired entry all answer stale at once, while
// the upstream has not answered the refresh yet; each node makes one
// refresh call; the refreshed entry then answers as a hit on both nodes.
func TestCacheStaleWhileRevalidateOnTwoNodes(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	env, clock := clockEnv(t)
	snap := func() *plans.Snapshot {
		return cacheSnapshot(staleStage(60, map[string]string{plans.CacheStaleWhileRevalidateTag: "30"}), nil, res{"/items", methods(keyedProxy(u, "/items"), "GET")})
	}
	nodes := []*testGateway{env.gateway(t, snap(), nil), env.gateway(t, snap(), nil)}
	want(t, "fill", nodes[0].get(t, "/prod/items"), 200, "Miss", "v1 GET /items")
	u.set(func(u *upstream) { u.version = "v2" })
	release := u.hold(t)
	clock.Add(61 * time.Second)
	const perNode = 8
	answers := make([]response, 2*perNode)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() { answers[i] = nodes[i%2].do(t, "GET", "/prod/items", "x-api-key", cacheKey1) })
	}
	answered := make(chan struct{})
	go func() { wg.Wait(); close(answered) }()
	select { // the refreshes still wait on the gate
	case <-answered:
	case <-time.After(10 * time.Second):
		t.Fatal("the answers waited for the refresh")
	}
	for i, got := range answers {
		wantStale(t, "request "+strconv.Itoa(i), got, "v1 GET /items", 61)
	}
	waittest.Until(t, "a refresh from each node reached the upstream", 10*time.Second, func() bool { return u.hits.Load() >= 3 })
	release()
	for i, n := range nodes {
		n.fills.Wait()
		if got := counterValue(t, n.metrics.CacheStale.WithLabelValues(testAPI, testStage, "GET", "/items", staleRevalidate)); got != perNode {
			t.Errorf("node %d: tollgate_cache_stale_total{reason=revalidate}: got %v, want %d", i+1, got, perNode)
		}
	}
	u.wantHits(t, "one refresh per node", 3)
	for i, n := range nodes {
		got := n.get(t, "/prod/items")
		want(t, fmt.Sprintf("node %d after the refresh", i+1), got, 200, "Hit", "v2 GET /items")
		if a := got.header.Get("Age"); a != "0" {
			t.Errorf("node %d: Age of the refreshed entry: got %q, want 0", i+1, a)
		}
	}
}

// TestCacheStaleWhileRevalidateRefreshFails: the upstream's own
// stale-while-revalidate works without a stage tag; a refresh that fails
// leaves the entry as it was, the next request starts another, and the
// failure passes once the window ended.
func TestCacheStaleWhileRevalidateRefreshFails(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	u.set(func(u *upstream) { u.header = http.Header{"Cache-Control": {"max-age=1, stale-while-revalidate=30"}} })
	env, clock := clockEnv(t)
	tg := env.gateway(t, cacheSnapshot(staleStage(60, nil), nil, res{"/items", methods(keyedProxy(u, "/items"), "GET")}), nil)
	want(t, "fill", tg.get(t, "/prod/items"), 200, "Miss", "v1 GET /items")
	u.set(func(u *upstream) { u.status = 503 })
	clock.Add(61 * time.Second)
	for i := range 2 {
		wantStale(t, "stale while the refresh fails "+strconv.Itoa(i), tg.get(t, "/prod/items"), "v1 GET /items", 61)
		u.wantHits(t, "refreshes", int64(2+i))
	}
	clock.Add(30 * time.Second)
	want(t, "the window ended", tg.get(t, "/prod/items"), 503, "Miss", "")
}
