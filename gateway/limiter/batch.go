package limiter

import (
	"context"
	"errors"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Decisions of concurrent requests are sent to Redis together: each Decide
// queues its script call, and up to maxFlushers goroutines take everything
// queued (at most maxBatch calls) and send it as one pipeline, one round
// trip for the lot. Under load a request waits for at most the pipeline in
// flight before its own; alone, it is sent at once. Each call is still one
// EVALSHA, atomic in Redis, and a pipeline runs its calls in order, so two
// decisions on one bucket never interleave: batching changes the number of
// round trips and system calls, not any decision.
const (
	maxFlushers = 4
	maxBatch    = 128
)

// call is one queued decision.
type call struct {
	ctx        context.Context
	keys       []string
	args       []any
	reply      []any
	err        error
	done       chan struct{}
	notRunning bool // the caller had gone before it was sent
}

// batcher is the queue of decisions waiting for a flusher.
type batcher struct {
	mu       sync.Mutex
	queue    []*call
	spare    []*call // the previous queue's array, reused
	flushers int
}

// do queues a decision and waits for its reply or for ctx to end.
func (l *Limiter) do(ctx context.Context, keys []string, args []any) ([]any, error) {
	c := &call{ctx: ctx, keys: keys, args: args, done: make(chan struct{})}
	b := &l.batch
	b.mu.Lock()
	b.queue = append(b.queue, c)
	start := b.flushers < maxFlushers
	if start {
		b.flushers++
	}
	b.mu.Unlock()
	if start {
		go l.flush()
	}
	select {
	case <-c.done:
		return c.reply, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// flush sends queued decisions until the queue is empty.
func (l *Limiter) flush() {
	b := &l.batch
	for {
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.flushers--
			b.mu.Unlock()
			return
		}
		batch := b.queue
		if len(batch) > maxBatch {
			batch = batch[:maxBatch:maxBatch]
			b.queue = b.queue[maxBatch:]
		} else {
			b.queue, b.spare = b.spare[:0], nil
		}
		b.mu.Unlock()
		l.send(batch)
		if cap(batch) <= maxBatch {
			clear(batch)
			b.mu.Lock()
			b.spare = batch[:0]
			b.mu.Unlock()
		}
	}
}

// send runs one batch: alone with EVALSHA, else as one pipeline. Calls
// whose caller has gone are not sent (nothing is charged for them). A
// NOSCRIPT reply loads the script and runs that call again alone.
func (l *Limiter) send(batch []*call) {
	if len(batch) == 1 { // the caller's context carries Decide's deadline
		c := batch[0]
		if c.ctx.Err() == nil {
			c.reply, c.err = l.evalSha(c.ctx, decideScript, c.keys, c.args)
		}
		close(c.done)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	pipe := l.rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(batch))
	for i, c := range batch {
		if c.ctx.Err() != nil {
			c.notRunning = true
			continue
		}
		cmds[i] = decideScript.EvalSha(ctx, pipe, c.keys, c.args...)
	}
	_, _ = pipe.Exec(ctx)
	for i, c := range batch {
		if c.notRunning {
			close(c.done)
			continue
		}
		c.reply, c.err = cmds[i].Slice()
		if c.err != nil && (errors.Is(c.err, redis.ErrNoScript) || redis.HasErrorPrefix(c.err, "NOSCRIPT")) {
			c.reply, c.err = l.evalSha(ctx, decideScript, c.keys, c.args)
		}
		close(c.done)
	}
}
