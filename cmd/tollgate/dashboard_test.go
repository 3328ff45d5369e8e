package main

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"tollgate/internal/redistest"
	"tollgate/ledger/ledgertest"
	"tollgate/plans/postgres/postgrestest"
)

// exportedMetrics starts an all-in-one node with a usage source, so every
// collector tollgate registers is registered, and returns the names of
// the metrics its registry describes.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	_, prefix := redistest.MustClient(t)
	m := NewMain(Config{
		Role: "all", DatabaseURL: postgrestest.MustURL(t), RedisURL: redistest.URL(), RedisPrefix: prefix,
		RedisTimeout: 5 * time.Second, AdminAddr: "127.0.0.1:0", GatewayAddr: "127.0.0.1:0",
		AccountRateLimit: 10000, AccountBurstLimit: 5000, LimiterFailureMode: "open",
		LogLevel: "warn", LogFormat: "text", ShutdownTimeout: 5 * time.Second, InsecureAdmin: true,
	})
	m.UsageSource = ledgertest.MustRedisSource(t)
	t.Cleanup(func() { _ = m.Close() })
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	descs := make(chan *prometheus.Desc)
	go func() { m.registry.Describe(descs); close(descs) }()
	// A Desc only prints its name: Desc{fqName: "tollgate_requests_total", ...}.
	name := regexp.MustCompile(`fqName: "([^"]+)"`)
	out := map[string]bool{}
	for d := range descs {
		if n := name.FindStringSubmatch(d.String()); n != nil {
			out[n[1]] = true
		}
	}
	return out
}

// metricName finds the metric names in a PromQL expression: tollgate's
// own and the Go client's process and runtime metrics.
var metricName = regexp.MustCompile(`\b(?:tollgate|process|go)_[a-z0-9_]+\b`)

// known reports whether a name in a query is an exported metric, or a
// histogram's series (_bucket, _sum, _count) of one.
func known(exported map[string]bool, n string) bool {
	if exported[n] {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(n, suffix); ok && exported[base] {
			return true
		}
	}
	return false
}

type dashboard struct {
	Templating struct {
		List []struct {
			Name       string
			Definition string
		}
	}
	Panels []struct {
		Type, Title string
		Datasource  struct{ UID string }
		Targets     []struct{ Expr string }
	}
}

// TestDashboardQueriesNameExportedMetrics: every panel of the shipped
// Grafana dashboard queries the provisioned Prometheus data source, and
// every metric its queries (and template variables) name is one that
// tollgate's registry exports.
func TestDashboardQueriesNameExportedMetrics(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../deploy/grafana/tollgate.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("deploy/grafana/tollgate.json: %v", err)
	}
	ds, err := os.ReadFile("../../deploy/grafana/provisioning/datasources/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	exported := exportedMetrics(t)
	check := func(where, expr string) {
		names := metricName.FindAllString(expr, -1)
		if len(names) == 0 {
			t.Errorf("%s: query %q names no tollgate metric", where, expr)
		}
		for _, n := range names {
			if !known(exported, n) {
				t.Errorf("%s: query names %s, which tollgate does not export", where, n)
			}
		}
	}
	panels := 0
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		panels++
		if !strings.Contains(string(ds), "uid: "+p.Datasource.UID+"\n") {
			t.Errorf("panel %q: data source uid %q is not the provisioned one", p.Title, p.Datasource.UID)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			check("panel "+p.Title, q.Expr)
		}
	}
	for _, v := range d.Templating.List {
		check("variable "+v.Name, v.Definition)
	}
	if panels < 10 {
		t.Errorf("got %d panels, want the dashboard's full set", panels)
	}
}

// TestMetricsPageListsEveryMetric keeps docs/metrics.md true: every
// tollgate_* metric the registry exports is named there.
func TestMetricsPageListsEveryMetric(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	for n := range exportedMetrics(t) {
		if strings.HasPrefix(n, "tollgate_") && !strings.Contains(string(page), "`"+n+"`") {
			t.Errorf("docs/metrics.md does not list %s", n)
		}
	}
}

// TestComposeProvisionsPrometheusAndGrafana checks by reading (there is
// no Docker engine here) that the files docker-compose.yml mounts exist
// and that Prometheus scrapes services the compose file defines.
func TestComposeProvisionsPrometheusAndGrafana(t *testing.T) {
	compose, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^\s+- \./([^:]+):`).FindAllStringSubmatch(string(compose), -1) {
		if _, err := os.Stat("../../" + m[1]); err != nil {
			t.Errorf("docker-compose.yml mounts ./%s: %v", m[1], err)
		}
	}
	services := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  ([a-z][a-z0-9-]*):\s*$`).FindAllStringSubmatch(string(compose), -1) {
		services[m[1]] = true
	}
	for _, s := range []string{"prometheus", "grafana", "tollgate", "gateway"} {
		if !services[s] {
			t.Errorf("docker-compose.yml has no %s service (got %v)", s, services)
		}
	}
	prom, err := os.ReadFile("../../deploy/prometheus/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	targets := regexp.MustCompile(`"([a-z][a-z0-9-]*):(\d+)"`).FindAllStringSubmatch(string(prom), -1)
	if len(targets) < 2 {
		t.Fatalf("prometheus.yml scrapes %v, want the admin and the gateway nodes", targets)
	}
	for _, tg := range targets {
		if !services[tg[1]] {
			t.Errorf("prometheus.yml scrapes %s:%s, which is no compose service", tg[1], tg[2])
		}
	}
	if !strings.Contains(string(compose), "TOLLGATE_METRICS_ADDR: 0.0.0.0:9100") {
		t.Error("the gateway-only node must serve /metrics on 0.0.0.0:9100 for Prometheus to reach it")
	}
}
