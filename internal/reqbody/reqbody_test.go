package reqbody

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"tollgate/internal/rawhttptest"
)

// testLimits are short enough for a test and loose enough for a loaded
// machine: a steady sender that stalls for under two seconds per 200
// bytes stays within them.
var testLimits = Limits{Grace: 300 * time.Millisecond, MinRate: 100, Drain: 100 * time.Millisecond}

// serve starts a server whose handler is h under testLimits.
func serve(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(Handler(h, testLimits))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// readAll is a handler that reads the whole body and answers 200 with its
// length, or 408 with the error.
func readAll(w http.ResponseWriter, r *http.Request) {
	n, err := io.Copy(io.Discard, r.Body)
	if errors.Is(err, ErrTimeout) {
		w.WriteHeader(http.StatusRequestTimeout)
		fmt.Fprint(w, err)
		return
	}
	fmt.Fprintf(w, "%d %v", n, err)
}

// A body that stops arriving fails its read with ErrTimeout once the
// deadline (Grace, plus the 4 bytes' credit) passes, and the connection is
// closed after the response, so a stalled client holds no connection.
func TestTrickledBodyTimesOut(t *testing.T) {
	t.Parallel()
	conn := rawhttptest.MustDial(t, serve(t, readAll))
	conn.Send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nabcd")
	resp, body := conn.MustRead()
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(body, "too slowly") {
		t.Errorf("got %d %q, want 408 naming the slow body", resp.StatusCode, body)
	}
	if !conn.Closed() {
		t.Errorf("connection after the response: open, want it closed by the server")
	}
}

// A chunked body is held to the same rule.
func TestTrickledChunkedBodyTimesOut(t *testing.T) {
	t.Parallel()
	conn := rawhttptest.MustDial(t, serve(t, readAll))
	conn.Send("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n")
	if resp, _ := conn.MustRead(); resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("got %d, want 408", resp.StatusCode)
	}
	if !conn.Closed() {
		t.Errorf("connection after the response: open, want it closed by the server")
	}
}

// A slow upload that keeps to the rate completes, however long past Grace
// it takes, and the connection stays usable.
func TestSteadySlowUploadCompletes(t *testing.T) {
	t.Parallel()
	conn := rawhttptest.MustDial(t, serve(t, readAll))
	const chunks, size = 8, 200 // 1600 bytes in about 1.2 s: 1.3 KB/s against 100 B/s
	conn.Send(fmt.Sprintf("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", chunks*size))
	conn.Trickle(150*time.Millisecond, slices.Repeat([]string{strings.Repeat("x", size)}, chunks)...)
	if resp, body := conn.MustRead(); resp.StatusCode != http.StatusOK || body != "1600 <nil>" {
		t.Fatalf("got %d %q, want 200 \"1600 <nil>\"", resp.StatusCode, body)
	}
	conn.Send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok")
	if resp, body := conn.MustRead(); resp.StatusCode != http.StatusOK || body != "2 <nil>" {
		t.Errorf("second request on the connection: got %d %q, want 200 \"2 <nil>\"", resp.StatusCode, body)
	}
}

// Once the body is in, the deadline is lifted: a handler that works past
// it keeps its context (net/http's background read on the connection must
// not time out and cancel the request).
func TestDeadlineLiftedAfterBody(t *testing.T) {
	t.Parallel()
	addr := serve(t, func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		time.Sleep(3 * testLimits.Grace)
		fmt.Fprintf(w, "%d %v %v", n, err, r.Context().Err())
	})
	conn := rawhttptest.MustDial(t, addr)
	conn.Send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
	if resp, body := conn.MustRead(); resp.StatusCode != http.StatusOK || body != "3 <nil> <nil>" {
		t.Errorf("got %d %q, want 200 \"3 <nil> <nil>\"", resp.StatusCode, body)
	}
}

// A handler that answers without reading a slow client's body gets its
// answer out after Drain, not after the body's deadline, and the
// connection is then closed.
func TestUnreadBodyAnsweredAfterDrain(t *testing.T) {
	t.Parallel()
	slow := Limits{Grace: time.Hour, MinRate: 1, Drain: testLimits.Drain}
	srv := httptest.NewServer(Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
	}), slow))
	t.Cleanup(srv.Close)
	conn := rawhttptest.MustDial(t, srv.URL)
	conn.Send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nabcd")
	if resp, _ := conn.MustRead(); resp.StatusCode != http.StatusForbidden {
		t.Errorf("got %d, want 403", resp.StatusCode)
	}
	if !conn.Closed() {
		t.Errorf("connection after the response: open, want it closed by the server")
	}
}

// Err reports a malformed chunked body as it is, not as a timeout.
func TestMalformedChunkedBodyIsNotATimeout(t *testing.T) {
	t.Parallel()
	got := make(chan error, 1)
	addr := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		got <- r.Body.(*Body).Err()
	})
	conn := rawhttptest.MustDial(t, addr)
	conn.Send("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabcd\r\n0\r\n\r\n")
	conn.MustRead()
	if err := <-got; err == nil || errors.Is(err, ErrTimeout) {
		t.Errorf("Err: got %v, want the chunked-encoding error", err)
	}
}

func TestLimitsMaxDuration(t *testing.T) {
	if got, want := DefaultLimits.MaxDuration(10<<20), 20*time.Second+2560*time.Second; got != want {
		t.Errorf("10 MiB: got %v, want %v", got, want)
	}
	if got, want := DefaultLimits.MaxDuration(0), 20*time.Second; got != want {
		t.Errorf("empty: got %v, want %v", got, want)
	}
}
