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
// and the cache fills, which share the reads' pipelines on the cache
// Redis.
//
// A pipeline's deadline is the shorter of the reads' timeout and
// fillTimeout when it carries both, so a fill beside reads gets theirs;
// and a read never waits behind a pipeline of fills alone (a slow Redis
// could hold it for fillTimeout): those do not count against maxFlushers
// for a read. A read so waits no longer than in a batch of reads alone.
// A fill starts a flusher only when none runs: fills wait for the next
// pipeline of a flusher at work, so they ride the reads' round trips.
type pipeBatch struct {
	rdb     redis.UniversalClient
	timeout time.Duration // of the reads

	mu       sync.Mutex
	queue    []*pipeCall
	flushers int
	fills    int // flushers sending a pipeline of fills alone
}

// pipeCall is one caller's commands, a read or a fill; done receives once
// their pipeline came back. Calls are reused (pipeCalls).
type pipeCall struct {
	queue func(ctx context.Context, p redis.Pipeliner)
	fill  bool
	done  chan struct{} // buffered: the flusher never waits on it
}

var pipeCalls = sync.Pool{New: func() any { return &pipeCall{done: make(chan struct{}, 1)} }}

// do queues the commands queue puts on a pipeline and waits until that
// pipeline came back: the commands then hold their replies, or errors.
// It waits whatever the caller's context does, since the commands are
// written by the pipeline, which has a deadline of its own (see
// pipeBatch). fill says whether the commands are a fill.
func (b *pipeBatch) do(fill bool, queue func(ctx context.Context, p redis.Pipeliner)) {
	c := pipeCalls.Get().(*pipeCall)
	c.queue, c.fill = queue, fill
	b.mu.Lock()
	b.queue = append(b.queue, c)
	start := b.flushers == 0 || (!fill && b.flushers-b.fills < maxFlushers)
	if start {
		b.flushers++
	}
	b.mu.Unlock()
	if start {
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
		reads, fills := false, false
		for _, c := range batch {
			reads, fills = reads || !c.fill, fills || c.fill
		}
		timeout := b.timeout
		switch {
		case !reads:
			timeout = fillTimeout
			b.fills++
		case fills:
			timeout = min(timeout, fillTimeout)
		}
		b.mu.Unlock()
		b.send(timeout, batch)
		if !reads {
			b.mu.Lock()
			b.fills--
			b.mu.Unlock()
		}
	}
}

// send runs one pipeline of the commands of batch under timeout and wakes
// their callers (also when a queue function panics: its caller's commands
// then hold no reply); it touches no call after its caller woke.
func (b *pipeBatch) send(timeout time.Duration, batch []*pipeCall) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	defer func() {
		for _, c := range batch {
			c.done <- struct{}{} // c is its caller's again
		}
	}()
	p := &batchPipe{Pipeliner: b.rdb.Pipeline()}
	for _, c := range batch {
		c.queue(ctx, p)
	}
	_, _ = p.Exec(ctx)
}

// batchPipe is the pipeline of a pipeBatch: its calls read each stage's
// cache generation once (genRead).
type batchPipe struct {
	redis.Pipeliner
	gens map[string]*redis.StringCmd
}

// genRead queues the read of generation key key (GETRANGE: "" when
// absent, where GET's nil would become a go-redis error, allocated), once
// per pipeline on a batchPipe: every call of the pipeline shares its
// command.
func genRead(ctx context.Context, p redis.Pipeliner, key string) *redis.StringCmd {
	bp, ok := p.(*batchPipe)
	if !ok {
		return p.GetRange(ctx, key, 0, -1)
	}
	if cmd := bp.gens[key]; cmd != nil {
		return cmd
	}
	if bp.gens == nil {
		bp.gens = map[string]*redis.StringCmd{}
	}
	cmd := p.GetRange(ctx, key, 0, -1)
	bp.gens[key] = cmd
	return cmd
}
