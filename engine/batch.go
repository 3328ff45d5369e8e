package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/script"
)

// Decisions of concurrent requests are decided together: each Decide
// queues its request, and up to maxFlushers flusher goroutines take
// everything queued (at most maxBatch requests) and decide it with one run
// of op "decide" (one per slot on Redis Cluster), one round trip for the
// lot. Under load a request waits for at most the runs in flight before
// its own; alone, a flusher is started for it at once. The script decides
// the batch in queue order, each decision exactly as if it ran alone after
// the ones before it, and a run is atomic in Redis, so batching changes
// the Redis work and the number of round trips, not any decision.
//
// How long a caller waits (docs/behaviour.md, "When Redis cannot
// decide"): a call queued behind the node's own work waits on, however
// long that takes, since the queue is the gateway's, not Redis's; and a
// sent run is waited for until its reply, a connection error, or
// runTimeout. A reply that comes late on a live connection is not a
// failure: under load the node's own CPU delays reading it, and the reply
// is exact, whereas failing the decision would admit it without limits.
// A run fails only when Redis does not answer: connection refused or
// broken, an error reply, or runTimeout passed. Then Redis counts as down
// (down.go).
//
// maxFlushers is 2: Redis is the resource every gateway node shares, and
// fewer runs in flight make larger batches, so less Redis CPU per
// decision; two runs of up to maxBatch decisions in flight still cover a
// remote Redis's round trip (docs/scale.md has the measurements).
const (
	maxFlushers = 2
	maxBatch    = 128
)

// runTimeout is the deadline of one run once sent (Options.Timeout when
// that is longer). A run past it fails (the connection is dropped, so the
// run may or may not have happened: its decisions are undecided, with the
// run's number for the fail-open charges).
const runTimeout = time.Second

// States of a call (call.state): queued, then sent by a flusher, then
// answered by it; or abandoned by its caller, who left, while queued or
// sent (never along calls once sent: their caller reads the along
// commands' replies).
const (
	callQueued int32 = iota
	callSent
	callAnswered
	callAbandoned
)

// call is one queued decision.
type call struct {
	ctx   context.Context // the caller's context
	req   *keyedRequest
	clock string // the clock argument; a batch holds calls of one value
	along *lookupAlong
	res   script.DecisionReply
	rules []script.RuleReply
	err   error
	done  chan struct{}
	state atomic.Int32
	// answered is set by answer, on the flusher's goroutine only.
	answered bool
	// run is the number of the run that decided the call (its run window,
	// decide.lua), 0 for a run without one.
	run int64
	// own holds the request when Decide resolved it (no allocation of its
	// own).
	own        keyedRequest
	ownBuckets [4]keyedBucket
	ownQuota   keyedQuota
}

// batcher is the queue of decisions waiting for a flusher.
type batcher struct {
	mu       sync.Mutex
	queue    []*call
	spare    []*call // the previous queue's array, reused
	flushers int
}

// enqueue queues c and, when fewer than maxFlushers run, starts a flusher
// goroutine (the caller never sends itself, so that it can give up while
// Redis does not answer).
func (e *Engine) enqueue(c *call) {
	b := &e.batch
	b.mu.Lock()
	b.queue = append(b.queue, c)
	start := b.flushers < maxFlushers
	if start {
		b.flushers++
	}
	b.mu.Unlock()
	if start {
		go e.flush()
	}
}

// flush sends queued batches until the queue is empty.
func (e *Engine) flush() {
	b := &e.batch
	a := argsPool.Get().(*runArgs)
	defer argsPool.Put(a)
	for {
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.flushers--
			b.mu.Unlock()
			return
		}
		n := min(len(b.queue), maxBatch)
		for i := 1; i < n; i++ { // one clock value per run (test clock only)
			if b.queue[i].clock != b.queue[0].clock {
				n = i
				break
			}
		}
		batch := b.queue[:n:n]
		if n < len(b.queue) {
			b.queue = b.queue[n:]
		} else {
			b.queue, b.spare = b.spare[:0], nil
		}
		b.mu.Unlock()
		e.send(a, batch)
		if n > 1 {
			clear(batch)
			b.mu.Lock()
			if b.spare == nil {
				b.spare = batch[:0]
			}
			b.mu.Unlock()
		}
	}
}

// send decides one batch (single.go on one primary, cluster.go on Redis
// Cluster), with the along commands of its calls in the same round trip,
// under runTimeout. Calls whose caller has gone are not sent, nor, while
// Redis is down, any call (ErrRedisDown). A panic (in an along function,
// say) fails the batch's calls that were not answered yet instead of
// leaving their callers waiting. At the end the run's outcome is recorded
// (runEnded: so a caller that decides again sees whether Redis is down),
// then the callers are woken.
func (e *Engine) send(a *runArgs, batch []*call) {
	a.reset()
	live := a.live[:0]
	ran := false
	defer func() {
		r := recover()
		if r != nil {
			for _, c := range live {
				if !c.answered {
					c.answer(fmt.Errorf("batch panicked: %v", r))
				}
			}
		}
		switch {
		case ran && r != nil: // says nothing of Redis
			e.inFlight.Add(-1)
		case ran:
			e.runEnded(live)
		}
		for _, c := range batch {
			if c.answered {
				close(c.done)
			}
		}
		clear(live)
	}()
	for _, c := range batch {
		if !c.state.CompareAndSwap(callQueued, callSent) {
			continue // the caller left while it was queued
		}
		if err := c.ctx.Err(); err != nil {
			c.answer(err)
			continue
		}
		if err := checkRequest(c.req); err != nil {
			c.answer(err)
			continue
		}
		live = append(live, c)
	}
	a.live = live
	if len(live) == 0 {
		return
	}
	if err := e.down(time.Now()); err != nil { // queued before Redis was found down
		for _, c := range live {
			c.answer(err)
		}
		return
	}
	deadline := max(runTimeout, e.timeout)
	if e.downAt.Load() != 0 { // a run that tries Redis again: see down
		deadline = e.timeout
	}
	e.runStarted()
	ran = true
	if e.cluster != nil {
		e.cluster.decide(deadline, live)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	e.decideSingle(ctx, a, live)
}

// checkRequest refuses a request that cannot be packed: too many buckets
// or rules, an unknown algorithm, or a LEAKY_BUCKET rule without a rate
// above 0 (the admin API allows none of these).
func checkRequest(req *keyedRequest) error {
	if len(req.Buckets) > maxBuckets {
		return fmt.Errorf("%d buckets, at most %d", len(req.Buckets), maxBuckets)
	}
	return checkRules(req)
}

// answer ends c with err, or with the reply already in c.res and c.rules
// when err is nil; send wakes its caller at the end of the batch. Only the
// flusher that sent c calls it, once.
func (c *call) answer(err error) {
	c.err = err
	c.answered = true
	c.state.CompareAndSwap(callSent, callAnswered)
}

// abandon gives up on c for its caller, who left: while c is queued, or
// once sent unless it has along commands (their replies are read by the
// caller, so it waits for the run). It reports whether c was abandoned;
// if not, c is or will be answered.
func (c *call) abandon() bool {
	if c.state.CompareAndSwap(callQueued, callAbandoned) {
		return true
	}
	return c.along == nil && c.state.CompareAndSwap(callSent, callAbandoned)
}

// queueAlong queues the along commands of the calls of live on pipe.
func queueAlong(ctx context.Context, pipe redis.Pipeliner, live []*call) {
	for _, c := range live {
		if c.along != nil {
			c.along.queue(ctx, pipe)
		}
	}
}
