package engine

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// pipeBatch sends commands of concurrent callers in shared pipelines: up
// to maxFlushers pipelines are in flight, and what is queued meanwhile
// goes in the next, at most maxBatch callers' commands each, so the
// round trips follow the load as the decisions' batches do; a flusher
// lingers before a small pipeline as theirs do (linger). The cache has
// one per Redis server: the reads of requests that a layer admitted
// without a round trip (a capacity lease), which would otherwise each
// cost a round trip where their decision's run would have carried them,
// and the cache fills (entries), in the same pipelines when the cache
// Redis is the limiter Redis.
type pipeBatch struct {
	rdb redis.UniversalClient

	mu       sync.Mutex
	queue    []*pipeCall
	flushers int
}

// pipeCall is one caller's commands and how long they may wait for their
// reply; done receives once their pipeline came back. Calls are reused
// (pipeCalls).
type pipeCall struct {
	queue   func(ctx context.Context, p redis.Pipeliner)
	timeout time.Duration
	done    chan struct{} // buffered: the flusher never waits on it
}

var pipeCalls = sync.Pool{New: func() any { return &pipeCall{done: make(chan struct{}, 1)} }}

// do queues the commands queue puts on a pipeline and waits until that
// pipeline came back: the commands then hold their replies, or errors.
// It waits whatever the caller's context does, since the commands are
// written by the pipeline, whose deadline is the longest timeout of the
// calls it carries.
func (b *pipeBatch) do(timeout time.Duration, queue func(ctx context.Context, p redis.Pipeliner)) {
	c := pipeCalls.Get().(*pipeCall)
	c.queue, c.timeout = queue, timeout
	if push(&b.mu, &b.queue, &b.flushers, c) {
		go b.flush()
	}
	<-c.done
	c.queue = nil
	pipeCalls.Put(c)
}

// flush sends queued calls, at most maxBatch per pipeline, until none is
// left.
func (b *pipeBatch) flush() {
	for {
		linger(&b.mu, &b.queue)
		b.mu.Lock()
		n := min(len(b.queue), maxBatch)
		if n == 0 {
			b.flushers--
			b.mu.Unlock()
			return
		}
		batch := b.queue[:n:n]
		b.queue = b.queue[n:]
		if len(b.queue) == 0 {
			b.queue = nil
		}
		b.mu.Unlock()
		b.send(batch)
	}
}

// send runs one pipeline of the commands of batch and wakes their callers
// (also when a queue function panics: its caller's commands then hold no
// reply); it touches no call after its caller woke.
func (b *pipeBatch) send(batch []*pipeCall) {
	var timeout time.Duration
	for _, c := range batch {
		timeout = max(timeout, c.timeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	defer func() {
		for _, c := range batch {
			c.done <- struct{}{} // c is its caller's again
		}
	}()
	p := b.rdb.Pipeline()
	for _, c := range batch {
		c.queue(ctx, p)
	}
	_, _ = p.Exec(ctx)
}
