package push

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/plans"
)

// ErrNotPublished is the cause (errors.Is) of the KindUnavailable error
// Lookup returns for a key Redis does not have while the watermark is
// absent: Redis lost its data and the admin has not republished yet, so an
// unknown key may well exist (503, never 403).
var ErrNotPublished = errors.New("push: no config published in redis (watermark absent)")

// Lookup returns the record of the API key whose hash (plans.HashKey) is
// hash, or (nil, nil) when no such key exists (unknown or deleted). The
// record is shared: callers must not modify it.
//
// Order: the local cache; the memory of unknown hashes (NegativeTTL); then
// a Redis read (GET of the record and the watermark's existence),
// coalesced per hash across goroutines and sent in one pipeline with the
// reads of the other hashes looked up meanwhile (coldReads). A lookup
// queued while a pipeline is out waits for it, then for its own: on a
// Redis slower than half of LookupTimeout per round trip it can time out
// where a read of its own might not. A found record is cached until a
// stream event names its hash or a full reload; a missing one is
// remembered for NegativeTTL. Errors are *plans.Error of KindUnavailable: Redis failed,
// the stored record is unreadable, or the record is missing while the
// watermark is absent (cause ErrNotPublished).
func (r *Reader) Lookup(ctx context.Context, hash string) (*plans.KeyRecord, error) {
	if rec, ok := r.pos.get(hash); ok {
		return rec, nil
	}
	if exp, ok := r.neg.get(hash); ok {
		if r.now().Before(exp) {
			return nil, nil
		}
		r.neg.del(hash)
	}
	// The shared read must not die with the first caller's request (a client
	// hanging up would fail every waiter): its pipeline runs detached,
	// bounded by LookupTimeout, and each caller gives up on its own context.
	ch := r.sf.DoChan(hash, func() (any, error) { return r.fetch(hash) })
	// The caller waits at most LookupTimeout too: a Redis client may overrun
	// its context (go-redis dial retries on a dead server took 1-3 s against
	// a 500 ms deadline), and an outage must answer 503 promptly.
	timer := time.NewTimer(r.opts.LookupTimeout)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return nil, plans.Unavailable(ctx.Err(), "API key lookup timed out")
	case <-timer.C:
		return nil, plans.Unavailable(context.DeadlineExceeded, "API key lookup timed out")
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		rec, _ := res.Val.(*plans.KeyRecord)
		return rec, nil
	}
}

// Cached returns the record of the key whose hash is hash when this node
// holds it in its local cache, without any Redis round trip; false when it
// does not (unknown, never looked up, or dropped by a change). The record
// is shared: callers must not modify it.
func (r *Reader) Cached(hash string) (*plans.KeyRecord, bool) {
	return r.pos.get(hash)
}

// fetch reads one key record from Redis (coldReads) and caches the
// answer.
func (r *Reader) fetch(hash string) (*plans.KeyRecord, error) {
	e0 := r.epoch.Load()
	get, wm := r.cold.read(hash)
	if err := wm.Err(); err != nil {
		return nil, plans.Unavailable(err, "API key store unavailable")
	}
	b, err := get.Bytes()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, plans.Unavailable(err, "API key store unavailable")
	}
	r.markOK()
	if err == nil {
		rec, derr := decodeRecord(b)
		if derr != nil {
			return nil, plans.Unavailable(derr, "API key record unreadable")
		}
		if rec != nil {
			r.pos.putIf(hash, rec, e0)
			return rec, nil
		}
	} else if wm.Val() == 0 {
		return nil, plans.Unavailable(ErrNotPublished, "API key store not yet published")
	}
	r.neg.putIf(hash, r.now().Add(r.opts.NegativeTTL), e0)
	return nil, nil
}
