// Package rawhttptest speaks HTTP/1.1 over a bare TCP connection, as
// clients net/http's own client cannot play: one that trickles its body,
// stops sending it, or sends headers of an exact size. The one raw-HTTP
// helper of the tree.
package rawhttptest

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// ReadBound bounds every read: generous, so that a loaded machine fails no
// test, while a server that never answers still does.
const ReadBound = 20 * time.Second

// Conn is a client connection written byte by byte.
type Conn struct {
	tb   testing.TB
	conn net.Conn
	br   *bufio.Reader
}

// MustDial connects to addr (host:port, or an http:// URL such as
// httptest.Server.URL); the connection is closed when the test ends.
func MustDial(tb testing.TB, addr string) *Conn {
	tb.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(addr, "http://"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = conn.Close() })
	return &Conn{tb: tb, conn: conn, br: bufio.NewReader(conn)}
}

// Send writes s. A write the server refused (it may close early) shows in
// the next read.
func (c *Conn) Send(s string) { _, _ = io.WriteString(c.conn, s) }

// Trickle writes each chunk after waiting gap: an upload slow on purpose.
// The server's body deadline judges that pace on its own clock, so the
// wait is real time.
func (c *Conn) Trickle(gap time.Duration, chunks ...string) {
	for _, s := range chunks {
		time.Sleep(gap)
		c.Send(s)
	}
}

// MustRead reads one response within ReadBound and returns it with its
// body, read whole and closed.
func (c *Conn) MustRead() (*http.Response, string) {
	c.tb.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(ReadBound))
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		c.tb.Fatalf("no response from %s: %v", c.conn.RemoteAddr(), err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	return resp, string(b)
}

// Closed reports whether the server closes the connection (EOF) within
// ReadBound, with nothing more sent.
func (c *Conn) Closed() bool {
	_ = c.conn.SetReadDeadline(time.Now().Add(ReadBound))
	_, err := c.br.ReadByte()
	return err == io.EOF
}

// MustExchange sends raw on a new connection to addr and reads one
// response.
func MustExchange(tb testing.TB, addr, raw string) (*http.Response, string) {
	tb.Helper()
	c := MustDial(tb, addr)
	c.Send(raw)
	return c.MustRead()
}
