package gateway

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"tollgate/cache"
)

// serveMiss calls the integration for a request that found no fresh
// entry, once per entry key on this node: the first request leads,
// concurrent ones wait and share its response unless it is private, too
// large or meant for another Vary variant (then each makes its own call).
// A storable response is written to the cache after it was sent, unless
// ttl is 0 (the cache Redis is unavailable). HEAD requests neither lead
// nor fill: their response has no body. When the call fails (5xx,
// timeout, no answer; the leader's, for those waiting) and the expired
// entry found is within its stale-if-error window, that entry answers.
func (s *Server) serveMiss(w *statusWriter, r *http.Request, ex *exchange, lk *cache.Lookup, xcache string, ttl time.Duration) {
	ex.cache = xcache
	fallback := ex.m.cache.onError(lk.Entry, s.now())
	if r.Method == http.MethodHead {
		s.capture(w, r, ex, xcache, fallback)
		return
	}
	s.fills.Add(1) // before the client can see any of the response
	defer s.fills.Done()
	key := lk.Digest
	call, leader := s.flight.Join(key)
	if !leader {
		s.metrics.CacheFillWaits.WithLabelValues(ex.api, ex.stage, methodLabel(ex.method), ex.resource).Inc()
		sh := call.Wait(r.Context())
		switch {
		case sh != nil && sh.Failure != "" && fallback != nil:
			s.serveStale(w, r, ex, fallback, sh.Failure)
		case sh != nil && sh.Variant == cache.Variant(varyNames(sh.Entry.Header), r.Header):
			s.writeEntry(w, r, sh.Entry, xcache)
		default:
			s.fill(w, r, ex, lk, s.capture(w, r, ex, xcache, fallback), ttl)
		}
		return
	}
	done := false
	defer func() { // ReverseProxy panics with http.ErrAbortHandler on a broken copy
		if !done {
			s.flight.Done(key, call, nil)
		}
	}()
	cw := s.capture(w, r, ex, xcache, fallback)
	s.flight.Done(key, call, func() *cache.Shared { return cw.shared(r, ex) })
	done = true
	s.fill(w, r, ex, lk, cw, ttl)
}

// serveRefresh calls the integration for an authorized
// "Cache-Control: max-age=0" and replaces the entry with its response.
func (s *Server) serveRefresh(w *statusWriter, r *http.Request, ex *exchange, lk *cache.Lookup) {
	ex.cache = cacheRefresh
	s.fills.Add(1)
	defer s.fills.Done()
	s.fill(w, r, ex, lk, s.capture(w, r, ex, cacheRefresh, nil), ex.m.cache.ttl)
}

// capture calls the integration with X-Cache set, recording the response
// as it streams to the client. With a fallback entry, a call that fails
// (see failure) is not passed on: the fallback answers, stale.
func (s *Server) capture(w *statusWriter, r *http.Request, ex *exchange, xcache string, fallback *cache.Entry) *captureWriter {
	w.Header()[headerXCache] = []string{xcache}
	cw := &captureWriter{ResponseWriter: w}
	var guard *failGuard
	if fallback == nil {
		s.serveIntegration(cw, r, ex)
	} else {
		guard = newFailGuard(w, ex)
		cw.ResponseWriter = guard
		s.serveGuarded(cw, r, ex, guard)
	}
	if ex.errType == ErrorTypeClientClosed { // proxyError cannot see the statusWriter through cw
		w.status = statusClientClosed
	}
	cw.failure = failure(ex, cw.status)
	if guard != nil && guard.state == failed {
		s.serveStale(w, r, ex, fallback, guard.reason)
	}
	return cw
}

