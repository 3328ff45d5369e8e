package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"tollgate/internal/clientaddr"
	"tollgate/internal/reqbody"
)

// NewTransport returns the *http.Transport the gateway uses for upstreams
// when Options.Transport is nil: keep-alive pools sized for a busy
// gateway, bounded dial and TLS handshake times, no environment proxy (the
// upstream is only ever the integration's host), and no transparent
// decompression (bodies pass through with their Content-Encoding).
// Per-integration timeouts come from the request context, not from here.
func NewTransport() *http.Transport {
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
	}
}

// outbound is what the proxy's Rewrite and ErrorHandler need to know of one
// request; it travels in the outbound request's context.
type outbound struct {
	ex     *exchange
	m      *method
	ps     *params
	target url.URL
	verb   string
	proto  string
	values [4]string       // the backing of the X-Forwarded-* and X-Real-Ip values rewrite sets
	ctx    outboundContext // the upstream call's context
}

type outboundKey struct{}

// outboundContext is the upstream call's context (its timeout) carrying
// the outbound under outboundKey: a context.WithValue held in the
// exchange instead of allocated.
type outboundContext struct {
	context.Context
	ob *outbound
}

func (c *outboundContext) Value(key any) any {
	if key == (outboundKey{}) {
		return c.ob
	}
	return c.Context.Value(key)
}

// newProxy builds the ReverseProxy shared by every HTTP_PROXY integration.
func (s *Server) newProxy(t http.RoundTripper) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite:        s.rewrite,
		Transport:      t,
		ErrorHandler:   s.proxyError,
		ModifyResponse: dropOwnedHeaders,
		ErrorLog:       slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BufferPool:     bufferPool{},
	}
}

// serveIntegration calls the method's integration: MOCK answers its
// integration response (200 {} without one),
// HTTP_PROXY forwards to the upstream, an unusable integration answers 500.
// A caching method reaches it through serveCached (cache.go), which serves
// hits without it and records its responses to store them.
func (s *Server) serveIntegration(w http.ResponseWriter, r *http.Request, ex *exchange) {
	ig := &ex.m.integ
	switch {
	case ig.err != nil:
		ex.errType, ex.reason = ErrorTypeInternal, ig.err.Error()
		writeError(w, respInternal)
	case ig.kind == "MOCK":
		ig.mock.write(w, &templateScope{r: r, ex: ex, vars: ex.m.stage.vars})
	default:
		s.serveProxy(w, r, ex)
	}
}

// serveProxy forwards the request to the integration's upstream within its
// timeout and records the integration latency.
func (s *Server) serveProxy(w http.ResponseWriter, r *http.Request, ex *exchange) {
	m, ps := ex.m, &ex.params
	ig := &m.integ
	ob := &ex.ob
	*ob = outbound{ex: ex, m: m, ps: ps, verb: upstreamVerb(ig.verb, r.Method), proto: s.forwardedProto(r, ex)}
	if err := ig.targetInto(&ob.target, r, ps, m.stage.vars); err != nil {
		ex.errType, ex.reason = ErrorTypeBadRequest, err.Error()
		writeError(w, respBadRequest)
		return
	}
	up, cancel := upstreamContext(r.Context(), ex.body, ig.timeout)
	defer cancel()
	ob.ctx = outboundContext{Context: up, ob: ob}
	ctx := &ob.ctx
	ex.integrationCalled = true
	start := time.Now()
	s.proxy.ServeHTTP(w, r.WithContext(ctx))
	ex.integrationTime = time.Since(start) // recorded by finish
}

// errUpstreamTimeout is the cause of an upstream call cancelled by its
// integration's timeout.
var errUpstreamTimeout = fmt.Errorf("integration timeout: %w", context.DeadlineExceeded)

// upstreamContext bounds an upstream call by the integration's timeout,
// counting only the time spent waiting on the upstream: while a read of
// the client's body waits for the client, the clock stops (the body's own
// deadline bounds that wait), so an upload slower than the timeout but
// within the body rate still goes through. Without a body it is a plain
// context.WithTimeout.
func upstreamContext(parent context.Context, body *reqbody.Body, timeout time.Duration) (context.Context, context.CancelFunc) {
	if body == nil {
		return context.WithTimeout(parent, timeout)
	}
	ctx, cancel := context.WithCancelCause(parent)
	timer := time.AfterFunc(timeout, func() { cancel(errUpstreamTimeout) })
	body.Watch(func(reading bool) {
		if reading {
			timer.Stop()
		} else {
			timer.Reset(timeout)
		}
	})
	return ctx, func() {
		body.Watch(nil)
		timer.Stop()
		cancel(context.Canceled)
	}
}

// upstreamVerb is the method sent upstream: the client's for an ANY
// integration (and HEAD for a GET integration reached by HEAD), else the
// integration's.
func upstreamVerb(integration, client string) string {
	if integration == "ANY" || integration == "GET" && client == "HEAD" {
		return client
	}
	return integration
}

