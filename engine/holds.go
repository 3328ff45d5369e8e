package engine

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"tollgate/limit"
	"tollgate/script"
)

// DefaultConcurrencyLease is the lease of a CONCURRENCY rule's request in
// flight when Options.ConcurrencyLease is 0: the node renews it every
// third of it while the request runs, so the request of a node that died
// (or lost Redis) leaves the count at most this long after its last
// renewal (docs/rules.md).
const DefaultConcurrencyLease = 30 * time.Second

// holds tracks this node's requests in flight, renews their leases and
// releases them.
type holds struct {
	r       *runner
	node    uint32
	seq     atomic.Uint32
	lease   time.Duration
	leaseUS int64

	mu      sync.Mutex
	held    map[hold]struct{}
	running bool
	stop    chan struct{}
	done    chan struct{}
}

func newHolds(r *runner, lease time.Duration) *holds {
	if lease <= 0 {
		lease = DefaultConcurrencyLease
	}
	return &holds{r: r, node: r.node, lease: lease, leaseUS: lease.Microseconds(),
		held: map[hold]struct{}{}, stop: make(chan struct{})}
}

// next returns a new member of key for a request of this node.
func (h *holds) next(key string) hold {
	return hold{key: key, node: h.node, seq: h.seq.Add(1)}
}

// add registers held (admitted requests' members) for renewal and returns
// the function that releases them (once; later calls do nothing).
func (h *holds) add(held []hold) func() {
	h.mu.Lock()
	for _, x := range held {
		h.held[x] = struct{}{}
	}
	if !h.running {
		h.running = true
		h.done = make(chan struct{})
		go h.renewLoop(h.done)
	}
	h.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { h.release(held) }) }
}

// release ends held: they leave the renewal and their members are removed
// from their sets, in one run per slot, before it returns (so a client's
// next request finds the slot free). A failure is logged; the members
// then leave when their leases end.
func (h *holds) release(held []hold) {
	h.mu.Lock()
	for _, x := range held {
		delete(h.held, x)
	}
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), refundTimeout)
	defer cancel()
	entries := make([]keyEntry, len(held))
	for i, x := range held {
		u := script.UndoSpec{Algorithm: uint8(limit.Concurrency), Node: x.node, Seq: x.seq}
		entries[i] = keyEntry{key: x.key, pack: func(s []byte, ki uint16) []byte {
			u.Key = ki
			return u.Append(s)
		}}
	}
	if err := h.r.runKeyed(ctx, script.OpUnrules, nil, entries); err != nil {
		slog.Default().LogAttrs(ctx, slog.LevelWarn, "engine: releasing requests in flight failed; they leave their rules' counts when their leases end",
			slog.Int("requests", len(held)), slog.Duration("lease", h.lease), slog.String("error", err.Error()))
	}
}

// packRenew packs x as an op "renew" entry.
func (x hold) packRenew(s []byte, ki uint16) []byte {
	r := script.RenewSpec{Key: ki, Node: x.node, Seq: x.seq}
	return r.Append(s)
}

// renewLoop renews the leases of the requests held every third of the
// lease until close, and stops when none is held.
func (h *holds) renewLoop(done chan struct{}) {
	defer close(done)
	t := time.NewTicker(h.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		h.mu.Lock()
		entries := h.entries()
		if len(entries) == 0 {
			h.running = false
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()
		h.renew(entries)
	}
}

// entries returns the renewals of every request held (h.mu held).
func (h *holds) entries() []keyEntry {
	out := make([]keyEntry, 0, len(h.held))
	for x := range h.held {
		out = append(out, keyEntry{key: x.key, pack: x.packRenew})
	}
	return out
}

// renew sends one op "renew" per slot for entries; a failure is logged
// (the members leave when their leases end unless a later renewal lands).
func (h *holds) renew(entries []keyEntry) {
	ctx, cancel := context.WithTimeout(context.Background(), h.lease/3)
	defer cancel()
	head := (&script.RenewArgs{LeaseUS: h.leaseUS}).Append(nil)
	if err := h.r.runKeyed(ctx, script.OpRenew, head, entries); err != nil {
		slog.Default().LogAttrs(ctx, slog.LevelWarn, "engine: renewing the leases of requests in flight failed",
			slog.Int("requests", len(entries)), slog.String("error", err.Error()))
	}
}

// close stops the renewals (Engine.Close).
func (h *holds) close() {
	h.mu.Lock()
	select {
	case <-h.stop:
	default:
		close(h.stop)
	}
	done := h.done
	h.mu.Unlock()
	if done != nil {
		<-done
	}
}
