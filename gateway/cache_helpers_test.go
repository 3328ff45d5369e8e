package gateway

import (
	"cmp"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/engine"
	"tollgate/internal/redistest"
	"tollgate/keyspace"
	"tollgate/plans"
)

// Test API keys of the cache tests: k1 may not invalidate, k2 may.
const (
	cacheKey1 = "cachetestkey1aaaaaaaaaaaaaaaaaa"
	cacheKey2 = "cachetestkey2bbbbbbbbbbbbbbbbbb"
)

// upstream is the counting test upstream of the cache cases: it answers "<version> <METHOD> <request URI>" with
// X-Upstream-Hits, after statuses queued by a test (then status, or 200), with the
// extra headers, body size and delay a test sets.
type upstream struct {
	srv  *httptest.Server
	hits atomic.Int64

	mu       sync.Mutex
	version  string
	statuses []int
	status   int // when set, the status of every answer after the queued ones (else 200)
	header   http.Header
	size     int
	delay    time.Duration
	echoAE   bool          // append " ae=<Accept-Encoding>" to the body
	echoBody bool          // append " body=<bytes of the request body>" to the body
	gate     chan struct{} // when set, answers wait until it is closed
}

func newUpstream(t testing.TB) *upstream {
	u := &upstream{version: "v1"}
	u.srv = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	n := u.hits.Add(1)
	u.mu.Lock()
	status, delay, size, body := cmp.Or(u.status, http.StatusOK), u.delay, u.size, u.version+" "+r.Method+" "+r.URL.RequestURI()
	if u.echoAE {
		body += " ae=" + r.Header.Get("Accept-Encoding")
	}
	if u.echoBody {
		n, _ := io.Copy(io.Discard, r.Body)
		body += " body=" + strconv.FormatInt(n, 10)
	}
	if len(u.statuses) > 0 {
		status, u.statuses = u.statuses[0], u.statuses[1:]
	}
	for k, vs := range u.header {
		w.Header()[k] = vs
	}
	gate := u.gate
	u.mu.Unlock()
	if gate != nil {
		<-gate
	}
	time.Sleep(delay)
	if size > 0 {
		body = strings.Repeat("x", size)
	}
	w.Header().Set("X-Upstream-Hits", strconv.FormatInt(n, 10))
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write([]byte(body))
	}
}

// hold makes the upstream's answers wait until the returned release is
// called (at the latest at the test's end, before the upstream closes: it
// waits for its handlers).
func (u *upstream) hold(t testing.TB) (release func()) {
	gate := make(chan struct{})
	release = sync.OnceFunc(func() { close(gate) })
	t.Cleanup(release)
	u.set(func(u *upstream) { u.gate = gate })
	return release
}

// set changes the upstream under its lock.
func (u *upstream) set(f func(u *upstream)) {
	u.mu.Lock()
	defer u.mu.Unlock()
	f(u)
}

// cachedStage returns stage testStage with the cache cluster on and the
// given method settings (keys as in methodSettings).
func cachedStage(settings map[string]plans.MethodSetting) plans.Stage {
	return plans.Stage{StageName: testStage, CacheClusterEnabled: true, CacheClusterSize: "0.5", MethodSettings: settings}
}

// caching returns a method setting with caching on for ttl seconds.
func caching(ttl int32) plans.MethodSetting {
	ms := plans.DefaultMethodSetting()
	ms.CachingEnabled, ms.CacheTTLInSeconds = true, ttl
	return ms
}

// keyedProxy is a keyed HTTP_PROXY method on u with cacheKeyParameters.
func keyedProxy(u *upstream, path string, params ...string) *plans.Method {
	m := proxy(true, u.srv.URL+path)
	m.MethodIntegration.CacheKeyParameters = params
	return m
}

// cacheSnapshot is a snapshot over rs with plan "plan01" (throttle
// 10000/10000, no quota) unless edit changes it.
func cacheSnapshot(stage plans.Stage, edit func(*plans.Snapshot), rs ...res) *plans.Snapshot {
	snap := snapshot(stage, rs...)
	addPlan(snap, plans.UsagePlan{ID: "plan01", Throttle: &plans.Throttle{RateLimit: 10000, BurstLimit: 10000}})
	if edit != nil {
		edit(snap)
	}
	return snap
}

