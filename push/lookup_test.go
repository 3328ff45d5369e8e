package push

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/clocktest"
	"tollgate/internal/redistest"
	"tollgate/internal/waittest"
	"tollgate/keyspace"
	"tollgate/plans"
)

// getCounter is a go-redis hook counting GET commands on names containing
// a substring, on the real client.
type getCounter struct {
	substr string
	n      atomic.Int64
	hold   chan struct{} // when set, the first counted GET waits until it is closed
}

func (g *getCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *getCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return next
}

func (g *getCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if args := c.Args(); len(args) == 2 && strings.EqualFold(c.Name(), "get") && strings.Contains(args[1].(string), g.substr) {
				if g.n.Add(1) == 1 && g.hold != nil {
					<-g.hold
				}
			}
		}
		return next(ctx, cmds)
	}
}

// Concurrent lookups of one cold hash share one Redis read. The first read
// is held until every lookup has started, so they find it in flight. A
// lookup preempted between its cache check and joining the read may still
// start one more after the first ended (a loaded machine did), so the
// check is that the reads are coalesced, not that there is exactly one.
func TestLookupCoalescesConcurrentMisses(t *testing.T) {
	t.Parallel()
	rdb, prefix, src, p := publisherWorld(t)
	h := testHash(5)
	src.putKey(h, true, "plan01")
	mustPublish(t, p)
	counter := &getCounter{substr: h, hold: make(chan struct{})}
	rdb.AddHook(counter)
	r := NewReader(rdb, ReaderOptions{Prefix: prefix, LookupTimeout: time.Minute})

	const lookups = 50
	var started atomic.Int64
	var wg sync.WaitGroup
	for range lookups {
		wg.Go(func() {
			started.Add(1)
			if rec, err := r.Lookup(context.Background(), h); err != nil || rec == nil {
				t.Errorf("Lookup: got (%+v, %v), want the record", rec, err)
			}
		})
	}
	waittest.Until(t, "every lookup started", 10*time.Second, func() bool { return started.Load() == lookups })
	close(counter.hold)
	wg.Wait()
	if got := counter.n.Load(); got < 1 || got > 3 {
		t.Errorf("GETs of the record for %d concurrent lookups: got %d, want 1 (at most 3 on a loaded machine)", lookups, got)
	}
}

// pipelineCounter is a go-redis hook counting the pipelines that read a
// key record (a GET of a name containing ":key:").
type pipelineCounter struct {
	n    atomic.Int64
	hold chan struct{} // the first counted pipeline waits until it is closed
}

func (p *pipelineCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (p *pipelineCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (p *pipelineCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if args := c.Args(); len(args) == 2 && strings.EqualFold(c.Name(), "get") && strings.Contains(args[1].(string), ":key:") {
				if p.n.Add(1) == 1 {
					<-p.hold
				}
				break
			}
		}
		return next(ctx, cmds)
	}
}

// mustCountedReader returns a Reader of the test Redis holding the records
// of n keys (testHash(0) to testHash(n-1)), published, and the counter of
// its pipelines that read key records (never held).
func mustCountedReader(tb testing.TB, n int) (*Reader, *pipelineCounter) {
	tb.Helper()
	rdb, prefix := redistest.MustClient(tb)
	keys := keyspace.Space{Prefix: prefix}
	pipe := rdb.Pipeline()
	for i := range n {
		pipe.Set(tb.Context(), keys.KeyRecord(testHash(i)), fmt.Sprintf(`{"version":1,"keyId":"k%08d","enabled":true,"planIds":["plan01"]}`, i), 0)
	}
	pipe.Set(tb.Context(), keys.Version(), 1, 0)
	if _, err := pipe.Exec(tb.Context()); err != nil {
		tb.Fatal(err)
	}
	counter := &pipelineCounter{hold: make(chan struct{})}
	close(counter.hold)
	rdb.AddHook(counter)
	return NewReader(rdb, ReaderOptions{Prefix: prefix}), counter
}

// Cold lookups of many different keys at once share pipelines: the reads
// queued while one pipeline is out go in the next, so 50 keys the node
// has not cached cost a few round trips, not 50. The first pipeline is
// held until every lookup has started; a lookup preempted before it
// queued may still go in a third.
func TestLookupsOfManyColdKeysSharePipelines(t *testing.T) {
	t.Parallel()
	rdb, prefix, src, p := publisherWorld(t)
	const lookups = 50
	for i := range lookups {
		src.putKey(testHash(100+i), true, "plan01")
	}
	mustPublish(t, p)
	counter := &pipelineCounter{hold: make(chan struct{})}
	rdb.AddHook(counter)
	r := NewReader(rdb, ReaderOptions{Prefix: prefix, LookupTimeout: time.Minute})

	var started atomic.Int64
	var wg sync.WaitGroup
	for i := range lookups {
		wg.Go(func() {
			started.Add(1)
			if rec, err := r.Lookup(context.Background(), testHash(100+i)); err != nil || rec == nil {
				t.Errorf("Lookup of key %d: got (%+v, %v), want its record", i, rec, err)
			}
		})
	}
	waittest.Until(t, "every lookup started", 10*time.Second, func() bool { return started.Load() == lookups })
	close(counter.hold)
	wg.Wait()
	if got := counter.n.Load(); got > 3 {
		t.Errorf("pipelines reading key records for %d concurrent cold lookups: got %d, want 2 (at most 3 on a loaded machine)", lookups, got)
	}
	for i := range lookups {
		if _, ok := r.Cached(testHash(100 + i)); !ok {
			t.Errorf("key %d: not cached after its lookup", i)
		}
	}
}

