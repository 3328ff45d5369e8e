package gateway

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the gateway's Prometheus collectors (docs/metrics.md),
// named after the CloudWatch metrics of Amazon API Gateway: Count and
// 4XXError / 5XXError are tollgate_requests_total (by status class),
// Latency and IntegrationLatency the two histograms, CacheHitCount and
// CacheMissCount the cache counters.
//
// Label values come only from the compiled snapshot (API ids, stage names,
// resource path templates such as "/pets/{petId}", levels and reasons
// from fixed lists), never from unchecked request data, so every label set
// is bounded by the configuration: requests to unknown APIs or stages
// are counted with empty api, stage and resource labels, requests that
// match no resource with an empty resource, and a method outside the
// HTTP methods a resource may have as "OTHER".
type Metrics struct {
	// Requests counts requests by api, stage, method, resource and status
	// class ("2xx"; status="4xx" is CloudWatch's 4XXError).
	Requests *prometheus.CounterVec
	// Admitted counts requests the limiter let through, by api and stage:
	// every throttle and the quota admitted them, or the limiter failed
	// and FailureMode "open" admitted them without limits. With Throttled
	// it splits a stage's keyed and unkeyed traffic into admitted and
	// refused (the operator console's live view reads both).
	Admitted *prometheus.CounterVec
	// Throttled counts 429s by api, stage and the refusing level
	// (plan, method, stage, account, quota: a key's or its customer's, rule,
	// or key_attempts: too many failed key attempts from the client address).
	Throttled *prometheus.CounterVec
	// ShadowRefusals counts the refusals shadow limits would have made,
	// by api, stage, level ("rule" for a shadow rule, the plan's levels
	// for a usage plan in shadow mode) and rule (the rule's name; empty
	// for a plan's level). The requests went on (docs/rules.md).
	ShadowRefusals *prometheus.CounterVec
	// CacheHits and CacheMisses count the requests of methods that cache
	// (they answer X-Cache) by api, stage, method and resource: hits
	// (stale answers included: they come from the cache), and
	// misses, which are every other request served from the upstream
	// (Miss, Refresh, and Bypass: not eligible or the cache unavailable),
	// as CloudWatch's CacheMissCount counts requests served from the
	// backend while caching is enabled.
	CacheHits, CacheMisses *prometheus.CounterVec
	// CacheStale counts the answers a stale entry gave (X-Cache: Stale;
	// each also counted in CacheHits) by api, stage, method, resource and
	// reason: error (the upstream answered 5xx), timeout (it did not
	// answer within the integration's timeout), refused (no answer: the
	// connection was refused or broke, or the host was not found),
	// revalidate (within stale-while-revalidate, refreshed in the
	// background).
	CacheStale *prometheus.CounterVec
	// CacheFillWaits counts the requests of caching methods that missed
	// while another request of this node was already filling the same
	// entry, and waited for that fill instead of calling the upstream too
	// (single flight), by api, stage, method and resource. Counted when the
	// wait starts; each is also counted in CacheMisses.
	CacheFillWaits *prometheus.CounterVec
	// Latency is the time from request to response end, seconds, by api,
	// stage, method and resource.
	Latency *prometheus.HistogramVec
	// IntegrationLatency is the time spent calling the upstream, seconds,
	// by api, stage, method and resource (requests that called it).
	IntegrationLatency *prometheus.HistogramVec
	// KeyRefusals counts requests refused by the key check (403) by api,
	// stage and reason: missing, malformed, checksum (a generated key's
	// shape with a bad checksum), unknown, disabled, expired, rotated (a
	// rotated key's previous value after its overlap), no_plan (the key has
	// no usage plan for this stage).
	KeyRefusals *prometheus.CounterVec
	// ConfigVersion is the config version being served.
	ConfigVersion prometheus.Gauge
	// ConfigRejected counts refused snapshots; the snapshot's source
	// increments it (see Server.SetSnapshot).
	ConfigRejected prometheus.Counter
	// LimiterErrors counts limiter decisions that failed or timed out.
	LimiterErrors prometheus.Counter
}

