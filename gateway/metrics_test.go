package gateway

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"tollgate/plans"
)

// histogramCount is the number of observations of a histogram child.
func histogramCount(t *testing.T, o prometheus.Observer) uint64 {
	t.Helper()
	var m dto.Metric
	if err := o.(prometheus.Metric).Write(&m); err != nil {
		t.Fatalf("read histogram: %v", err)
	}
	return m.GetHistogram().GetSampleCount()
}

// TestMetricsCarryTheRouteTemplate checks the CloudWatch-style metrics'
// labels: the resource is the matched path template, never the raw path;
// unknown APIs, stages and resources collapse to empty labels.
func TestMetricsCarryTheRouteTemplate(t *testing.T) {
	t.Parallel()
	metrics := NewMetrics()
	tg := mustGateway(t, proxySnapshot(mustUpstream(t)), func(o *Options) { o.Metrics = metrics })
	addTestKeys(tg.keys)
	wait := func(res response) { tg.logLine(t, res.header.Get("x-amzn-RequestId")) } // metrics precede the log line
	wait(tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey))
	wait(tg.do(t, "GET", "/prod/no/such/resource-1234"))
	wait(tg.do(t, "GET", "/nostage/keyed"))

	route := []string{testAPI, testStage, "GET", "/keyed"}
	if n := counterValue(t, metrics.Requests.WithLabelValues(append(route, "2xx")...)); n != 1 {
		t.Errorf("tollgate_requests_total%v: got %v, want 1", route, n)
	}
	if n := histogramCount(t, metrics.Latency.WithLabelValues(route...)); n != 1 {
		t.Errorf("tollgate_latency_seconds%v: got %d observations, want 1", route, n)
	}
	if n := histogramCount(t, metrics.IntegrationLatency.WithLabelValues(route...)); n != 1 {
		t.Errorf("tollgate_integration_latency_seconds%v: got %d observations, want 1", route, n)
	}
	if n := counterValue(t, metrics.Requests.WithLabelValues(testAPI, testStage, "GET", "", "4xx")); n != 1 {
		t.Errorf("a path that matches no resource: got %v, want 1 with an empty resource", n)
	}
	if n := counterValue(t, metrics.Requests.WithLabelValues("", "", "GET", "", "4xx")); n != 1 {
		t.Errorf("an unknown stage: got %v, want 1 with empty labels", n)
	}
	ch := make(chan prometheus.Metric, 100)
	metrics.Requests.Collect(ch)
	close(ch)
	for m := range ch {
		var d dto.Metric
		_ = m.Write(&d)
		for _, l := range d.GetLabel() {
			if l.GetName() == "resource" && l.GetValue() != "" && l.GetValue() != "/keyed" {
				t.Errorf("got resource label %q, want only route templates", l.GetValue())
			}
		}
	}
}

func TestKeyRefusalsAreCountedByReason(t *testing.T) {
	t.Parallel()
	metrics := NewMetrics()
	tg := mustGateway(t, proxySnapshot(mustUpstream(t)), func(o *Options) { o.Metrics = metrics })
	addTestKeys(tg.keys)
	for _, c := range []struct{ key, reason string }{
		{"", "missing"}, {"short", "malformed"}, {unknownKey, "unknown"}, {disabledKey, "disabled"},
		{noPlanKey, "no_plan"}, {unknownKey, "unknown"},
	} {
		var res response
		if c.key == "" {
			res = tg.do(t, "GET", "/prod/keyed")
		} else {
			res = tg.do(t, "GET", "/prod/keyed", "x-api-key", c.key)
		}
		if res.status != 403 {
			t.Fatalf("%s: got %d, want 403", c.reason, res.status)
		}
		tg.logLine(t, res.header.Get("x-amzn-RequestId"))
	}
	for reason, want := range map[string]float64{"missing": 1, "malformed": 1, "unknown": 2, "disabled": 1, "no_plan": 1} {
		if n := counterValue(t, metrics.KeyRefusals.WithLabelValues(testAPI, testStage, reason)); n != want {
			t.Errorf("tollgate_key_refusals_total{reason=%q}: got %v, want %v", reason, n, want)
		}
	}
}