// fill stores cw's response as lk's entry when it is storable and the
// request is not HEAD: it flushes the response to the client first, so
// the write costs the client nothing (the connection's next request waits
// for it, which keeps a client's own sequence of calls consistent). The
// entry is kept past ttl for its stale windows. A failed write is logged
// at debug level and leaves the entry absent.
func (s *Server) fill(w http.ResponseWriter, r *http.Request, ex *exchange, lk *cache.Lookup, cw *captureWriter, ttl time.Duration) {
	if ttl <= 0 || r.Method == http.MethodHead || !cache.Storable(cw.status, cw.header, cw.body.Len(), cw.complete()) {
		return
	}
	_ = http.NewResponseController(w).Flush()
	e := &cache.Entry{Status: cw.status, Header: cw.header, Body: cw.body.Bytes(), Stored: s.now(), TTL: ttl,
		Keep: cache.Stale(cw.header, ex.m.cache.stale).Keep()}
	ctx := context.WithoutCancel(r.Context()) // the engine bounds the fill (Engine.Fill)
	if err := s.engine.Fill(ctx, lk, e); err != nil && s.log.Enabled(ctx, slog.LevelDebug) {
		s.log.LogAttrs(ctx, slog.LevelDebug, "cache fill failed", slog.String("error", err.Error()))
	}
}

// captureWriter passes a response through to the client while keeping its
// status, the headers worth storing and up to cache.MaxBody bytes of body.
type captureWriter struct {
	http.ResponseWriter
	status  int
	header  http.Header
	body    bytes.Buffer
	over    bool   // the body passed cache.MaxBody and was not kept
	failure string // why the call failed (see failure), "" when it did not
}

func (cw *captureWriter) WriteHeader(code int) {
	if cw.status == 0 && code >= 200 {
		cw.status = code
		cw.header = storedHeader(cw.ResponseWriter.Header())
	}
	cw.ResponseWriter.WriteHeader(code)
}

func (cw *captureWriter) Write(b []byte) (int, error) {
	if cw.status == 0 {
		cw.WriteHeader(http.StatusOK)
	}
	if !cw.over {
		if cw.body.Len()+len(b) > cache.MaxBody {
			cw.over = true
			cw.body = bytes.Buffer{}
		} else {
			cw.body.Write(b)
		}
	}
	return cw.ResponseWriter.Write(b)
}

// Unwrap returns the underlying ResponseWriter (for flushing).
func (cw *captureWriter) Unwrap() http.ResponseWriter { return cw.ResponseWriter }

// complete reports whether the whole response was kept.
func (cw *captureWriter) complete() bool { return cw.status != 0 && !cw.over }

// shared is what waiters for the same entry may reuse: nothing when the
// response is private, incomplete, or the client left before it ended.
func (cw *captureWriter) shared(r *http.Request, ex *exchange) *cache.Shared {
	if !cw.complete() || ex.errType == ErrorTypeClientClosed || cache.Private(cw.header) {
		return nil
	}
	e := &cache.Entry{Status: cw.status, Header: cw.header, Body: cw.body.Bytes()}
	return &cache.Shared{Entry: e, Variant: cache.Variant(varyNames(cw.header), r.Header), Failure: cw.failure}
}

// varyNames returns the Vary names of a response header.
func varyNames(h http.Header) []string {
	names, _ := cache.VaryNames(h)
	return names
}

// notStored are the response headers a cache entry leaves out
// (lowercase): those the gateway owns or sets per response, and
// Content-Length, recomputed when the entry is served.
var notStored = func() map[string]bool {
	out := map[string]bool{"age": true, "warning": true, "retry-after": true, "content-length": true, "x-amzn-errortype": true}
	for _, n := range ownedHeaders {
		out[strings.ToLower(n)] = true
	}
	return out
}()

// storedHeader copies h without the headers in notStored, its values in
// one array.
func storedHeader(h http.Header) http.Header {
	n := 0
	for k, vs := range h {
		if !notStoredName(k) {
			n += len(vs)
		}
	}
	out := make(http.Header, len(h))
	values := make([]string, 0, n)
	for k, vs := range h {
		if !notStoredName(k) {
			values = append(values, vs...)
			out[k] = values[len(values)-len(vs) : len(values) : len(values)]
		}
	}
	return out
}

// notStoredName reports whether notStored holds header name k in any
// case, without allocating for names of up to 64 bytes.
func notStoredName(k string) bool {
	var buf [64]byte
	if len(k) > len(buf) {
		return notStored[strings.ToLower(k)]
	}
	b := buf[:len(k)]
	for i := range len(k) {
		c := k[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b[i] = c
	}
	return notStored[string(b)]
}
