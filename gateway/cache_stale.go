package gateway

import (
	"bytes"
	"maps"
	"net/http"

	"tollgate/cache"
)

// Why a stale entry answered (X-Cache: Stale), the reason label of
// tollgate_cache_stale_total.
const (
	staleError   = "error"   // the upstream answered 5xx
	staleTimeout = "timeout" // the integration timed out (the gateway's 504)
	staleRefused = "refused" // no answer: connection refused or broken, host not found (the gateway's 502)
	// staleRevalidate: within the stale-while-revalidate window, refreshed
	// in the background.
	staleRevalidate = "revalidate"
)

// failure returns why an integration call failed in a way a stale entry
// may cover (staleError, staleTimeout, staleRefused), "" when it did not:
// status is the response's.
func failure(ex *exchange, status int) string {
	switch {
	case ex.errType == ErrorTypeTimeout:
		return staleTimeout
	case ex.errType == ErrorTypeIntegration:
		return staleRefused
	case status >= 500 && status <= 599:
		return staleError
	}
	return ""
}

// serveStale answers with the stale entry e (X-Cache: Stale, Age) for
// reason: in place of an upstream call that failed (see failure; the
// request is logged with its own status, 200, and the failure as its
// reason), or staleRevalidate.
func (s *Server) serveStale(w *statusWriter, r *http.Request, ex *exchange, e *cache.Entry, reason string) {
	ex.cache, ex.stale = cacheStale, reason
	if reason != staleRevalidate {
		ex.errType, ex.reason = "", "upstream failed ("+reason+"): stale entry served"
	}
	s.writeEntry(w, r, e, cacheStale)
}

// serveGuarded calls the integration through g. When the body of a
// failed response breaks off (ReverseProxy then panics with
// http.ErrAbortHandler), none of it reached the client: the panic ends
// here, and cw keeps no body, so the broken response is neither shared
// nor stored.
func (s *Server) serveGuarded(cw *captureWriter, r *http.Request, ex *exchange, g *failGuard) {
	defer func() {
		if g.state != failed {
			return
		}
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler {
				panic(v)
			}
			cw.over, cw.body = true, bytes.Buffer{}
		}
	}()
	s.serveIntegration(cw, r, ex)
}

// failGuard holds back an integration's response until its status is
// known, so that a failed one (see failure) can be dropped whole and a
// stale entry served instead; any other passes through as it is written.
// The integration writes its header into the guard's own map, which
// starts as a copy of the response's (request id, rate-limit headers,
// X-Cache) and replaces it when the response passes.
type failGuard struct {
	w      http.ResponseWriter
	ex     *exchange
	header http.Header
	state  guardState
	reason string // why the call failed, once failed
}

type guardState int

const (
	undecided guardState = iota
	passed
	failed
)

func newFailGuard(w http.ResponseWriter, ex *exchange) *failGuard {
	return &failGuard{w: w, ex: ex, header: w.Header().Clone()}
}

func (g *failGuard) Header() http.Header { return g.header }

func (g *failGuard) WriteHeader(code int) {
	switch {
	case g.state == passed:
		g.w.WriteHeader(code) // a superfluous call: net/http logs it
	case g.state == failed:
	case code < 200: // interim: passed on (ReverseProxy clears the map after it)
		g.pass()
		g.w.WriteHeader(code)
	default:
		if g.reason = failure(g.ex, code); g.reason != "" {
			g.state = failed
			return
		}
		g.state = passed
		g.pass()
		g.w.WriteHeader(code)
	}
}

// pass makes the guard's header the response's.
func (g *failGuard) pass() {
	h := g.w.Header()
	clear(h)
	maps.Copy(h, g.header)
}

func (g *failGuard) Write(b []byte) (int, error) {
	if g.state == undecided {
		g.WriteHeader(http.StatusOK)
	}
	if g.state == failed {
		return len(b), nil
	}
	return g.w.Write(b)
}

// FlushError flushes a response that passed; otherwise nothing may reach
// the client yet (http.ResponseController finds it before Unwrap).
func (g *failGuard) FlushError() error {
	if g.state != passed {
		return nil
	}
	return http.NewResponseController(g.w).Flush()
}

// Unwrap returns the underlying ResponseWriter (the stage's gateway
// responses are found through it).
func (g *failGuard) Unwrap() http.ResponseWriter { return g.w }
