package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"tollgate/plans"
)

// statusWriter records the status a handler writes, for the access log and
// metrics. Unwrap lets http.ResponseController (and ReverseProxy's
// flushing) reach the underlying writer.
//
// An interim response (1xx but 101, e.g. an upstream's 103 Early Hints that
// ReverseProxy forwards) is passed on but not recorded: the request is
// logged and counted with its final status. An upstream's 100 Continue is
// not passed on: the client's own 100 Continue comes from net/http's server
// when the body is first read (by the transport, once the upstream asked
// for it), and forwarding the upstream's as well raced with it, so a client
// could read two 100s (RFC 9110 section 10.1.1: a proxy answers the
// expectation on its own hop). ReverseProxy clears the header
// map after forwarding one, so the headers set before it (request id,
// rate-limit headers, X-Cache) are put back for the final response.
type statusWriter struct {
	http.ResponseWriter
	status  int
	bytes   int64
	errCtx  *errorContext // the stage's gateway responses, once routed (nil when none)
	interim http.Header   // the header map before the first interim response
}

func (w *statusWriter) WriteHeader(code int) {
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		if w.interim == nil {
			w.interim = w.Header().Clone()
		}
		if code != http.StatusContinue {
			w.ResponseWriter.WriteHeader(code)
		}
		return
	}
	if w.status == 0 {
		w.status = code
		w.restore()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
		w.restore()
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// restore puts back the headers an interim response cleared.
func (w *statusWriter) restore() {
	if w.interim == nil {
		return
	}
	h := w.Header()
	for k, vs := range w.interim {
		if _, set := h[k]; !set {
			h[k] = vs
		}
	}
}

// Unwrap returns the underlying ResponseWriter.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// newRequestID returns 32 random hex characters.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// finish records the request's metrics and writes its access-log line
// (docs/behaviour.md, "Logs, metrics, health"). The key id is logged, never the key.
func (s *Server) finish(r *http.Request, sw *statusWriter, ex *exchange) {
	status := sw.status
	if status == 0 {
		status = http.StatusOK
	}
	elapsed := time.Since(ex.start)
	s.record(ex, status, elapsed)
	if !s.log.Enabled(r.Context(), slog.LevelInfo) {
		return
	}
	attrs := make([]slog.Attr, 0, 16)
	attrs = append(attrs,
		slog.String("request_id", ex.id),
		slog.String("client", ex.client.String()),
		slog.String("api", ex.api),
		slog.String("stage", ex.stage),
		slog.String("resource", ex.resource),
		slog.String("method", ex.method),
		slog.Int("status", status),
		slog.Int64("bytes", sw.bytes),
		slog.Float64("latency_ms", float64(elapsed.Microseconds())/1000),
	)
	if ex.domain != nil {
		attrs = append(attrs, slog.String("domain", ex.domain.name))
	}
	attrs = appendIf(attrs, "key_id", ex.keyID)
	attrs = appendIf(attrs, "plan_id", ex.planID)
	attrs = appendIf(attrs, "error_type", ex.errType)
	attrs = appendIf(attrs, "reason", ex.reason)
	attrs = appendIf(attrs, "cache", ex.cache)
	if ex.integrationCalled {
		attrs = append(attrs, slog.Float64("integration_latency_ms", float64(ex.integrationTime.Microseconds())/1000))
	}
	s.log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
}

// record counts the request in the metrics (see Metrics for the labels).
func (s *Server) record(ex *exchange, status int, elapsed time.Duration) {
	api, stage, resource := ex.api, ex.stage, ex.resource
	if ex.m == nil && stage == "" {
		api, resource = "", "" // unknown APIs and stages are not metric labels
	}
	method := methodLabel(ex.method)
	s.metrics.Requests.WithLabelValues(api, stage, method, resource, statusClass(status)).Inc()
	s.metrics.Latency.WithLabelValues(api, stage, method, resource).Observe(elapsed.Seconds())
	if ex.integrationCalled {
		s.metrics.IntegrationLatency.WithLabelValues(api, stage, method, resource).Observe(ex.integrationTime.Seconds())
	}
	switch ex.cache {
	case "": // the method does not cache, or the request was refused first
	case cacheHit:
		s.metrics.CacheHits.WithLabelValues(api, stage, method, resource).Inc()
	case cacheStale: // answered from the cache, past its freshness
		s.metrics.CacheHits.WithLabelValues(api, stage, method, resource).Inc()
		s.metrics.CacheStale.WithLabelValues(api, stage, method, resource, ex.stale).Inc()
	default: // Miss, Refresh, Bypass: served from the upstream
		s.metrics.CacheMisses.WithLabelValues(api, stage, method, resource).Inc()
	}
	if ex.errType == ErrorTypeInvalidKey {
		s.metrics.KeyRefusals.WithLabelValues(api, stage, refusalLabel(ex.reason)).Inc()
	}
}

// refusalLabel is the tollgate_key_refusals_total reason of a key check
// refusal reason (ReasonMissing, ...).
func refusalLabel(reason string) string {
	switch reason {
	case ReasonMissing, ReasonMalformed, ReasonChecksum, ReasonUnknown, ReasonDisabled, ReasonExpired, ReasonRotated:
		return reason
	case ReasonNoPlan:
		return "no_plan"
	}
	return "other"
}

func appendIf(attrs []slog.Attr, key, value string) []slog.Attr {
	if value == "" {
		return attrs
	}
	return append(attrs, slog.String(key, value))
}

// methodLabel returns m when it is a method a resource may have, else
// "OTHER", so clients cannot mint metric label values.
func methodLabel(m string) string {
	if m != "ANY" && plans.ValidHTTPMethod(m) {
		return m
	}
	return "OTHER"
}

// statusClass returns "2xx", "4xx", ... for a status code.
func statusClass(code int) string {
	switch code / 100 {
	case 1:
		return "1xx"
	case 2:
		return "2xx"
	case 3:
		return "3xx"
	case 4:
		return "4xx"
	case 5:
		return "5xx"
	}
	if code >= 600 && code <= 999 {
		return strconv.Itoa(code/100) + "xx"
	}
	return "other"
}
