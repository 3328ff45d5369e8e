package engine

import (
	"fmt"
	"runtime"
	"sync"
	"time"

	"tollgate/limit"
)

// Decisions of concurrent requests are decided together: each Decide
// queues its request, and up to maxFlushers flushers each take what is
// queued (at most maxBatch) and decide it in one run of op "decide" (one
// per slot on Redis Cluster), one round trip for the lot. The script
// decides a batch in queue order, each decision as if it ran alone, so
// batching changes the Redis work and the round trips, never a decision.
//
// A caller waits while queued behind the node's own work, and for its
// run's reply until runTimeout (docs/behaviour.md, "When Redis cannot
// decide"): a late reply on a live connection is exact, whereas failing
// the decision would admit it without limits.
//
// maxFlushers is 2: Redis is what every node shares, and fewer runs in
// flight make larger batches, so less Redis CPU per decision; two still
// cover a remote Redis's round trip.
//
// Before it takes a batch of fewer than lingerBatch decisions, a flusher
// lingers (linger): it yields the processor while that lets other
// decisions join, at most lingerYields times, so that the callers the
// node is running (those its last run just answered, say) queue theirs
// into the same run. A yield costs no time when nothing else is runnable,
// so an idle node sends at once; a busy one sends fewer, larger runs
// (docs/leases.md, "Many keys").
const (
	maxFlushers  = 2
	maxBatch     = 128
	lingerBatch  = 16
	lingerYields = 4
)

// batcher is the queue of decisions waiting for a flusher, and the
// flushers that send them to its decider.
type batcher struct {
	health  *health
	decider decider
	// redisNow estimates Redis time at a node time (runner.redisNow): the
	// time of a failure that fail-open charges count in
	redisNow func(time.Time) time.Time

	mu       sync.Mutex
	queue    []*call
	spare    []*call // the previous queue's array, reused
	flushers int
}

// decider decides the live calls of one batch (single.go on one primary,
// cluster.go on Redis Cluster), answering each, with runs that wait for
// their replies up to deadline.
type decider interface {
	decide(deadline time.Duration, a *runArgs, live []*call)
}

// enqueue queues c and, when fewer than maxFlushers run, starts a flusher
// goroutine (the caller never sends itself, so that it can give up while
// Redis does not answer).
func (b *batcher) enqueue(c *call) {
	if push(&b.mu, &b.queue, &b.flushers, c) {
		go b.flush()
	}
}

// push appends c to the queue under mu and reports whether the caller
// starts a flusher: when fewer than maxFlushers run (counted in
// flushers, which the flusher decrements when it finds the queue empty).
func push[T any](mu *sync.Mutex, queue *[]T, flushers *int, c T) bool {
	mu.Lock()
	defer mu.Unlock()
	*queue = append(*queue, c)
	if *flushers >= maxFlushers {
		return false
	}
	*flushers++
	return true
}

// flush sends queued batches until the queue is empty.
func (b *batcher) flush() {
	a, _ := argsPool.Get().(*runArgs)
	if a == nil {
		a = newRunArgs()
	}
	defer argsPool.Put(a)
	for {
		linger(&b.mu, &b.queue)
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
		b.send(a, batch)
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

// linger yields the processor while fewer than lingerBatch entries are
// in queue (none: nothing to wait for), at most lingerYields times, and
// stops at the first yield that added none; mu guards queue.
func linger[T any](mu *sync.Mutex, queue *[]T) {
	queued := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(*queue)
	}
	q := queued()
	for range lingerYields {
		if q == 0 || q >= lingerBatch {
			return
		}
		runtime.Gosched()
		n := queued()
		if n == q {
			return
		}
		q = n
	}
}

// send decides one batch with b's decider, with the along commands of
// its calls in the same round trip, under runTimeout. Calls whose caller has gone are not sent, nor, while
// Redis is down, any call (ErrRedisDown). A panic (in an along function,
// say) fails the batch's calls that were not answered yet instead of
// leaving their callers waiting. At the end the run's outcome is recorded
// (runEnded: so a caller that decides again sees whether Redis is down),
// then the callers are woken.
func (b *batcher) send(a *runArgs, batch []*call) {
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
			b.health.inFlight.Add(-1)
		case ran:
			b.health.runEnded(anyReplied(live))
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
	h := b.health
	now := time.Now()
	if err := h.down(now); err != nil { // queued before Redis was found down
		err = &limit.UndecidedError{At: b.redisNow(now), Err: err}
		for _, c := range live {
			c.answer(err)
		}
		return
	}
	deadline := ReplyDeadline(h.timeout)
	if h.downAt.Load() != 0 { // a run that tries Redis again: see down
		deadline = h.timeout
	}
	h.runStarted()
	ran = true
	b.decider.decide(deadline, a, live)
}