// NewMetrics returns a fresh, unregistered set of collectors named
// tollgate_*; register Collectors() with a prometheus.Registerer.
func NewMetrics() *Metrics {
	buckets := []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
	route := []string{"api", "stage", "method", "resource"}
	return &Metrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_requests_total", Help: "Gateway requests by API, stage, method, resource (path template) and status class.",
		}, append(route, "status")),
		Admitted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_admitted_total", Help: "Requests the limiter admitted (or failure mode open let through), by API and stage.",
		}, []string{"api", "stage"}),
		Throttled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_throttled_total", Help: "Requests refused with 429 by API, stage and level (plan, method, stage, account, quota: a key's or customer's, rule, key_attempts).",
		}, []string{"api", "stage", "level"}),
		ShadowRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_shadow_refusals_total", Help: "Refusals shadow limits would have made (the requests went on), by API, stage, level and rule.",
		}, []string{"api", "stage", "level", "rule"}),
		CacheHits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_cache_hits_total", Help: "Responses served from the stage cache, by API, stage, method and resource.",
		}, route),
		CacheMisses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_cache_misses_total", Help: "Requests of caching methods served from the upstream (X-Cache Miss, Refresh or Bypass), by API, stage, method and resource.",
		}, route),
		CacheStale: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_cache_stale_total", Help: "Answers from stale cache entries (X-Cache: Stale), by API, stage, method, resource and reason (error, timeout, refused, revalidate).",
		}, append(route, "reason")),
		CacheFillWaits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_cache_fill_waits_total", Help: "Cache misses that waited for another request's fill of the same entry instead of calling the upstream, by API, stage, method and resource.",
		}, route),
		Latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tollgate_latency_seconds", Help: "Gateway request latency in seconds, from request to response end.", Buckets: buckets,
		}, route),
		IntegrationLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tollgate_integration_latency_seconds", Help: "Upstream call latency in seconds.", Buckets: buckets,
		}, route),
		KeyRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_key_refusals_total", Help: "Requests refused by the API key check (403) by API, stage and reason (missing, malformed, unknown, disabled, no_plan).",
		}, []string{"api", "stage", "reason"}),
		ConfigVersion: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tollgate_config_version", Help: "Config version this gateway node serves.",
		}),
		ConfigRejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tollgate_config_rejected_total", Help: "Config snapshots this node could not use (the previous one kept serving).",
		}),
		LimiterErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tollgate_limiter_errors_total", Help: "Limiter decisions that failed or timed out.",
		}),
	}
}

// forgetStage deletes every series labelled with api and stage, once the
// config no longer has that stage (deleted, or its API deleted), so that a
// long-running node's series follow the config instead of growing with
// every stage it ever served. A stage that comes back starts from zero,
// which Prometheus's rate() and increase() treat as a counter reset.
func (m *Metrics) forgetStage(api, stage string) {
	match := prometheus.Labels{"api": api, "stage": stage}
	for _, v := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{m.Requests, m.Admitted, m.Throttled, m.ShadowRefusals, m.CacheHits, m.CacheMisses, m.CacheStale, m.CacheFillWaits, m.Latency, m.IntegrationLatency, m.KeyRefusals} {
		v.DeletePartialMatch(match)
	}
}

// Collectors returns every collector, for prometheus.Registerer.MustRegister.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		m.Requests, m.Admitted, m.Throttled, m.ShadowRefusals, m.CacheHits, m.CacheMisses, m.CacheStale, m.CacheFillWaits, m.Latency,
		m.IntegrationLatency, m.KeyRefusals, m.ConfigVersion, m.ConfigRejected, m.LimiterErrors,
	}
}

