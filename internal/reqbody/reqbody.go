// Package reqbody bounds the time a client may take to send a request
// body. http.Server's ReadHeaderTimeout covers only the headers: without
// this, a client that announces a body and sends a few bytes of it holds
// its connection, a goroutine and a file descriptor (and, on the gateway,
// an upstream connection) for as long as it likes, with no credentials
// needed.
//
// The rule is Apache mod_reqtimeout's "body=Grace,MinRate=MinRate": the
// body must have arrived by Grace after the handler started, plus one
// second for every MinRate bytes received so far. The deadline is the
// connection's read deadline, moved forward as bytes arrive, so a Read
// blocked past it fails with an error matching ErrTimeout; net/http then
// closes the connection after the response. With DefaultLimits a client
// must average 4 KiB/s after its first 20 s: a 10 MiB body may take up to
// 20 s + 2560 s, a 4-byte trickle is cut at 20 s. docs/operations.md
// ("Slow clients") states the bounds.
package reqbody

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// ErrTimeout matches (errors.Is) a body read that failed because the body
// did not arrive within its deadline.
var ErrTimeout = errors.New("request body arrived too slowly")

// Limits is the deadline rule of a request body. The zero value is not
// useful; start from DefaultLimits.
type Limits struct {
	// Grace is how long the body may take before the rate counts.
	Grace time.Duration
	// MinRate is the average rate the body must keep after Grace, in
	// bytes per second: each MinRate bytes received extend the deadline by
	// one second.
	MinRate int64
	// Drain is how long the server may still read a body the handler left
	// unread (net/http discards up to 256 KiB of it to keep the connection)
	// before it gives up and closes the connection.
	Drain time.Duration
}

// DefaultLimits are the limits of both of tollgate's ports: 20 s, then at
// least 4 KiB/s (32 kbit/s, below any working mobile link), and 1 s to
// drain an unread body.
var DefaultLimits = Limits{Grace: 20 * time.Second, MinRate: 4 << 10, Drain: time.Second}

// Deadline returns when a body whose handler started at start must be
// complete, given that n bytes have arrived.
func (l Limits) Deadline(start time.Time, n int64) time.Time {
	return start.Add(l.Grace + time.Duration(n)*time.Second/time.Duration(l.MinRate))
}

// MaxDuration is the longest a body of size bytes may take.
func (l Limits) MaxDuration(size int64) time.Duration {
	return l.Deadline(time.Time{}, size).Sub(time.Time{})
}

// Body is a request body under a deadline. Create it with Wrap; its
// methods are safe for concurrent use (a proxy's transport reads the body
// on its own goroutine).
type Body struct {
	src    io.ReadCloser
	rc     *http.ResponseController
	limits Limits
	start  time.Time

	mu       sync.Mutex
	n        int64
	eof      bool
	err      error              // the first read error other than io.EOF
	finished bool               // Finish was called: rc may no longer be used
	watch    func(reading bool) // see Watch
}

// Wrap replaces r.Body by a Body under limits and sets the connection's
// first read deadline. w must be the handler's ResponseWriter (or wrap
// it, with Unwrap). Where the connection cannot take a deadline (a
// ResponseRecorder in a unit test) the body is read without one. The
// caller must call Finish before its handler returns.
func Wrap(w http.ResponseWriter, r *http.Request, limits Limits) *Body {
	b := &Body{src: r.Body, rc: http.NewResponseController(w), limits: limits, start: time.Now()}
	_ = b.rc.SetReadDeadline(limits.Deadline(b.start, 0))
	r.Body = b
	return b
}

// Read reads from the body, moving the deadline forward by what arrived.
// A read that missed the deadline returns an error matching ErrTimeout.
func (b *Body) Read(p []byte) (int, error) {
	b.mu.Lock()
	watch := b.watch
	b.mu.Unlock()
	if watch != nil {
		watch(true)
		defer watch(false)
	}
	n, err := b.src.Read(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n += int64(n)
	switch {
	case err == io.EOF:
		b.eof = true
		b.setDeadline(time.Time{}) // net/http's background read must not time out
	case err != nil:
		if isTimeout(err) {
			err = fmt.Errorf("%w (%d bytes in %v): %w", ErrTimeout, b.n, time.Since(b.start).Round(time.Millisecond), err)
		}
		if b.err == nil {
			b.err = err
		}
	case n > 0:
		b.setDeadline(b.limits.Deadline(b.start, b.n))
	}
	return n, err
}

// setDeadline sets the connection's read deadline unless the handler has
// finished. b.mu is held.
func (b *Body) setDeadline(t time.Time) {
	if !b.finished {
		_ = b.rc.SetReadDeadline(t)
	}
}

// Close closes the underlying body.
func (b *Body) Close() error { return b.src.Close() }

// Err returns the first error a Read returned other than io.EOF: one
// matching ErrTimeout, an *http.MaxBytesError, a malformed chunked
// encoding, or the client going away (io.ErrUnexpectedEOF); nil while
// none occurred.
func (b *Body) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// Watch sets a function called with true when a Read starts waiting for
// the client and with false when it returns (nil removes it). A proxy uses
// it to stop its upstream timeout while the client is the one being
// waited for.
func (b *Body) Watch(f func(reading bool)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.watch = f
}

// Finish must be called before the handler returns. When the body was left
// unread, it gives net/http at most Limits.Drain more to discard it (else
// the connection is closed after the response), so a refused request from
// a slow client is answered at once rather than at its body's deadline.
func (b *Body) Finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.eof && b.err == nil {
		drain := time.Now().Add(b.limits.Drain)
		if d := b.limits.Deadline(b.start, b.n); d.Before(drain) {
			drain = d
		}
		b.setDeadline(drain)
	}
	b.finished = true
}

// Handler wraps the body of every request to next under limits.
func Handler(next http.Handler, limits Limits) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		b := Wrap(w, r, limits)
		defer b.Finish()
		next.ServeHTTP(w, r)
	})
}

// isTimeout reports whether err is a network timeout (a read deadline).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