// A node's key record cache keeps the keys it looked up: after one pass
// over 10,000 keys (make bench's 10,000 keys in turn) a second pass reads
// no record from Redis.
func TestLookupKeepsTenThousandKeysCached(t *testing.T) {
	t.Parallel()
	const n = 10_000
	r, counter := mustCountedReader(t, n)
	for pass := range 2 {
		before := counter.n.Load()
		for i := range n {
			if rec, err := r.Lookup(t.Context(), testHash(i)); err != nil || rec == nil {
				t.Fatalf("pass %d, key %d: got (%+v, %v), want its record", pass, i, rec, err)
			}
		}
		if read := counter.n.Load() - before; pass == 1 && read != 0 {
			t.Errorf("second pass over %d keys: got %d record reads from Redis, want 0", n, read)
		}
	}
}

func TestLookupHonoursContext(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.MustClient(t)
	r := NewReader(rdb, ReaderOptions{Prefix: prefix})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if rec, err := r.Lookup(ctx, testHash(1)); err == nil || rec != nil {
		t.Errorf("Lookup with a cancelled context: got (%+v, %v), want an error", rec, err)
	}
}

func TestReadyReportsSilentRedis(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.MustClient(t)
	startPublisher(t, newFakeSource(), rdb, prefix)
	r := NewReader(rdb, ReaderOptions{Prefix: prefix, Block: 100 * time.Millisecond})
	clock := clocktest.New(time.Now())
	r.now = clock.Now
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := r.Ready(); err != nil {
		t.Fatalf("Ready after Start: got %v, want nil", err)
	}
	// Nothing reads the stream now (no Run): after 3s Redis counts as silent.
	clock.Add(3 * time.Second)
	if err := r.Ready(); err != nil {
		t.Fatalf("Ready 3s after Redis answered: got %v, want nil", err)
	}
	clock.Add(time.Millisecond)
	if err := r.Ready(); err == nil || !strings.Contains(err.Error(), "not answered") {
		t.Errorf("Ready after 3.1s without an answer: got %v, want a silent-Redis error", err)
	}
}

func TestRunReconcilerRepairsFlushedRedis(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.MustClient(t)
	src := newFakeSource()
	src.putKey(testHash(1), true, "plan01")
	p := NewPublisher(src, rdb, Options{Prefix: prefix})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.RunReconciler(ctx, 20*time.Millisecond); close(done) }()
	defer func() { cancel(); <-done }()

	waittest.Until(t, "first reconcile", 2*time.Second, func() bool { return readState(t, rdb, prefix).watermark == 1 })
	redistest.DeletePrefix(context.Background(), rdb, prefix)
	waittest.Until(t, "republished after the flush", 2*time.Second, func() bool {
		rec, _ := readRecord(t, rdb, prefix, testHash(1))
		return rec != nil && readState(t, rdb, prefix).watermark == 1
	})
	src.putKey(testHash(2), true, "plan01") // committed, never Published by the admin
	waittest.Until(t, "missed change published", 2*time.Second, func() bool {
		rec, _ := readRecord(t, rdb, prefix, testHash(2))
		return rec != nil && readState(t, rdb, prefix).watermark == 2
	})
}

// slowPipelines delays every pipeline by d, so concurrent lookups
// overlap, and counts the pipelines it holds in started.
type slowPipelines struct {
	d       time.Duration
	started *atomic.Int64
}

func (s slowPipelines) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (s slowPipelines) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (s slowPipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		s.started.Add(1)
		time.Sleep(s.d)
		return next(ctx, cmds)
	}
}

// A caller that gives up (its client hung up) must not fail the other
// callers waiting on the same shared read.
func TestLookupSurvivesFirstCallerCancelling(t *testing.T) {
	t.Parallel()
	rdb, prefix, src, p := publisherWorld(t)
	h := testHash(7)
	src.putKey(h, true, "plan01")
	mustPublish(t, p)
	var started atomic.Int64
	rdb.AddHook(slowPipelines{d: 150 * time.Millisecond, started: &started})
	r := NewReader(rdb, ReaderOptions{Prefix: prefix})

	first, cancel := context.WithCancel(context.Background())
	firstDone := make(chan error, 1)
	go func() {
		_, err := r.Lookup(first, h)
		firstDone <- err
	}()
	waittest.Until(t, "the first caller's read in flight", 5*time.Second, func() bool { return started.Load() >= 1 })
	secondDone := make(chan *plans.KeyRecord, 1)
	go func() {
		rec, err := r.Lookup(context.Background(), h)
		if err != nil {
			t.Errorf("second caller: got error %v, want the record", err)
		}
		secondDone <- rec
	}()
	time.Sleep(30 * time.Millisecond)
	cancel()
	if err := <-firstDone; err == nil {
		t.Errorf("first caller: got no error after cancelling, want one")
	}
	if rec := <-secondDone; rec == nil || !rec.Enabled {
		t.Errorf("second caller: got %+v, want the enabled record", rec)
	}
}
