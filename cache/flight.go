package cache

import (
	"context"
	"sync"
)

// Flight coalesces concurrent misses of one entry on one node
// (docs/behaviour.md, "Response cache"): the first request for a key leads
// and calls the upstream, the others wait for its response. The zero value is ready to use.
type Flight struct {
	mu    sync.Mutex
	calls map[string]*Call
}

// Call is one upstream call in flight for an entry key.
type Call struct {
	done    chan struct{}
	res     *Shared
	waiters int // requests that joined the leader's call (under Flight.mu)
}

// Shared is the leader's response as waiters may reuse it.
type Shared struct {
	// Entry is the response (Stored and TTL unset); nil when the leader
	// has nothing to share (private, over MaxBody, or the client left).
	Entry *Entry
	// Variant names the request variant the response is for (the Vary
	// names and the leader's values): a waiter whose own variant differs
	// makes its own call.
	Variant string
	// Failure says why the leader's call failed (the upstream answered
	// 5xx, timed out or could not be reached, in the gateway's words),
	// "" when it did not: a waiter holding an entry it may serve stale
	// on error serves that instead.
	Failure string
}

// Join returns the call in flight for key and false, or a new call that
// the caller leads and must end with Done.
func (f *Flight) Join(key string) (c *Call, leader bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.calls[key]; c != nil {
		c.waiters++
		return c, false
	}
	if f.calls == nil {
		f.calls = map[string]*Call{}
	}
	c = &Call{done: make(chan struct{})}
	f.calls[key] = c
	return c, true
}

// Done ends the leader's call for key, handing what share returns (nil:
// nothing to share) to its waiters; share runs only when a request joined
// the call, and may be nil. Later requests for key start a new call.
func (f *Flight) Done(key string, c *Call, share func() *Shared) {
	f.mu.Lock()
	if f.calls[key] == c {
		delete(f.calls, key)
	}
	waited := c.waiters > 0
	f.mu.Unlock()
	if waited && share != nil {
		c.res = share()
	}
	close(c.done)
}

// Wait waits for the leader and returns what it shared: nil when it
// shared nothing or ctx ended first.
func (c *Call) Wait(ctx context.Context) *Shared {
	select {
	case <-c.done:
		return c.res
	case <-ctx.Done():
		return nil
	}
}
