package gateway

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tollgate/engine/failopen"
	"tollgate/engine/lease"
	"tollgate/engine/refusal"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"tollgate/cache"
	"tollgate/engine"

	"tollgate/internal/redistest"
	"tollgate/limit"
	"tollgate/plans"
)

const (
	testAPI   = "a1b2c3d4e5"
	testStage = "prod"
	testHost  = testAPI + ".execute-api.localhost"
)

// res is one resource of a test deployment: its path and methods.
type res struct {
	path    string
	methods map[string]*plans.Method
}

// mock returns a MOCK method; keyed sets apiKeyRequired.
func mock(keyed bool) *plans.Method {
	return &plans.Method{AuthorizationType: "NONE", APIKeyRequired: keyed,
		MethodIntegration: &plans.Integration{Type: plans.IntegrationMock, TimeoutInMillis: plans.DefaultTimeoutMillis}}
}

// proxy returns an HTTP_PROXY method calling uri.
func proxy(keyed bool, uri string) *plans.Method {
	return &plans.Method{AuthorizationType: "NONE", APIKeyRequired: keyed,
		MethodIntegration: &plans.Integration{Type: plans.IntegrationHTTPProxy, HTTPMethod: "ANY", URI: uri, TimeoutInMillis: plans.DefaultTimeoutMillis}}
}

// methods builds a method map with the same method for each verb.
func methods(m *plans.Method, verbs ...string) map[string]*plans.Method {
	out := map[string]*plans.Method{}
	for _, v := range verbs {
		c := *m
		c.HTTPMethod = v
		out[v] = &c
	}
	return out
}

// resources turns test resources into a resource tree with ids and
// parents, adding the root and any missing intermediate resource.
func resources(rs ...res) []plans.Resource {
	byPath := map[string]*plans.Resource{"/": {ID: "root", Path: "/"}}
	for _, r := range rs {
		parts := strings.Split(strings.TrimPrefix(r.path, "/"), "/")
		parent := byPath["/"]
		for i := range parts {
			if r.path == "/" {
				break
			}
			p := "/" + strings.Join(parts[:i+1], "/")
			if byPath[p] == nil {
				byPath[p] = &plans.Resource{ID: "r" + string(rune('a'+len(byPath))), ParentID: parent.ID, PathPart: parts[i], Path: p}
			}
			parent = byPath[p]
		}
		byPath[r.path].ResourceMethods = r.methods
	}
	out := make([]plans.Resource, 0, len(byPath))
	for _, r := range byPath {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// snapshot returns a snapshot with one API (testAPI) and one stage
// (testStage) serving rs, a generous account throttle and no plans.
func snapshot(stage plans.Stage, rs ...res) *plans.Snapshot {
	if stage.StageName == "" {
		stage.StageName = testStage
	}
	return &plans.Snapshot{
		Version: 1,
		Account: plans.Throttle{RateLimit: 10000, BurstLimit: 5000},
		Apis: map[string]*plans.ApiConfig{testAPI: {ID: testAPI, ApiKeySource: "HEADER",
			Stages: map[string]*plans.StageConfig{stage.StageName: {Stage: stage, Resources: resources(rs...)}}}},
		Plans: map[string]*plans.UsagePlan{},
	}
}

// addPlan adds a usage plan covering (testAPI, testStage) to snap.
func addPlan(snap *plans.Snapshot, p plans.UsagePlan) {
	if p.Name == "" {
		p.Name = p.ID
	}
	if p.ApiStages == nil {
		p.ApiStages = []plans.ApiStage{{ApiID: testAPI, Stage: testStage}}
	}
	snap.Plans[p.ID] = &p
}

// fakeKeys is a KeyLookup over a map of key value → record, with an
// optional error; it counts lookups. It stands in for push.Reader in unit
// tests (it is not Redis itself).
type fakeKeys struct {
	mu      sync.Mutex
	records map[string]*plans.KeyRecord // by hash
	cached  map[string]bool             // hashes a Lookup found
	err     error
	lookups atomic.Int64
}

func newFakeKeys() *fakeKeys { return &fakeKeys{records: map[string]*plans.KeyRecord{}} }

func (f *fakeKeys) add(value string, rec *plans.KeyRecord) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.records[plans.HashKey(value, nil)] = rec
}

func (f *fakeKeys) Lookup(_ context.Context, hash string) (*plans.KeyRecord, error) {
	f.lookups.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	if rec := f.records[hash]; rec != nil {
		if f.cached == nil {
			f.cached = map[string]bool{}
		}
		f.cached[hash] = true // as push.Reader caches what it found
		return rec, nil
	}
	return nil, nil
}

// Cached returns a record an earlier Lookup found.
func (f *fakeKeys) Cached(hash string) (*plans.KeyRecord, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.cached[hash] {
		return nil, false
	}
	return f.records[hash], true
}

// countingEngine counts the decisions asked of the engine it wraps (Decide
// and DecideLookup), which a test may swap.
type countingEngine struct {
	mu    sync.Mutex
	inner Engine
	calls atomic.Int64
}

func (c *countingEngine) get() Engine {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inner
}

func (c *countingEngine) Decide(ctx context.Context, req *limit.Request) (limit.Decision, error) {
	c.calls.Add(1)
	return c.get().Decide(ctx, req)
}

func (c *countingEngine) DecideLookup(ctx context.Context, req *limit.Request, lk *cache.Lookup) (limit.Decision, error) {
	c.calls.Add(1)
	return c.get().DecideLookup(ctx, req, lk)
}

func (c *countingEngine) Fill(ctx context.Context, lk *cache.Lookup, e *cache.Entry) error {
	return c.get().Fill(ctx, lk, e)
}

func (c *countingEngine) KeyUsage(ctx context.Context, keyID, planID string, q *limit.Quota) (limit.Usage, error) {
	return c.get().KeyUsage(ctx, keyID, planID, q)
}

func (c *countingEngine) Settle(ctx context.Context, s limit.Settlement) error {
	return c.get().Settle(ctx, s)
}

// limiter is a gateway node's limiter as cmd/tollgate stacks it on eng:
// refusal memory on top and, with leases, capacity leases below it
// (docs/architecture.md), and its settles through the node's pending
// charges; forget is what push events call.
type limiter struct {
	engine.Port
	refusals *refusal.Memory
	leases   *lease.Table
	settles  *failopen.Charges
}

// newLimiter stacks the layers on eng; leases adds capacity leases of the
// default lifetime (closed at cleanup).
func newLimiter(t testing.TB, eng *engine.Engine, leases bool) *limiter {
	l := &limiter{refusals: refusal.New(refusal.Options{}), settles: failopen.New(eng, failopen.Options{})}
	t.Cleanup(l.settles.Close)
	layers := []limit.Layer{}
	if leases {
		l.leases = lease.New(eng, lease.Options{})
		t.Cleanup(l.leases.Close)
		layers = append(layers, l.leases.Layer)
		l.refusals = refusal.New(refusal.Options{Keep: 2 * l.leases.Lifetime()})
	}
	layers = append(layers, l.refusals.Layer)
	l.Port = engine.Port{Engine: eng, Top: limit.Stack(eng, layers...), Settler: l.settles}
	return l
}

// forgetChange is push.ReaderOptions.OnEvent for the layers.
func (l *limiter) forgetChange(c plans.Change) {
	l.refusals.ForgetChange(c)
	if l.leases != nil {
		l.leases.ForgetChange(c)
	}
}

// swap replaces the wrapped engine and returns the previous one.
func (c *countingEngine) swap(e Engine) Engine {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.inner
	c.inner = e
	return old
}

// counterValue reads a counter's current value.
func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatalf("read counter: %v", err)
	}
	return m.GetCounter().GetValue()
}

