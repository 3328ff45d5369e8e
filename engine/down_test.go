package engine

import (
	"errors"
	"testing"
	"time"

	"tollgate/internal/redistest"
	"tollgate/limit"
)

// A decision queued behind the node's own work (every flusher busy, no run
// of this node waiting on Redis) waits past Options.Timeout instead of
// failing: the queue is the gateway's, not Redis's.
func TestDecisionQueuedBehindOwnWorkWaits(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.MustClient(t)
	l := mustLoaded(t, New(rdb, Options{Prefix: prefix, Timeout: 20 * time.Millisecond}))
	l.batch.mu.Lock()
	l.batch.flushers = maxFlushers // every flusher place busy (CPU work of the node)
	l.batch.mu.Unlock()
	req := nodeRequest(l, "k1", 100, 100, 10)
	type result struct {
		d   limit.Decision
		err error
	}
	done := make(chan result, 1)
	go func() {
		d, err := l.decideKeyed(t.Context(), req, nil)
		done <- result{d, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("queued decision ended while no run was in flight: %+v, %v; want it to wait", r.d, r.err)
	case <-time.After(10 * l.health.timeout): // the wait is what is tested: no condition ends it
	}
	l.batch.mu.Lock()
	l.batch.flushers-- // a busy flusher comes back and drains the queue
	l.batch.mu.Unlock()
	l.batch.flush()
	r := <-done
	if r.err != nil || !r.d.Allowed || r.d.Quota.Remaining != 9 {
		t.Fatalf("queued decision: got %+v, %v, want admitted with 9 left", r.d, r.err)
	}
}

// A Redis that accepts connections but never answers fails the decision
// whose run was sent (after the run's deadline) as undecided, naming its
// run (it may have run); then, for Options.Timeout, decisions fail at once
// with ErrRedisDown, naming no run (none was sent); the decision after
// that tries Redis again.
func TestDecisionsFailAtOnceWhileRedisDoesNotAnswer(t *testing.T) {
	t.Parallel()
	l := New(silentRedis(t), Options{Prefix: "t", Timeout: time.Millisecond})
	req := nodeRequest(l, "k1", 1, 1, 1)
	_, err := l.decideKeyed(t.Context(), req, nil)
	var ue *limit.UndecidedError
	if !errors.As(err, &ue) || errors.Is(err, ErrRedisDown) || ue.Run == 0 {
		t.Fatalf("first decision: got %v, want its run's failure, naming the run", err)
	}
	l.health.timeout = time.Hour // the decisions below come within Options.Timeout
	for i := range 3 {
		_, err := l.decideKeyed(t.Context(), req, nil)
		if !errors.Is(err, ErrRedisDown) || !errors.As(err, &ue) || ue.Run != 0 {
			t.Fatalf("decision %d after the failure: got %v, want ErrRedisDown naming no run", i+2, err)
		}
	}
	l.health.timeout = 0 // Options.Timeout has passed: the next decision tries Redis
	if _, err := l.decideKeyed(t.Context(), req, nil); err == nil || errors.Is(err, ErrRedisDown) {
		t.Fatalf("decision after Options.Timeout: got %v, want its run's failure", err)
	}
}
