// Package faultnet puts a TCP proxy between a test and a server it talks
// to (Redis, PostgreSQL), to make that server fail the ways real ones do:
// a dead server (connections reset, new ones refused) or a stopped one
// (connections accepted, never answered).
package faultnet

import (
	"net"
	"sync"
	"testing"
)

// Proxy forwards connections from its own address to target until Cut:
// then it resets every open connection and refuses new ones (as a dead
// server would), until Restore. Stall makes it a server that accepts
// connections but never answers (a stopped process behind a proxy): new
// connections are held open unanswered and nothing more is relayed on
// open ones, until Restore.
type Proxy struct {
	ln      net.Listener
	target  string
	mu      sync.Mutex
	down    bool
	stalled chan struct{} // closed by restore; nil while relaying
	conns   map[net.Conn]struct{}
}

// MustProxy starts a proxy to target; it is closed at cleanup.
func MustProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	tb.Cleanup(func() { _ = ln.Close(); p.Restore(); p.Cut() })
	go p.serve()
	return p
}

func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

func (p *Proxy) forward(c net.Conn) {
	p.mu.Lock()
	if p.down {
		p.mu.Unlock()
		_ = c.Close()
		return
	}
	p.conns[c] = struct{}{}
	if wait := p.stalled; wait != nil { // hold the new connection unanswered
		p.mu.Unlock()
		<-wait
		p.mu.Lock()
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil || p.down {
		p.mu.Unlock()
		_ = c.Close()
		return
	}
	p.conns[up] = struct{}{}
	p.mu.Unlock()
	go func() { p.relay(up, c); _ = up.Close() }()
	p.relay(c, up)
	_ = c.Close()
}

// relay copies src to dst, holding each chunk while the proxy is stalled.
func (p *Proxy) relay(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		p.mu.Lock()
		wait := p.stalled
		p.mu.Unlock()
		if wait != nil {
			<-wait
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Cut closes every forwarded connection and refuses new ones.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// Stall stops relaying: open connections go silent, new ones are accepted
// and never answered.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled == nil {
		p.stalled = make(chan struct{})
	}
}

// Restore forwards new connections again and ends a stall.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
	if p.stalled != nil {
		close(p.stalled)
		p.stalled = nil
	}
}
