package gateway

import (
	"net/http"
	"strconv"
	"time"

	"tollgate/cache"
)

// Values of X-Cache (docs/behaviour.md, "Response cache").
const (
	cacheHit     = "Hit"
	cacheMiss    = "Miss"
	cacheRefresh = "Refresh"
	cacheBypass  = "Bypass"
	cacheStale   = "Stale"
)

// Headers the cache writes.
const (
	headerAge     = "Age"
	headerWarning = "Warning"
)

// Values the cache writes.
var (
	warningUnauthorized = []string{`199 - "cache-control ignored: caller not authorized to invalidate"`}
	respAccessDenied    = errorResponse{http.StatusForbidden, "Forbidden", "AccessDeniedException"}
)

// ErrorTypeAccessDenied is logged for a max-age=0 refused under
// FAIL_WITH_403.
const ErrorTypeAccessDenied = "ACCESS_DENIED"

// serveCached serves a request of a caching method (docs/behaviour.md,
// "Order of work" steps 3-4, and "Response cache"): the key check already
// passed; the engine decides the limits (hits are charged too) and, in the
// same round trip, reads the stage's cache generation and the entry
// (Engine.DecideLookup); then a fresh entry is served, or an expired one
// within its stale-while-revalidate window (refreshed in the background),
// or the integration is called once per entry on this node and a storable
// response is written to the cache after it was sent.
func (s *Server) serveCached(w *statusWriter, r *http.Request, ex *exchange) {
	mc := ex.m.cache
	mode, warn := mc.mode(r, ex.rec)
	switch mode {
	case modeForbidden: // refused before anything is charged
		ex.errType, ex.reason = ErrorTypeAccessDenied, "cache-control max-age=0 without cache invalidation permission"
		writeError(w, respAccessDenied)
		return
	case modeBypass:
		if s.limit(w, r, ex) {
			s.serveUncached(w, r, ex)
		}
		return
	}
	lk := &cache.Lookup{Params: mc.params, Request: cacheRequest(r, ex), Refresh: mode == modeRefresh}
	d, err := s.engine.DecideLookup(r.Context(), &ex.lreq, lk)
	if !s.applyDecision(w, r, ex, d, err) {
		return
	}
	if warn {
		w.Header()[headerWarning] = warningUnauthorized
	}
	switch {
	case lk.Digest == "": // generation unknown: nothing may be served or stored
		s.serveUncached(w, r, ex)
	case lk.Err != nil: // cache Redis unavailable: uncached, single flight kept
		s.serveMiss(w, r, ex, lk, cacheBypass, 0)
	case mode == modeRefresh:
		s.serveRefresh(w, r, ex, lk)
	case lk.Entry != nil && lk.Entry.Fresh(s.now()):
		ex.cache = cacheHit
		s.writeEntry(w, r, lk.Entry, cacheHit)
	case mc.whileRevalidate(lk.Entry, s.now()):
		s.serveRevalidate(w, r, ex, lk)
	default:
		s.serveMiss(w, r, ex, lk, cacheMiss, mc.ttl)
	}
}

// cacheRequest gathers the parts of r its cache digest is built from;
// HEAD uses the GET entry.
func cacheRequest(r *http.Request, ex *exchange) cache.Request {
	verb := r.Method
	if verb == http.MethodHead {
		verb = http.MethodGet
	}
	ps := &ex.params
	return cache.Request{
		APIID: ex.m.stage.apiID, Stage: ex.m.stage.name, Method: verb,
		Host: r.Host, Path: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery, Header: r.Header,
		PathParam: func(name string) (string, bool) {
			p, ok := ps.get(name)
			return p.value, ok
		},
	}
}

// serveUncached calls the integration with X-Cache: Bypass, neither
// reading nor storing an entry.
func (s *Server) serveUncached(w *statusWriter, r *http.Request, ex *exchange) {
	ex.cache = cacheBypass
	w.Header()[headerXCache] = []string{cacheBypass}
	s.serveIntegration(w, r, ex)
}

// writeEntry writes a stored (or shared) response: its headers, except
// those the gateway already set (rate-limit headers), X-Cache, Age on
// answers from the cache (xcache Hit or Stale: seconds since the entry
// was stored, RFC 9111 section 5.1), Content-Length, and the body unless
// the request is HEAD.
func (s *Server) writeEntry(w http.ResponseWriter, r *http.Request, e *cache.Entry, xcache string) {
	h := w.Header()
	for k, vs := range e.Header {
		if _, set := h[k]; !set {
			h[k] = vs
		}
	}
	h[headerXCache] = []string{xcache}
	if xcache == cacheHit || xcache == cacheStale {
		h[headerAge] = []string{strconv.FormatInt(int64(e.Age(s.now())/time.Second), 10)}
	}
	h[headerContentLen] = []string{strconv.Itoa(len(e.Body))}
	w.WriteHeader(e.Status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(e.Body)
	}
}
