// Package metrictest reads Prometheus collectors in tests.
package metrictest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Values gathers cs in a registry of their own and returns each metric
// family's first value (a gauge's or a counter's) by name.
func Values(t testing.TB, cs ...prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(cs...)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		m := mf.GetMetric()[0]
		got[mf.GetName()] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
	}
	return got
}