// testGateway is a Server on a real engine (the test Redis) with its own
// key prefix, served over HTTP by httptest.
type testGateway struct {
	*Server
	http    *httptest.Server
	keys    *fakeKeys
	engine  *countingEngine
	settles *failopen.Charges
	prefix  string
	logs    *syncBuffer
}

// syncBuffer is a bytes.Buffer safe for concurrent writes (the log sink).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// mustGateway starts a gateway on snap with a real engine on the test
// Redis; edit adjusts the options before New.
func mustGateway(t *testing.T, snap *plans.Snapshot, edit func(*Options)) *testGateway {
	t.Helper()
	rdb, prefix := redistest.MustClient(t)
	return mustGatewayOn(t, rdb, prefix, snap, edit)
}

// mustGatewayOn is mustGateway on the limiter Redis rdb, its keys under
// prefix.
func mustGatewayOn(t *testing.T, rdb redis.UniversalClient, prefix string, snap *plans.Snapshot, edit func(*Options)) *testGateway {
	t.Helper()
	// A 5 s deadline: with the default 50 ms a loaded test machine sometimes
	// failed open (200 without limits) and flaked the header tests.
	eng := engine.New(rdb, engine.Options{Prefix: prefix, Timeout: 5 * time.Second})
	if err := eng.Load(t.Context()); err != nil {
		t.Fatalf("engine Load: %v", err)
	}
	l := newLimiter(t, eng, false)
	tg := &testGateway{keys: newFakeKeys(), engine: &countingEngine{inner: l}, settles: l.settles, prefix: prefix, logs: &syncBuffer{}}
	opts := Options{
		Keys:   tg.keys,
		Engine: tg.engine,
		Logger: slog.New(slog.NewJSONHandler(tg.logs, nil)),
	}
	if edit != nil {
		edit(&opts)
	}
	tg.Server = New(opts)
	if err := tg.SetSnapshot(snap); err != nil {
		t.Fatalf("SetSnapshot: %v", err)
	}
	tg.http = httptest.NewServer(tg.Server)
	t.Cleanup(tg.http.Close)
	return tg
}

// response is a finished response: status, headers and body.
type response struct {
	status int
	header http.Header
	body   string
}

// do sends method path to the gateway with Host testHost and the given
// header pairs ("Name", "value", ...).
func (tg *testGateway) do(t *testing.T, method, path string, hdr ...string) response {
	t.Helper()
	return tg.doBody(t, method, path, nil, hdr...)
}

func (tg *testGateway) doBody(t *testing.T, method, path string, body io.Reader, hdr ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, tg.http.URL+path, body)
	if err != nil {
		t.Fatalf("NewRequest: %v", err)
	}
	req.Host = testHost
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := tg.http.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// wantError checks a gateway error response.
func wantError(t *testing.T, got response, status int, message, errType string) {
	t.Helper()
	if got.status != status {
		t.Errorf("status: got %d, want %d (body %s)", got.status, status, got.body)
	}
	if want := `{"message":"` + message + `"}`; got.body != want {
		t.Errorf("body: got %s, want %s", got.body, want)
	}
	if h := got.header.Get("x-amzn-ErrorType"); h != errType {
		t.Errorf("x-amzn-ErrorType: got %q, want %q", h, errType)
	}
}

// httptestServer serves h over HTTP until the test ends.
func httptestServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}
