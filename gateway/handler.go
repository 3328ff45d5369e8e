package gateway

import (
	"cmp"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"tollgate/internal/clientaddr"
	"tollgate/internal/reqbody"
	"tollgate/limit"
	"tollgate/plans"
)

// exchange is the state of one request: what routing and the key check
// found, what the access log and metrics report, and the limit request
// built in place (arrays reused so the hot path allocates little).
// Functions of the request path take it rather than its parts.
type exchange struct {
	cfg               *config          // the snapshot, loaded once for the request; nil before the first
	domain            *domainRoute     // the custom domain name of the Host; nil on an execute-api host
	stagePath         string           // the escaped path that names the stage, then the resource
	usage             bool             // the request is for the partner usage endpoint (UsagePath)
	m                 *method          // the routed method
	rec               *plans.KeyRecord // the caller's key record; nil unless the method requires a key
	sp                *stagePlan       // the caller's plan on this stage; nil without a key
	cost              *plans.Cost      // what a request of this method costs in sp (buildRequest)
	id                string
	start             time.Time
	peer, client      netip.Addr
	api, stage        string
	resource, method  string
	keyID, planID     string
	errType, reason   string
	integrationTime   time.Duration
	integrationCalled bool
	params            params
	buckets           [3]limit.Bucket
	quota             limit.Quota
	lreq              limit.Request
	planRules         []limit.Level         // the levels of the shadow plan's rules, first in rules
	release           func()                // ends the request's concurrency slots; nil without any
	unsettled         bool                  // admitted uncounted (quota-counts=non-5xx, a settled cost): settle after the response
	quotaStart        time.Time             // the quota period start of its decision
	decidedAt         time.Time             // the decision's time (Redis's)
	undecided         *limit.UndecidedError // admitted without a decision (failure mode open)
	cache             string                // X-Cache outcome of a caching method
	stale             string                // why a stale entry answered (staleError, ...); "" when none did
	body              *reqbody.Body         // the request body under its deadline; nil without one
	// held in the exchange so a request allocates them with it: its
	// response writer, its upstream call's outbound, and the backing of
	// its header values (request id, key id, the five rate-limit headers)
	sw     statusWriter
	ob     outbound
	values [7]string
}

// ServeHTTP serves API requests on `{restApiId}.execute-api.*` hosts and
// on custom domain names (through their base path mappings), and /healthz
// and /readyz on any other host.
//
// Every request body is bounded in size (MaxBodyBytes) and in time
// (Options.BodyLimits), whichever host it was sent to.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body *reqbody.Body
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		body = reqbody.Wrap(w, r, s.bodyLimits)
		defer body.Finish()
	}
	cfg := s.cfg.Load()
	apiID, ok := apiIDFromHost(r.Host)
	var domain *domainRoute
	if !ok {
		if domain = cfg.domainFor(r.Host); domain == nil {
			s.serveHealth(w, r)
			return
		}
	}
	ex := &exchange{id: newRequestID(), start: time.Now(), cfg: cfg, domain: domain, api: apiID, method: r.Method, body: body,
		stagePath: r.URL.EscapedPath(), usage: r.URL.Path == UsagePath}
	defer ex.endSlots() // also when serving panics or the client went away
	ex.peer = clientaddr.Peer(r)
	ex.client = clientaddr.Client(r, ex.peer, s.trusted)
	sw := &ex.sw
	sw.ResponseWriter = w
	ex.values[0] = ex.id
	sw.Header()[headerRequestID] = ex.values[0:1:1]
	s.serveAPI(sw, r, ex)
	s.finish(r, sw, ex)
	if ex.unsettled {
		s.settle(ex, sw, cmp.Or(sw.status, http.StatusOK))
	}
}

// endSlots ends the request's concurrency slots (limit.Decision.Release),
// once its response has ended.
func (ex *exchange) endSlots() {
	if ex.release != nil {
		ex.release()
	}
}

// serveAPI runs the order of work of docs/behaviour.md ("Order of work")
// for one request.
func (s *Server) serveAPI(w *statusWriter, r *http.Request, ex *exchange) {
	if !s.checkInput(w, r, ex) {
		return
	}
	if ex.domain != nil && !s.mapBasePath(w, r, ex) {
		return
	}
	if ex.usage {
		s.serveUsage(w, r, ex)
		return
	}
	if ex.m = s.route(w, r, ex); ex.m == nil {
		return
	}
	ex.resource = ex.m.path
	if ex.m.authorization != "" {
		refuseAuthorization(w, r, ex)
		return
	}
	if ex.m.keyRequired && !s.checkKey(w, r, ex) {
		return
	}
	// The identity headers as the integration will receive them: the cache
	// matches Vary against r.Header, so a client cannot send them, and an
	// upstream varying on the key id gets one entry per key.
	stripSpoofed(r.Header)
	if ex.keyID != "" {
		ex.values[1] = ex.keyID
		r.Header[HeaderAPIKeyID] = ex.values[1:2:2]
	}
	s.buildRequest(ex) // once: the limit and the cache path use ex.lreq
	s.buildRules(r, ex)
	if ex.m.cache != nil && ex.m.cache.eligible(r.Method) {
		s.serveCached(w, r, ex) // limits and cache in one round trip
		return
	}
	if !s.limit(w, r, ex) {
		return
	}
	s.serveIntegration(w, r, ex)
}

