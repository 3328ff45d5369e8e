package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"tollgate/cache"
)

// serveRevalidate answers with lk's expired entry at once (X-Cache:
// Stale) and refreshes it in the background, unless this node already
// calls the upstream for that entry (a refresh, or a miss that will fill
// it): at most one refresh per entry per node at a time, and the partner
// never waits for it.
func (s *Server) serveRevalidate(w *statusWriter, r *http.Request, ex *exchange, lk *cache.Lookup) {
	call, leader := s.flight.Join(lk.Digest) // before the answer: a client that has it sees the refresh begun
	if leader {
		s.fills.Add(1)
		go s.refresh(newRefresh(r, ex, lk), call)
	}
	s.serveStale(w, r, ex, lk.Entry, staleRevalidate)
}

// refreshing is one background refresh: copies of the request, its
// exchange and its lookup that outlive the request's handler.
type refreshing struct {
	r  *http.Request
	ex *exchange
	lk cache.Lookup
}

// newRefresh copies what a refresh of lk's entry needs from the request
// r: a GET (for a HEAD) without a body, its own header and context (not
// cancelled with the request; the integration's timeout bounds the call).
func newRefresh(r *http.Request, ex *exchange, lk *cache.Lookup) *refreshing {
	rr := r.Clone(context.WithoutCancel(r.Context()))
	if rr.Method == http.MethodHead {
		rr.Method = http.MethodGet
	}
	rr.Body, rr.ContentLength = http.NoBody, 0
	bg := &exchange{id: ex.id, start: time.Now(), peer: ex.peer, client: ex.client, api: ex.api, stage: ex.stage,
		resource: ex.resource, method: rr.Method, keyID: ex.keyID, planID: ex.planID, m: ex.m, params: ex.params}
	out := &refreshing{r: rr, ex: bg, lk: *lk}
	out.lk.Request.Header = rr.Header
	return out
}

// refresh calls the integration for rf's entry, leading call (concurrent
// misses of the entry on this node share its answer), and stores a
// storable answer. Nobody reads the answer but the cache; a failed call
// leaves the entry as it was, to be refreshed by a later request. A panic
// (ReverseProxy's http.ErrAbortHandler on a broken body) ends the refresh
// alone: there is no handler to recover it.
func (s *Server) refresh(rf *refreshing, call *cache.Call) {
	defer s.fills.Done()
	done := false
	defer func() {
		if !done {
			s.flight.Done(rf.lk.Digest, call, nil)
		}
		if v := recover(); v != nil && v != http.ErrAbortHandler {
			s.log.LogAttrs(context.Background(), slog.LevelError, "cache refresh panicked", slog.String("request_id", rf.ex.id), slog.String("panic", fmt.Sprint(v)))
		}
	}()
	sw := &statusWriter{ResponseWriter: discardWriter{http.Header{}}}
	cw := s.capture(sw, rf.r, rf.ex, cacheRefresh, nil)
	s.flight.Done(rf.lk.Digest, call, func() *cache.Shared { return cw.shared(rf.r, rf.ex) })
	done = true
	s.fill(sw, rf.r, rf.ex, &rf.lk, cw, rf.ex.m.cache.ttl)
	if cw.failure != "" && s.log.Enabled(context.Background(), slog.LevelDebug) {
		s.log.LogAttrs(context.Background(), slog.LevelDebug, "cache refresh failed", slog.String("request_id", rf.ex.id),
			slog.String("failure", cw.failure), slog.Int("status", cw.status), slog.String("reason", rf.ex.reason))
	}
}

// discardWriter is the ResponseWriter of a background refresh.
type discardWriter struct{ h http.Header }

func (d discardWriter) Header() http.Header         { return d.h }
func (d discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d discardWriter) WriteHeader(int)             {}
