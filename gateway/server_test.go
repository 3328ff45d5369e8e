package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"tollgate/cache"
	"tollgate/limit"
	"tollgate/plans"
)

func gaugeValue(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatalf("read gauge: %v", err)
	}
	return m.GetGauge().GetValue()
}

func TestSetSnapshotRejectsAndKeepsServing(t *testing.T) {
	t.Parallel()
	v1 := snapshot(plans.Stage{}, res{"/old", methods(mock(false), "GET")})
	metrics := NewMetrics()
	tg := mustGateway(t, v1, func(o *Options) { o.Metrics = metrics })
	if err := tg.Ready(); err != nil {
		t.Fatalf("Ready after a good snapshot: got %v, want nil", err)
	}
	bad := []struct {
		name string
		snap func() *plans.Snapshot
	}{
		{"nil", func() *plans.Snapshot { return nil }},
		{"two roots", func() *plans.Snapshot {
			s := snapshot(plans.Stage{}, res{"/new", methods(mock(false), "GET")})
			st := s.Apis[testAPI].Stages[testStage]
			st.Resources = append(st.Resources, plans.Resource{ID: "root2", Path: "/"})
			return s
		}},
		{"negative account throttle", func() *plans.Snapshot {
			s := snapshot(plans.Stage{}, res{"/new", methods(mock(false), "GET")})
			s.Account.RateLimit = -1
			return s
		}},
		{"stage name mismatch", func() *plans.Snapshot {
			s := snapshot(plans.Stage{}, res{"/new", methods(mock(false), "GET")})
			s.Apis[testAPI].Stages["other"] = s.Apis[testAPI].Stages[testStage]
			return s
		}},
		{"conflicting parameters", func() *plans.Snapshot {
			return snapshot(plans.Stage{}, res{"/new/{a}", methods(mock(false), "GET")}, res{"/new/{b}", methods(mock(false), "GET")})
		}},
	}
	for _, tc := range bad {
		if err := tg.SetSnapshot(tc.snap()); err == nil {
			t.Fatalf("%s: SetSnapshot got nil error, want one", tc.name)
		}
		if err := tg.Ready(); err == nil {
			t.Errorf("%s: Ready got nil, want the rejection", tc.name)
		}
		if got := tg.do(t, "GET", "/prod/old"); got.status != 200 {
			t.Errorf("%s: old route: got %d, want 200 (old snapshot kept)", tc.name, got.status)
		}
		if got := tg.do(t, "GET", "/prod/new"); got.status != 404 {
			t.Errorf("%s: new route: got %d, want 404", tc.name, got.status)
		}
	}
	if n := counterValue(t, metrics.ConfigRejected); n != 0 {
		t.Errorf("tollgate_config_rejected_total: got %v, want 0 (the snapshot source counts rejections)", n)
	}
	if v := gaugeValue(t, metrics.ConfigVersion); v != 1 {
		t.Errorf("tollgate_config_version: got %v, want 1", v)
	}
	if got := tg.getHost(t, "localhost", "/readyz"); got != 503 {
		t.Errorf("/readyz after a rejection: got %d, want 503", got)
	}
	v3 := snapshot(plans.Stage{}, res{"/new", methods(mock(false), "GET")})
	v3.Version = 3
	if err := tg.SetSnapshot(v3); err != nil {
		t.Fatalf("SetSnapshot v3: %v", err)
	}
	if err := tg.Ready(); err != nil {
		t.Errorf("Ready after a good snapshot: got %v, want nil", err)
	}
	if got := tg.do(t, "GET", "/prod/new"); got.status != 200 {
		t.Errorf("new route after v3: got %d, want 200", got.status)
	}
	if got := tg.do(t, "GET", "/prod/old"); got.status != 404 {
		t.Errorf("old route after v3: got %d, want 404", got.status)
	}
	if v := gaugeValue(t, metrics.ConfigVersion); v != 3 || tg.Version() != 3 {
		t.Errorf("config version: got gauge %v, Version %d, want 3", v, tg.Version())
	}
}

// getHost sends GET path with Host host and returns the status.
func (tg *testGateway) getHost(t *testing.T, host, path string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", tg.http.URL+path, nil)
	req.Host = host
	resp, err := tg.http.Client().Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestNotReadyWithoutSnapshot(t *testing.T) {
	t.Parallel()
	s := New(Options{Keys: newFakeKeys(), Engine: deadEngine(t), Logger: slog.New(slog.DiscardHandler)})
	if err := s.Ready(); !errors.Is(err, ErrNoSnapshot) {
		t.Errorf("Ready: got %v, want ErrNoSnapshot", err)
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "http://"+testHost+"/prod/x", nil)
	s.ServeHTTP(rec, req)
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), "Service Unavailable") {
		t.Errorf("request without snapshot: got %d %s, want 503 Service Unavailable", rec.Code, rec.Body)
	}
}

