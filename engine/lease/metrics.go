package lease

import "github.com/prometheus/client_golang/prometheus"

// Collectors returns the lease table's Prometheus collectors, for
// prometheus.Registerer.MustRegister (docs/metrics.md): the leases open
// and the units they hold unspent now, the requests admitted on a lease
// (no Redis round trip) and the leases asked for.
func (t *Table) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tollgate_leases_open",
			Help: "Capacity leases this node holds now (one per hot request shape).",
		}, func() float64 { open, _ := t.held(); return float64(open) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tollgate_lease_units_unspent",
			Help: "Units the open leases took from Redis and have not admitted yet: what the node's death now would lose (counted as used, never served).",
		}, func() float64 { _, units := t.held(); return float64(units) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tollgate_lease_admitted_total",
			Help: "Requests admitted on a lease, without a Redis round trip of their own.",
		}, func() float64 { a, _ := t.counts(); return float64(a) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tollgate_lease_takes_total",
			Help: "Leases asked for (a decision that also takes capacity for the next requests of its shape).",
		}, func() float64 { _, n := t.counts(); return float64(n) }),
	}
}

// held returns the open leases and their unspent units.
func (t *Table) held() (open, units int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.open, t.unspent
}

// counts returns the requests admitted on leases and the leases asked for.
func (t *Table) counts() (admitted, takes uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.admitted, t.takes
}