// methodLabels are the method label values in the order of a
// methodSeries's verbs; the last, OTHER, takes every other method.
var methodLabels = [...]string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "OTHER"}

// statusClasses are the status label values a seriesSet holds, for
// statuses 100-599; another is looked up each time.
var statusClasses = [...]string{"1xx", "2xx", "3xx", "4xx", "5xx"}

// methodSeries holds a compiled method's metric series, by the request's
// method label: each series is looked up in its vector on first use and
// then kept with the compiled config (a new snapshot compiles new methods
// with empty series), so a request touches no label hashing or vector
// lock. A series appears in the exposition only once it has counted.
type methodSeries struct {
	verbs [len(methodLabels)]atomic.Pointer[seriesSet]
}

// seriesSet is the series of one (api, stage, method label, resource).
type seriesSet struct {
	requests              [len(statusClasses)]lazy[prometheus.Counter]
	latency, integration  lazy[prometheus.Observer]
	hits, misses          lazy[prometheus.Counter]
	api, stage, verb, res string
}

// lazy is one series, looked up once.
type lazy[T any] struct{ p atomic.Pointer[T] }

// get returns the series, looking it up with find the first time.
func (l *lazy[T]) get(find func() T) T {
	if p := l.p.Load(); p != nil {
		return *p
	}
	v := find()
	l.p.Store(&v)
	return v
}

// set returns the series of a request with method label verb.
func (ms *methodSeries) set(api, stage, verb, resource string) *seriesSet {
	i := len(methodLabels) - 1
	for j, l := range methodLabels[:i] {
		if l == verb {
			i = j
			break
		}
	}
	if s := ms.verbs[i].Load(); s != nil {
		return s
	}
	s := &seriesSet{api: api, stage: stage, verb: verb, res: resource}
	if ms.verbs[i].CompareAndSwap(nil, s) {
		return s
	}
	return ms.verbs[i].Load()
}

// count counts a request answered with status, with its latency.
func (ss *seriesSet) count(m *Metrics, status int, elapsed time.Duration) {
	if class := status/100 - 1; class >= 0 && class < len(statusClasses) {
		ss.requests[class].get(func() prometheus.Counter {
			return m.Requests.WithLabelValues(ss.api, ss.stage, ss.verb, ss.res, statusClasses[class])
		}).Inc()
	} else {
		m.Requests.WithLabelValues(ss.api, ss.stage, ss.verb, ss.res, statusClass(status)).Inc()
	}
	ss.latency.get(func() prometheus.Observer {
		return m.Latency.WithLabelValues(ss.api, ss.stage, ss.verb, ss.res)
	}).Observe(elapsed.Seconds())
}

// integrationLatency observes the upstream call's time.
func (ss *seriesSet) integrationLatency(m *Metrics, d time.Duration) {
	ss.integration.get(func() prometheus.Observer {
		return m.IntegrationLatency.WithLabelValues(ss.api, ss.stage, ss.verb, ss.res)
	}).Observe(d.Seconds())
}

// hit and miss count a caching method's cache outcome.
func (ss *seriesSet) hit(m *Metrics) {
	ss.hits.get(func() prometheus.Counter { return m.CacheHits.WithLabelValues(ss.api, ss.stage, ss.verb, ss.res) }).Inc()
}

func (ss *seriesSet) miss(m *Metrics) {
	ss.misses.get(func() prometheus.Counter { return m.CacheMisses.WithLabelValues(ss.api, ss.stage, ss.verb, ss.res) }).Inc()
}

// stageSeries holds a compiled stage's tollgate_admitted_total series.
type stageSeries struct {
	admitted lazy[prometheus.Counter]
}

// admit counts an admitted request of stage st.
func (ss *stageSeries) admit(m *Metrics, st *stageConfig) {
	ss.admitted.get(func() prometheus.Counter { return m.Admitted.WithLabelValues(st.apiID, st.name) }).Inc()
}
