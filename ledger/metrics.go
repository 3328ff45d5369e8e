package ledger

import "github.com/prometheus/client_golang/prometheus"

// Steps of a flush, the values of tollgate_ledger_flush_errors_total's
// step label (not "stage": that label names an API's stage on the
// gateway's metrics).
const (
	stepDrain = "drain" // taking observations from the source
	stepWrite = "write" // writing them to PostgreSQL
	stepAck   = "ack"   // acknowledging them to the source
)

// metrics are a Flusher's Prometheus collectors (see Flusher.Collectors).
type metrics struct {
	lag      prometheus.GaugeFunc
	lastSync prometheus.Gauge
	errors   *prometheus.CounterVec
	changed  prometheus.Counter
	dropped  prometheus.Counter
	pending  prometheus.Gauge
}

func newMetrics(f *Flusher) *metrics {
	m := &metrics{
		lag: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tollgate_ledger_lag_seconds",
			Help: "Seconds since the drain of the last flush that wrote everything the usage source held: usage older than this is in the ledger.",
		}, func() float64 { return f.Lag().Seconds() }),
		lastSync: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tollgate_ledger_last_sync_timestamp_seconds",
			Help: "Unix time of the drain of the last flush that wrote everything the usage source held (0 before the first).",
		}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_ledger_flush_errors_total",
			Help: "Failed usage flushes by step (drain, write, ack); a failed drain or write is retried at the next tick.",
		}, []string{"step"}),
		changed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tollgate_ledger_rows_changed_total",
			Help: "Usage ledger day rows inserted or raised by flushes.",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tollgate_ledger_dropped_observations_total",
			Help: "Invalid usage observations the flusher dropped (a bug in the source; each is logged).",
		}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tollgate_ledger_pending_observations",
			Help: "Usage observations drained but not yet written (day counts plus quota states); stays up while writes fail.",
		}),
	}
	for _, s := range []string{stepDrain, stepWrite, stepAck} {
		m.errors.WithLabelValues(s) // present at 0, so rate() works from the start
	}
	return m
}

// Collectors returns the Flusher's collectors, for
// prometheus.Registerer.MustRegister: tollgate_ledger_lag_seconds,
// tollgate_ledger_last_sync_timestamp_seconds,
// tollgate_ledger_flush_errors_total{step},
// tollgate_ledger_rows_changed_total,
// tollgate_ledger_dropped_observations_total and
// tollgate_ledger_pending_observations.
func (f *Flusher) Collectors() []prometheus.Collector {
	m := f.metrics
	return []prometheus.Collector{m.lag, m.lastSync, m.errors, m.changed, m.dropped, m.pending}
}
