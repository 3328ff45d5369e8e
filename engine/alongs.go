package engine

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// alongBatch sends the cache reads of requests that a layer admitted
// without a round trip (a capacity lease): concurrent reads share one
// pipeline to the limiter Redis, as they would have shared their
// decisions' run, so a lease saves the script run without costing each
// request a round trip of its own. Up to maxFlushers pipelines are in
// flight; reads queued meanwhile go in the next.
type alongBatch struct {
	rdb     redis.UniversalClient
	timeout time.Duration

	mu       sync.Mutex
	queue    []*alongCall
	flushers int
}

// alongCall is one queued read; done closes once it was sent and its
// replies are in.
type alongCall struct {
	al   *lookupAlong
	done chan struct{}
}

// do queues al's read and waits until its pipeline came back (the read's
// commands then hold their replies, or errors). It waits whatever ctx
// does: al's commands are written by the pipeline, which has a deadline
// of its own.
func (b *alongBatch) do(al *lookupAlong) {
	c := &alongCall{al: al, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	start := b.flushers < maxFlushers
	if start {
		b.flushers++
	}
	b.mu.Unlock()
	if start {
		go b.flush()
	}
	<-c.done
}

// flush sends queued reads, at most maxBatch per pipeline, until none is
// left.
func (b *alongBatch) flush() {
	for {
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

// send runs one pipeline of the reads of batch and wakes their callers.
func (b *alongBatch) send(batch []*alongCall) {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	defer func() {
		for _, c := range batch {
			close(c.done)
		}
	}()
	p := b.rdb.Pipeline()
	for _, c := range batch {
		c.al.queue(ctx, p)
	}
	_, _ = p.Exec(ctx)
}