// forwardedProto is "https" for TLS connections, else "http"; a trusted
// proxy's X-Forwarded-Proto of http or https is kept.
func (s *Server) forwardedProto(r *http.Request, ex *exchange) string {
	if clientaddr.Trusted(ex.peer, s.trusted) {
		if p := r.Header.Get("X-Forwarded-Proto"); p == "http" || p == "https" {
			return p
		}
	}
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// rewrite builds the outbound request (ReverseProxy has already removed
// hop-by-hop headers and the X-Forwarded-* and Forwarded headers, and
// serveAPI every spoofable identity header, see stripSpoofed): target URL
// and method, the integration's Host, no x-api-key, the gateway's
// X-Tollgate-Api-Key-Id, X-Forwarded-For with the peer appended,
// X-Forwarded-Proto, X-Forwarded-Host, X-Real-Ip (the client address) and
// the header mappings.
//
// docs/behaviour.md ("Integrations") says "append the client address": the connection's peer is
// appended, which is the client address whenever the peer is not a
// trusted proxy; behind a trusted proxy the client is already in the
// chain, and each hop appending its own peer keeps the chain truthful.
func (s *Server) rewrite(pr *httputil.ProxyRequest) {
	ob := pr.In.Context().Value(outboundKey{}).(*outbound)
	out := pr.Out
	out.URL = &ob.target
	out.Host = ""
	out.Method = ob.verb
	h := out.Header
	delete(h, headerAPIKey) // X-Tollgate-Api-Key-Id was set by serveAPI
	v := &ob.values
	var peer, client string   // one string when they are the same address
	if ob.ex.peer.IsValid() { // not e.g. a unix socket peer
		peer = clientaddr.PeerText(pr.In, ob.ex.peer)
	}
	if c := ob.ex.client; c.IsValid() {
		client = peer
		if c != ob.ex.peer {
			client = c.String()
		}
	}
	if in := pr.In.Header[headerForwardedFor]; len(in) > 0 || peer != "" { // the chain with the peer appended
		switch {
		case len(in) == 0:
			v[0] = peer
		case peer == "":
			v[0] = strings.Join(in, ", ")
		default:
			v[0] = strings.Join(in, ", ") + ", " + peer
		}
		h[headerForwardedFor] = v[0:1:1]
	}
	v[1], v[2] = ob.proto, pr.In.Host
	h["X-Forwarded-Proto"], h["X-Forwarded-Host"] = v[1:2:2], v[2:3:3]
	if client != "" {
		v[3] = client
		h[headerRealIP] = v[3:4:4]
	}
	ob.m.integ.mapHeaders(h, pr.In, ob.ps, ob.m.stage.vars)
}

// proxyError maps a failed upstream call: first by what became of the
// request body (over MaxBodyBytes → 413, too slow → 408, malformed → 400,
// client gone mid-body → nothing written, logged as 499), then timeout →
// 504 "Endpoint request timed out", client gone → 499, any other failure
// → 502 "Bad Gateway". A body error closes the connection after the
// response: what is left of the body on the wire cannot be trusted.
func (s *Server) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	ex := r.Context().Value(outboundKey{}).(*outbound).ex
	ex.reason = err.Error()
	var bodyErr error
	if ex.body != nil {
		bodyErr = ex.body.Err()
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge) || errors.As(bodyErr, &tooLarge):
		ex.errType = ErrorTypeTooLarge
		w.Header()["Connection"] = []string{"close"}
		writeError(w, respTooLarge)
	case errors.Is(bodyErr, reqbody.ErrTimeout):
		ex.errType, ex.reason = ErrorTypeRequestTimeout, bodyErr.Error()
		w.Header()["Connection"] = []string{"close"}
		writeError(w, respRequestTimeout)
	case errors.Is(bodyErr, io.ErrUnexpectedEOF) || r.Context().Err() != nil && bodyErr != nil:
		s.clientClosed(w, ex)
	case bodyErr != nil:
		ex.errType, ex.reason = ErrorTypeBadRequest, "request body: "+bodyErr.Error()
		w.Header()["Connection"] = []string{"close"}
		writeError(w, respBadRequest)
	case errors.Is(context.Cause(r.Context()), context.DeadlineExceeded) || isTimeout(err):
		ex.errType = ErrorTypeTimeout
		writeError(w, respTimeout)
	case r.Context().Err() != nil:
		s.clientClosed(w, ex)
	default:
		ex.errType = ErrorTypeIntegration
		writeError(w, respBadGateway)
	}
}

// clientClosed records a request whose client went away: nothing is
// written, the access log says 499.
func (s *Server) clientClosed(w http.ResponseWriter, ex *exchange) {
	ex.errType = ErrorTypeClientClosed
	if sw, ok := w.(*statusWriter); ok {
		sw.status = statusClientClosed
	}
}

// statusClientClosed is logged for requests whose client went away before
// the upstream answered (nginx's 499); it is never sent.
const statusClientClosed = 499

// isTimeout reports whether err is a network timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// dropOwnedHeaders removes from an upstream response the headers the
// gateway owns, so only the gateway's (or none) reach the client. The
// transport stores a response's names canonical, so the canonical names
// are deleted, without canonicalizing them per response.
func dropOwnedHeaders(resp *http.Response) error {
	for _, name := range ownedCanonical {
		delete(resp.Header, name)
	}
	return nil
}

// ownedCanonical are ownedHeaders in canonical form.
var ownedCanonical = func() []string {
	out := make([]string, len(ownedHeaders))
	for i, n := range ownedHeaders {
		out[i] = http.CanonicalHeaderKey(n)
	}
	return out
}()

// bufferPool lends the 32 KiB copy buffers of ReverseProxy.
type bufferPool struct{}

var buffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (bufferPool) Get() []byte  { return *buffers.Get().(*[]byte) }
func (bufferPool) Put(b []byte) { buffers.Put(&b) }
