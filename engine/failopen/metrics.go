package failopen

import "github.com/prometheus/client_golang/prometheus"

// Collectors returns the pending charges' Prometheus collectors, for
// prometheus.Registerer.MustRegister (docs/metrics.md):
// tollgate_limiter_pending_charges (Pending's first value),
// tollgate_limiter_dropped_charges_total (its second) and
// tollgate_limiter_charge_failures_total (Failures).
func (c *Charges) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tollgate_limiter_pending_charges",
			Help: "Requests admitted without a decision (failure mode open), or settled after their response, whose charge has not reached the limiter Redis yet.",
		}, func() float64 { p, _ := c.Pending(); return float64(p) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tollgate_limiter_dropped_charges_total",
			Help: "Requests not charged because too many charges were pending: their quota and usage never count them.",
		}, func() float64 { _, d := c.Pending(); return float64(d) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tollgate_limiter_charge_failures_total",
			Help: "Tries of the pending charges that failed (Redis answered an error or no reply came); they are tried again.",
		}, func() float64 { return float64(c.Failures()) }),
	}
}
