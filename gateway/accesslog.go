package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"net/netip"
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
	tee     *costTee      // keeps the body for a json: settled cost; nil when not
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
	if w.tee != nil {
		w.tee.write(b[:n])
	}
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
	var h [32]byte
	_, _ = rand.Read(b[:])
	hex.Encode(h[:], b[:])
	return string(h[:])
}

// finish records the request's metrics and writes its access-log line
// (docs/behaviour.md, "Logs, metrics, health"). The key id is logged, never the key.
func (s *Server) finish(r *http.Request, sw *statusWriter, ex *exchange) {
	status := sw.status
	if status == 0 {
		status = http.StatusOK
	}
	now := time.Now()
	elapsed := now.Sub(ex.start)
	s.record(ex, status, elapsed)
	if s.access != nil {
		s.access.line(now, func(f fieldSink) { ex.logFields(f, status, sw.bytes, elapsed) })
		return
	}
	if !s.log.Enabled(r.Context(), slog.LevelInfo) {
		return
	}
	attrs := attrSink(make([]slog.Attr, 0, 16))
	ex.logFields(&attrs, status, sw.bytes, elapsed)
	s.log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
}

// logFields gives the fields of the request's access-log line to f, in
// their order.
func (ex *exchange) logFields(f fieldSink, status int, bytes int64, elapsed time.Duration) {
	f.str("request_id", ex.id)
	f.addr("client", ex.client)
	f.str("api", ex.api)
	f.str("stage", ex.stage)
	f.str("resource", ex.resource)
	f.str("method", ex.method)
	f.int("status", int64(status))
	f.int("bytes", bytes)
	f.float("latency_ms", float64(elapsed.Microseconds())/1000)
	if ex.domain != nil {
		f.str("domain", ex.domain.name)
	}
	for _, kv := range [...][2]string{{"key_id", ex.keyID}, {"plan_id", ex.planID}, {"error_type", ex.errType},
		{"reason", ex.reason}, {"cache", ex.cache}} {
		if kv[1] != "" {
			f.str(kv[0], kv[1])
		}
	}
	if ex.integrationCalled {
		f.float("integration_latency_ms", float64(ex.integrationTime.Microseconds())/1000)
	}
}

// attrSink collects an access-log line's fields as slog attributes.
type attrSink []slog.Attr

func (a *attrSink) str(k, v string)             { *a = append(*a, slog.String(k, v)) }
func (a *attrSink) addr(k string, v netip.Addr) { *a = append(*a, slog.String(k, v.String())) }
func (a *attrSink) int(k string, v int64)       { *a = append(*a, slog.Int64(k, v)) }
func (a *attrSink) float(k string, v float64)   { *a = append(*a, slog.Float64(k, v)) }

// record counts the request in the metrics (see Metrics for the labels):
// a routed request through its method's series (methodSeries), any other
// by label lookups.
func (s *Server) record(ex *exchange, status int, elapsed time.Duration) {
	api, stage, resource := ex.api, ex.stage, ex.resource
	if ex.m == nil && stage == "" {
		api, resource = "", "" // unknown APIs and stages are not metric labels
	}
	method := methodLabel(ex.method)
	var ss *seriesSet
	if ex.m != nil && stage != "" {
		ss = ex.m.series.set(api, stage, method, resource)
	} else {
		ss = &seriesSet{api: api, stage: stage, verb: method, res: resource}
	}
	ss.count(s.metrics, status, elapsed)
	if ex.integrationCalled {
		ss.integrationLatency(s.metrics, ex.integrationTime)
	}
	switch ex.cache {
	case "": // the method does not cache, or the request was refused first
	case cacheHit:
		ss.hit(s.metrics)
	case cacheStale: // answered from the cache, past its freshness
		ss.hit(s.metrics)
		s.metrics.CacheStale.WithLabelValues(api, stage, method, resource, ex.stale).Inc()
	default: // Miss, Refresh, Bypass: served from the upstream
		ss.miss(s.metrics)
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