// TestCacheCountsAreByRouteAndCountBypassAsMiss: CacheHitCount and
// CacheMissCount carry the route labels; a request of a caching method
// that bypasses the cache (it carries Authorization) is served from the
// upstream, so it counts as a miss, as CloudWatch counts it.
func TestCacheCountsAreByRouteAndCountBypassAsMiss(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	env := newCacheEnv(t)
	tg := env.gateway(t, cacheSnapshot(cachedStage(map[string]plans.MethodSetting{"*/*": caching(300)}), nil,
		res{"/items/{id}", methods(keyedProxy(u, "/items"), "GET", "POST")}), nil)
	for _, res := range []response{
		tg.get(t, "/prod/items/1"), tg.get(t, "/prod/items/1"), tg.get(t, "/prod/items/2", "Authorization", "Bearer x"),
		tg.doBody(t, "POST", "/prod/items/1", strings.NewReader("{}"), "x-api-key", cacheKey1),
	} {
		tg.logLine(t, res.header.Get("x-amzn-RequestId")) // metrics are recorded before the access-log line
	}
	route := []string{testAPI, testStage, "GET", "/items/{id}"}
	if h, m := counterValue(t, tg.metrics.CacheHits.WithLabelValues(route...)), counterValue(t, tg.metrics.CacheMisses.WithLabelValues(route...)); h != 1 || m != 2 {
		t.Errorf("hits, misses of GET /items/{id}: got %v, %v, want 1 (the second GET) and 2 (the first, the bypass)", h, m)
	}
	post := []string{testAPI, testStage, "POST", "/items/{id}"}
	if m := counterValue(t, tg.metrics.CacheMisses.WithLabelValues(post...)); m != 0 {
		t.Errorf("misses of POST, which does not cache: got %v, want 0", m)
	}
}

// seriesWith counts the series of c that carry label name=value.
func seriesWith(c prometheus.Collector, name, value string) int {
	ch := make(chan prometheus.Metric, 1000)
	c.Collect(ch)
	close(ch)
	n := 0
	for m := range ch {
		var d dto.Metric
		_ = m.Write(&d)
		for _, l := range d.GetLabel() {
			if l.GetName() == name && l.GetValue() == value {
				n++
			}
		}
	}
	return n
}

// A stage that leaves the config takes its series with it; the stages
// that stay keep theirs.
func TestMetricsOfARemovedStageAreDeleted(t *testing.T) {
	t.Parallel()
	metrics := NewMetrics()
	snap := proxySnapshot(mustUpstream(t))
	api := snap.Apis[testAPI]
	beta := *api.Stages[testStage]
	beta.Stage.StageName = "beta"
	api.Stages["beta"] = &beta
	tg := mustGateway(t, snap, func(o *Options) { o.Metrics = metrics })
	for _, path := range []string{"/prod/get", "/beta/get"} {
		res := tg.do(t, "GET", path)
		tg.logLine(t, res.header.Get("x-amzn-RequestId")) // metrics precede the log line
	}
	if n := seriesWith(metrics.Requests, "stage", "beta"); n != 1 {
		t.Fatalf("before: got %d beta series of tollgate_requests_total, want 1", n)
	}
	next := *snap
	next.Version++
	next.Apis = map[string]*plans.ApiConfig{testAPI: {ID: testAPI, ApiKeySource: api.ApiKeySource,
		Stages: map[string]*plans.StageConfig{testStage: api.Stages[testStage]}}}
	if err := tg.SetSnapshot(&next); err != nil {
		t.Fatal(err)
	}
	for _, c := range []prometheus.Collector{metrics.Requests, metrics.Latency, metrics.IntegrationLatency} {
		if n := seriesWith(c, "stage", "beta"); n != 0 {
			t.Errorf("after beta left the config: got %d beta series, want 0", n)
		}
		if n := seriesWith(c, "stage", testStage); n != 1 {
			t.Errorf("after beta left the config: got %d %s series, want 1", n, testStage)
		}
	}
}
