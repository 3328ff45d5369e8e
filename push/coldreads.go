package push

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/keyspace"
)

// maxColdReads is the most key records one pipeline of coldReads reads.
const maxColdReads = 256

// coldReads reads the key records of cold lookups in shared pipelines:
// one pipeline is in flight at a time, and the hashes queued meanwhile go
// in the next, one GET each and one EXISTS of the watermark for the lot.
// So a node meeting many keys it has not cached (a start, 10,000 keys in
// turn) pays about one round trip per pipeline rather than one per key.
type coldReads struct {
	rdb     redis.UniversalClient
	keys    keyspace.Space
	timeout time.Duration // of one pipeline

	mu      sync.Mutex
	queue   []*coldRead
	sending bool
}

// coldRead is one hash's read; done closes once its pipeline came back.
type coldRead struct {
	hash string
	get  *redis.StringCmd
	wm   *redis.IntCmd // EXISTS of the watermark, shared by the pipeline
	done chan struct{}
}

// read queues hash and waits for its pipeline: the GET of its record and
// the EXISTS of the watermark, each with its reply or error. It waits
// whatever the caller's context does; the pipeline has its own deadline.
func (c *coldReads) read(hash string) (*redis.StringCmd, *redis.IntCmd) {
	cr := &coldRead{hash: hash, done: make(chan struct{})}
	c.mu.Lock()
	c.queue = append(c.queue, cr)
	start := !c.sending
	c.sending = true
	c.mu.Unlock()
	if start {
		go c.flush()
	}
	<-cr.done
	return cr.get, cr.wm
}

// flush sends what is queued, at most maxColdReads per pipeline, until
// nothing is left.
func (c *coldReads) flush() {
	for {
		c.mu.Lock()
		n := min(len(c.queue), maxColdReads)
		if n == 0 {
			c.sending = false
			c.mu.Unlock()
			return
		}
		batch := c.queue[:n:n]
		c.queue = c.queue[n:]
		c.mu.Unlock()
		c.send(batch)
	}
}

// send reads the records of batch in one pipeline and wakes their callers.
func (c *coldReads) send(batch []*coldRead) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	pipe := c.rdb.Pipeline()
	for _, cr := range batch {
		cr.get = pipe.Get(ctx, c.keys.KeyRecord(cr.hash))
	}
	wm := pipe.Exists(ctx, c.keys.Version())
	_, _ = pipe.Exec(ctx) // errors are read per command
	for _, cr := range batch {
		cr.wm = wm
		close(cr.done)
	}
}
