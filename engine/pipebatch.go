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
// Reads and fills queue apart. A pipeline carries the reads queued (at
// most maxBatch), first, and behind them the fills that fit in what is
// left, up to mixedFillBytes of entries: it has the reads' deadline, so a
// read waits no longer than in a pipeline of reads alone, and a large
// fill does not hold reads up. Fills go alone, under fillTimeout, when no
// read is queued, in at most one pipeline at a time, which does not count
// against maxFlushers for a read: a read never waits behind fills. A fill
// starts a flusher only when none runs: fills wait for the next pipeline
// of a flusher at work, so they ride the reads' round trips.
type pipeBatch struct {
	rdb     redis.UniversalClient
	timeout time.Duration // of the reads

	mu           sync.Mutex
	reads, fills []*pipeCall
	flushers     int
	fillsAlone   bool // a pipeline of fills alone is in flight
}

// mixedFillBytes is the most entry bytes of fills a pipeline of reads
// carries.
const mixedFillBytes = 64 << 10

// pipeCall is one caller's commands, a read or a fill of size bytes;
// done receives once their pipeline came back. Calls are reused
// (pipeCalls).
type pipeCall struct {
	queue func(ctx context.Context, p redis.Pipeliner)
	fill  bool
	size  int
	done  chan struct{} // buffered: the flusher never waits on it
}

var pipeCalls = sync.Pool{New: func() any { return &pipeCall{done: make(chan struct{}, 1)} }}

// do queues the commands queue puts on a pipeline and waits until that
// pipeline came back: the commands then hold their replies, or errors.
// It waits whatever the caller's context does, since the commands are
// written by the pipeline, which has a deadline of its own (see
// pipeBatch). fill says whether the commands are a fill, of size bytes.
func (b *pipeBatch) do(fill bool, size int, queue func(ctx context.Context, p redis.Pipeliner)) {
	c := pipeCalls.Get().(*pipeCall)
	c.queue, c.fill, c.size = queue, fill, size
	b.mu.Lock()
	var start bool
	if fill {
		b.fills = append(b.fills, c)
		start = b.flushers == 0
	} else {
		b.reads = append(b.reads, c)
		start = b.flushers-btoi(b.fillsAlone) < maxFlushers
	}
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

// queued returns the calls waiting for a pipeline.
func (b *pipeBatch) queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.reads) + len(b.fills)
}

// flush sends queued calls until none is left that it may send.
func (b *pipeBatch) flush() {
	for {
		linger(&b.mu, &b.reads)
		b.mu.Lock()
		batch, timeout, alone := b.take()
		if batch == nil {
			b.flushers--
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		b.send(timeout, batch)
		if alone {
			b.mu.Lock()
			b.fillsAlone = false
			b.mu.Unlock()
		}
	}
}

// take returns the next pipeline's calls and deadline (see pipeBatch),
// alone when they are fills alone; none when nothing queued may go now.
// Under b.mu.
func (b *pipeBatch) take() (batch []*pipeCall, timeout time.Duration, alone bool) {
	if n := min(len(b.reads), maxBatch); n > 0 {
		batch, b.reads = b.reads[:n:n], b.reads[n:]
		m, bytes := 0, 0
		for m < len(b.fills) && n+m < maxBatch && bytes+b.fills[m].size <= mixedFillBytes {
			bytes += b.fills[m].size
			m++
		}
		batch, b.fills = append(batch, b.fills[:m]...), b.fills[m:]
		return batch, b.timeout, false
	}
	if len(b.fills) == 0 || b.fillsAlone {
		return nil, 0, false
	}
	n := min(len(b.fills), maxBatch)
	batch, b.fills = b.fills[:n:n], b.fills[n:]
	b.fillsAlone = true
	return batch, fillTimeout, true
}

func btoi(v bool) int {
	if v {
		return 1
	}
	return 0
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
