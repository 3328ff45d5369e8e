// Package benchproxy holds the baselines of the benchmark (make bench,
// docs/benchmarks.md): the fastest bare Go reverse proxy we could build
// (the ceiling, cmd/bareproxy, which cmd/naiveproxy puts behind a naive
// limiter: one EVALSHA of a three-bucket-plus-quota script per request,
// the design a Go team would build instead), and the upstream they and
// tollgate share: a fixed 200-byte answer.
package benchproxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// bufferSize is the size of the copy buffers the proxy pools (as
// httputil's own default).
const bufferSize = 32 << 10

// bufferPool is an httputil.BufferPool over a sync.Pool: the response
// copy takes no new 32 KiB buffer per request.
type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte  { return *(b.p.Get().(*[]byte)) }
func (b *bufferPool) Put(v []byte) { b.p.Put(&v) }

func newBufferPool() *bufferPool {
	return &bufferPool{p: sync.Pool{New: func() any { b := make([]byte, bufferSize); return &b }}}
}

// Transport returns the tuned upstream transport: keep-alive connections
// for at least conns concurrent requests to the one upstream
// (MaxIdleConnsPerHost, so no connection is closed and dialled again under
// load), HTTP/1.1 only (no HTTP/2 attempt), no compression negotiation,
// no proxy lookup from the environment, 64 KiB socket-side read and
// write buffers.
func Transport(conns int) *http.Transport {
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:               nil,
		DialContext:         dialer.DialContext,
		MaxIdleConns:        0, // no total limit
		MaxIdleConnsPerHost: max(conns, 1024),
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
		WriteBufferSize:     64 << 10,
		ReadBufferSize:      64 << 10,
	}
}

// New returns the bare reverse proxy to upstream (scheme and host only;
// the request's path and query are kept): httputil.ReverseProxy with a
// Rewrite that sets two URL fields (no X-Forwarded headers, no path
// joining, nothing allocated), pooled copy buffers, the Transport above,
// and its error log off.
func New(upstream *url.URL, conns int) *httputil.ReverseProxy {
	scheme, host := upstream.Scheme, upstream.Host
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = scheme, host
		},
		Transport:  Transport(conns),
		BufferPool: newBufferPool(),
		ErrorLog:   nil,
	}
}

// Fixed answers every request with the same 200-byte body.
func Fixed() http.Handler {
	body := make([]byte, 200)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	body[len(body)-1] = '\n'
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h["Content-Type"] = []string{"text/plain"}
		h["Content-Length"] = []string{"200"}
		_, _ = w.Write(body)
	})
}

// Serve serves h on addr until SIGTERM or SIGINT, then shuts down.
func Serve(addr string, h http.Handler) error {
	srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