func TestReadyCheck(t *testing.T) {
	t.Parallel()
	down := errors.New("redis down")
	tg := mustGateway(t, snapshot(plans.Stage{}), func(o *Options) {
		o.Ready = func(context.Context) error { return down }
	})
	if err := tg.Ready(); !errors.Is(err, down) {
		t.Errorf("Ready: got %v, want %v", err, down)
	}
	if got := tg.getHost(t, "localhost", "/readyz"); got != 503 {
		t.Errorf("/readyz: got %d, want 503", got)
	}
	if got := tg.getHost(t, "localhost", "/healthz"); got != 200 {
		t.Errorf("/healthz: got %d, want 200", got)
	}
}

func TestMetricsCollectorsRegister(t *testing.T) {
	t.Parallel()
	m := NewMetrics()
	reg := prometheus.NewRegistry()
	if err := reg.Register(prometheus.NewGauge(prometheus.GaugeOpts{Name: "unrelated"})); err != nil {
		t.Fatal(err)
	}
	for _, c := range m.Collectors() {
		if err := reg.Register(c); err != nil {
			t.Fatalf("Register: %v", err)
		}
	}
	m.Requests.WithLabelValues("a", "s", "GET", "/r", "2xx").Inc()
	m.Throttled.WithLabelValues("a", "s", "plan").Inc()
	m.Admitted.WithLabelValues("a", "s").Inc()
	m.CacheHits.WithLabelValues("a", "s", "GET", "/r").Inc()
	m.CacheMisses.WithLabelValues("a", "s", "GET", "/r").Inc()
	m.Latency.WithLabelValues("a", "s", "GET", "/r").Observe(0.01)
	m.IntegrationLatency.WithLabelValues("a", "s", "GET", "/r").Observe(0.01)
	m.KeyRefusals.WithLabelValues("a", "s", "unknown").Inc()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range families {
		got[f.GetName()] = true
	}
	for _, name := range []string{"tollgate_requests_total", "tollgate_admitted_total", "tollgate_throttled_total", "tollgate_cache_hits_total",
		"tollgate_cache_misses_total", "tollgate_latency_seconds", "tollgate_integration_latency_seconds",
		"tollgate_key_refusals_total", "tollgate_config_version", "tollgate_config_rejected_total", "tollgate_limiter_errors_total"} {
		if !got[name] {
			t.Errorf("metric %s: not gathered", name)
		}
	}
}

func TestAccessLogLine(t *testing.T) {
	t.Parallel()
	metrics := NewMetrics()
	tg := mustGateway(t, proxySnapshot(mustUpstream(t)), func(o *Options) { o.Metrics = metrics })
	addTestKeys(tg.keys)
	got := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey)
	line := tg.logLine(t, got.header.Get("x-amzn-RequestId"))
	want := map[string]any{"msg": "request", "api": testAPI, "stage": testStage, "resource": "/keyed", "method": "GET",
		"status": float64(201), "key_id": "key0000001", "plan_id": "plan01", "client": "127.0.0.1"}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("log %s: got %v, want %v", k, line[k], v)
		}
	}
	for _, k := range []string{"latency_ms", "integration_latency_ms"} {
		if _, ok := line[k].(float64); !ok {
			t.Errorf("log %s: got %v, want a number", k, line[k])
		}
	}
	if _, ok := line["error_type"]; ok {
		t.Errorf("log error_type on success: got %v, want none", line["error_type"])
	}
	if strings.Contains(tg.logs.String(), goodKey) {
		t.Errorf("access log contains the key value")
	}
	if n := counterValue(t, metrics.Requests.WithLabelValues(testAPI, testStage, "GET", "/keyed", "2xx")); n != 1 {
		t.Errorf("tollgate_requests_total{2xx}: got %v, want 1", n)
	}
	// Metrics are recorded before the access-log line, which is written
	// after the response: wait for the line.
	tg.logLine(t, tg.do(t, "GET", "/nostage/x").header.Get("x-amzn-RequestId"))
	if n := counterValue(t, metrics.Requests.WithLabelValues("", "", "GET", "", "4xx")); n != 1 {
		t.Errorf("tollgate_requests_total for an unknown stage: got %v, want 1 with empty api/stage labels", n)
	}
	tg.logLine(t, tg.do(t, "BREW", "/prod/keyed").header.Get("x-amzn-RequestId"))
	if n := counterValue(t, metrics.Requests.WithLabelValues(testAPI, testStage, "OTHER", "/keyed", "4xx")); n != 1 {
		t.Errorf("tollgate_requests_total for method BREW: got %v, want 1 with method OTHER", n)
	}
}

// allowEngine admits everything without Redis and caches nothing; only
// the benchmark of the handler's own cost uses it.
type allowEngine struct{}

func (allowEngine) Decide(context.Context, *limit.Request) (limit.Decision, error) {
	return limit.Decision{Allowed: true}, nil
}

func (allowEngine) DecideLookup(_ context.Context, _ *limit.Request, lk *cache.Lookup) (limit.Decision, error) {
	lk.Err = errors.New("no cache")
	return limit.Decision{Allowed: true}, nil
}

func (allowEngine) Fill(context.Context, *cache.Lookup, *cache.Entry) error {
	return errors.New("no cache")
}

func (allowEngine) KeyUsage(context.Context, string, string, *limit.Quota) (limit.Usage, error) {
	return limit.Usage{}, errors.New("no limiter")
}

func (allowEngine) Settle(context.Context, limit.Settlement) error {
	return errors.New("no limiter")
}