// cacheEnv is what gateways of one test share: the Redis client and key
// prefix (limiter, config and cache alike).
type cacheEnv struct {
	rdb    *redis.Client
	prefix string
	clock  func() time.Time // the nodes' cache clock; nil: the real one
}

func newCacheEnv(t testing.TB) *cacheEnv {
	rdb, prefix := redistest.MustClient(t)
	return &cacheEnv{rdb: rdb, prefix: prefix}
}

// gateway starts one caching gateway node on snap; cacheRDB nil means the
// cache shares the limiter's client. k1 and k2 are keys of plan01.
func (env *cacheEnv) gateway(t testing.TB, snap *plans.Snapshot, cacheRDB redis.UniversalClient) *testGateway {
	t.Helper()
	// A 1 s deadline: a loaded CI machine; the 50ms default is for production.
	eng := engine.New(env.rdb, engine.Options{Prefix: env.prefix, Timeout: time.Second, CacheRedis: cacheRDB})
	if err := eng.Load(t.Context()); err != nil && cacheRDB == nil { // a test's own cache Redis may be down
		t.Fatalf("engine Load: %v", err)
	}
	tg := &testGateway{keys: newFakeKeys(), engine: &countingEngine{inner: newLimiter(t, eng, false)}, prefix: env.prefix, logs: &syncBuffer{}}
	tg.keys.add(cacheKey1, &plans.KeyRecord{KeyID: "key0000001", Enabled: true, PlanIDs: []string{"plan01"}})
	tg.keys.add(cacheKey2, &plans.KeyRecord{KeyID: "key0000002", Enabled: true, PlanIDs: []string{"plan01"}, InvalidateCache: true})
	tg.Server = New(Options{Keys: tg.keys, Engine: tg.engine, Logger: slog.New(slog.NewJSONHandler(tg.logs, nil)), CacheClock: env.clock})
	if err := tg.SetSnapshot(snap); err != nil {
		t.Fatalf("SetSnapshot: %v", err)
	}
	tg.http = httptest.NewServer(tg.Server)
	t.Cleanup(tg.http.Close)
	return tg
}

// genKey is the stage cache generation key, which the admin bumps.
func (env *cacheEnv) genKey(apiID, stage string) string {
	return keyspace.Space{Prefix: env.prefix}.CacheGeneration(apiID, stage)
}

// flush bumps the stage's cache generation as the admin's FlushStageCache does.
func (env *cacheEnv) flush(t *testing.T, stage string) {
	t.Helper()
	if err := env.rdb.Incr(t.Context(), env.genKey(testAPI, stage)).Err(); err != nil {
		t.Fatalf("flush: %v", err)
	}
}

// get sends a GET with key k1 and the header pairs hdr.
func (tg *testGateway) get(t *testing.T, path string, hdr ...string) response {
	t.Helper()
	return tg.getAs(t, cacheKey1, path, hdr...)
}

// getAs sends a GET with the API key key ("" for none).
func (tg *testGateway) getAs(t *testing.T, key, path string, hdr ...string) response {
	t.Helper()
	if key != "" {
		hdr = append([]string{"x-api-key", key}, hdr...)
	}
	res := tg.do(t, http.MethodGet, path, hdr...)
	tg.fills.Wait() // the fill lands after the response; later steps expect it
	return res
}

// want checks a response's status, X-Cache and body (body "" is not checked).
func want(t *testing.T, label string, got response, status int, xcache, body string) {
	t.Helper()
	if got.status != status {
		t.Errorf("%s: status: got %d, want %d (body %q)", label, got.status, status, got.body)
	}
	if h := got.header.Get("X-Cache"); h != xcache {
		t.Errorf("%s: X-Cache: got %q, want %q", label, h, xcache)
	}
	if body != "" && got.body != body {
		t.Errorf("%s: body: got %q, want %q", label, got.body, body)
	}
}

// wantHits checks the upstream's hit count.
func (u *upstream) wantHits(t *testing.T, label string, n int64) {
	t.Helper()
	if got := u.hits.Load(); got != n {
		t.Errorf("%s: upstream hits: got %d, want %d", label, got, n)
	}
}

// deadAddr returns a loopback address where nothing listens.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}