// refuseAuthorization answers a call of a method secured by an
// authorizer or AWS_IAM, which tollgate cannot perform, as AWS answers a
// call it does not authorize: 401 Unauthorized (UNAUTHORIZED) for a
// Lambda or Cognito authorizer; for AWS_IAM, 403 Missing Authentication
// Token without an Authorization header and 403 Forbidden
// (ACCESS_DENIED) with one. It charges nothing.
func refuseAuthorization(w http.ResponseWriter, r *http.Request, ex *exchange) {
	ex.errType, ex.reason = ErrorTypeUnauthorized, "authorizationType "+ex.m.authorization+" cannot be performed by tollgate"
	switch {
	case ex.m.authorization != plans.AuthorizationIAM:
		writeError(w, respUnauthorized)
	case len(r.Header["Authorization"]) == 0:
		writeError(w, respMissingToken)
	default:
		writeError(w, respAccessDenied)
	}
}

// checkInput enforces the URL, header and body limits up front: 414 for a
// request target over MaxURLBytes, 431 for headers over MaxHeaderBytes,
// 413 when Content-Length says the body is over MaxBodyBytes; a body
// without a length is cut off at MaxBodyBytes (the integration call then
// fails with 413; ServeHTTP has put it under its deadline, and one that
// arrives too slowly fails the integration call with 408).
func (s *Server) checkInput(w *statusWriter, r *http.Request, ex *exchange) bool {
	if len(r.RequestURI) > MaxURLBytes || len(r.URL.RawQuery)+len(r.URL.EscapedPath()) > MaxURLBytes {
		ex.errType = ErrorTypeBadRequest
		writeError(w, respURITooLong)
		return false
	}
	if headerBytes(r) > MaxHeaderBytes {
		ex.errType = ErrorTypeBadRequest
		writeError(w, respHeaderTooLarge)
		return false
	}
	if r.ContentLength > MaxBodyBytes {
		ex.errType = ErrorTypeTooLarge
		w.Header()["Connection"] = []string{"close"}
		writeError(w, respTooLarge)
		return false
	}
	return true
}

// headerBytes is the size of r's header section as MaxHeaderBytes counts
// it: "Name: value" CRLF per field line, with the Host and
// Transfer-Encoding fields net/http moves out of r.Header.
func headerBytes(r *http.Request) int {
	n := len("Host: \r\n") + len(r.Host)
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + len(v) + len(": \r\n")
		}
	}
	for _, te := range r.TransferEncoding {
		n += len("Transfer-Encoding: \r\n") + len(te)
	}
	return n
}

// route resolves (stage, resource, method) from the snapshot loaded for
// the request (ex.cfg) and ex.stagePath, with the path parameters in
// ex.params, or writes
// 404 / 405 / 503 (no snapshot yet) and returns nil. ex.lreq.Version is
// the snapshot's.
func (s *Server) route(w http.ResponseWriter, r *http.Request, ex *exchange) *method {
	cfg := ex.cfg
	if cfg == nil {
		ex.errType, ex.reason = ErrorTypeUnavailable, "no config snapshot loaded"
		writeUnavailable(w)
		return nil
	}
	ex.lreq.Version = cfg.version
	api := cfg.apis[ex.api]
	stageName, rest, ok := splitStagePath(ex.stagePath)
	var st *stageConfig
	if api != nil && ok {
		st = api.stages[stageName]
	}
	if st == nil {
		ex.errType, ex.reason = ErrorTypeNotFound, "unknown api or stage"
		writeError(w, respNotFound)
		return nil
	}
	ex.stage = stageName
	if sw, ok := w.(*statusWriter); ok && st.responses != nil {
		sw.errCtx = &errorContext{responses: st.responses, r: r, ex: ex, vars: st.vars}
	}
	ps := &ex.params
	rt := st.root.match(rest, ps)
	if rt == nil {
		ex.errType, ex.reason = ErrorTypeNotFound, "no resource"
		writeError(w, respNotFound)
		return nil
	}
	ex.resource = rt.path
	m := rt.lookup(r.Method)
	if m == nil {
		ex.errType, ex.reason = ErrorTypeMethod, "method not allowed"
		w.Header()[headerAllow] = []string{rt.allow}
		writeError(w, respMethodNotAllow)
		return nil
	}
	return m
}

// apiIDFromHost returns the API id of a `{restApiId}.execute-api.<anything>`
// host (port ignored, case-insensitive).
func apiIDFromHost(host string) (string, bool) {
	id, rest, ok := strings.Cut(host, ".")
	if !ok || id == "" || len(rest) < len("execute-api.") || !strings.EqualFold(rest[:len("execute-api.")], "execute-api.") {
		return "", false
	}
	return strings.ToLower(id), true
}

// serveHealth answers /healthz (the process is up) and /readyz (Ready);
// everything else on a non-API host is 404.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/healthz":
		writeJSON(w, http.StatusOK, `{"status":"ok"}`)
	case "/readyz":
		if err := s.Ready(); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, `{"status":"unavailable"}`)
			return
		}
		writeJSON(w, http.StatusOK, `{"status":"ok"}`)
	default:
		writeError(w, respNotFound)
	}
}

// writeJSON writes a small JSON body with status.
func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header()[headerContentType] = jsonContentType
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}
