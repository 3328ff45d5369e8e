package engine

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/cache"
	"tollgate/internal/redistest"
	"tollgate/internal/waittest"
	"tollgate/limit"
)

func TestCachePutGetVariants(t *testing.T) {
	rdb, prefix := redistest.MustClient(t)
	s := New(rdb, Options{Prefix: prefix}).cache
	ctx := t.Context()
	key := prefix + ":cache:e:" + cache.Digest(nil, &cache.Request{APIID: "a", Stage: "s", Method: "GET", Host: "h", Path: "/p"})
	if e, err := s.get(ctx, key, http.Header{}); e != nil || err != nil {
		t.Fatalf("empty store: got %v, %v, want nil, nil", e, err)
	}
	vary := http.Header{"Vary": {"Accept-Encoding, X-Tenant"}}
	put := func(body string, req http.Header) {
		e := &cache.Entry{Status: 200, Header: vary, Body: []byte(body), Stored: time.Now(), TTL: time.Minute}
		if err := s.put(ctx, key, req, e); err != nil {
			t.Fatalf("put: %v", err)
		}
	}
	put("gzip-a", http.Header{"Accept-Encoding": {"gzip, deflate"}, "X-Tenant": {"a"}})
	put("plain-a", http.Header{"X-Tenant": {"a"}})
	put("plain-none", http.Header{})
	cases := []struct {
		name string
		req  http.Header
		want string // "" for a miss
	}{
		{"same class of Accept-Encoding", http.Header{"Accept-Encoding": {"gzip"}, "X-Tenant": {"a"}}, "gzip-a"},
		{"no Accept-Encoding", http.Header{"X-Tenant": {"a"}}, "plain-a"},
		{"identity is not gzip", http.Header{"Accept-Encoding": {"identity"}, "X-Tenant": {"a"}}, ""},
		{"other tenant", http.Header{"X-Tenant": {"b"}}, ""},
		{"empty tenant differs from absent", http.Header{"X-Tenant": {""}}, ""},
		{"absent both", http.Header{"Other": {"x"}}, "plain-none"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, err := s.get(ctx, key, c.req)
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			got := ""
			if e != nil {
				got = string(e.Body)
			}
			if got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
	ttl, err := rdb.PTTL(ctx, key).Result()
	if err != nil || ttl <= 0 || ttl > time.Minute {
		t.Errorf("PTTL: got %v, %v, want (0, 1m]", ttl, err)
	}
}

// An entry kept for stale answers lives in Redis for its TTL plus Keep,
// and still knows when it stopped being fresh.
func TestCacheEntryKeptPastItsTTL(t *testing.T) {
	rdb, prefix := redistest.MustClient(t)
	s := New(rdb, Options{Prefix: prefix}).cache
	ctx := t.Context()
	key := prefix + ":cache:e:kept"
	stored := time.Now().Truncate(time.Millisecond)
	e := &cache.Entry{Status: 200, Header: http.Header{}, Body: []byte("kept"), Stored: stored, TTL: time.Minute, Keep: time.Hour}
	if err := s.put(ctx, key, http.Header{}, e); err != nil {
		t.Fatalf("put: %v", err)
	}
	ttl, err := rdb.PTTL(ctx, key).Result()
	if err != nil || ttl <= time.Hour || ttl > time.Hour+time.Minute {
		t.Errorf("PTTL: got %v, %v, want (1h, 1h1m]", ttl, err)
	}
	got, err := s.get(ctx, key, http.Header{})
	if err != nil || got == nil {
		t.Fatalf("get: got %v, %v, want the entry", got, err)
	}
	if !got.Expires().Equal(stored.Add(time.Minute)) {
		t.Errorf("Expires: got %v, want %v (stored plus the TTL, not the key's expiry)", got.Expires(), stored.Add(time.Minute))
	}
}

func TestCacheUnavailable(t *testing.T) {
	rdb := deadRedis(t)
	s := New(rdb, Options{Prefix: "t"}).cache
	if _, err := s.get(t.Context(), "t:cache:e:x", http.Header{}); err == nil {
		t.Errorf("get on a dead Redis: got no error, want one")
	}
}

// A cache Redis that lost its scripts (restarted, SCRIPT FLUSH) answers
// the entry read with NOSCRIPT: the engine loads lookup.lua and reads
// again, so the entry is found.
func TestCacheReadAfterScriptFlush(t *testing.T) {
	t.Parallel()
	_, rdb := redistest.MustServer(t)
	s := mustLoaded(t, New(rdb, Options{Prefix: "t", Timeout: 5 * time.Second})).cache // the reload after NOSCRIPT within it, on a loaded machine
	ctx := t.Context()
	e := &cache.Entry{Status: 200, Header: http.Header{}, Body: []byte("hit"), Stored: time.Now(), TTL: time.Minute}
	if err := s.put(ctx, "t:cache:e:1", http.Header{}, e); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := s.get(ctx, "t:cache:e:1", http.Header{})
	if err != nil || got == nil || string(got.Body) != "hit" {
		t.Fatalf("read after SCRIPT FLUSH: got %v, %v, want the entry", got, err)
	}
}

// Concurrent fills share pipelines (pipeBatch): on one primary and on
// Redis Cluster, where the entries of a pipeline live on every master,
// each entry is stored whole with its expiry, and reads back.
func TestConcurrentFillsEachStoreTheirEntry(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"primary", "cluster"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			var rdb redis.UniversalClient
			var prefix string
			if backend == "cluster" {
				rdb, prefix = redistest.MustCluster(t)
			} else {
				rdb, prefix = redistest.MustClient(t)
			}
			s := New(rdb, Options{Prefix: prefix}).cache
			ctx := t.Context()
			const n = 200
			key := func(i int) string {
				return s.keys.CacheEntry(cache.Digest(nil, &cache.Request{APIID: "a", Stage: "s", Method: "GET", Host: "h", Path: "/p" + strconv.Itoa(i)}))
			}
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					e := &cache.Entry{Status: 200, Header: http.Header{}, Body: []byte("body" + strconv.Itoa(i)), Stored: time.Now(), TTL: time.Minute}
					if err := s.put(ctx, key(i), http.Header{}, e); err != nil {
						t.Errorf("put %d: %v", i, err)
					}
				})
			}
			wg.Wait()
			for i := range n {
				e, err := s.get(ctx, key(i), http.Header{})
				if err != nil || e == nil || string(e.Body) != "body"+strconv.Itoa(i) {
					t.Fatalf("entry %d: got %v, %v", i, e, err)
				}
				if ttl, err := rdb.PTTL(ctx, key(i)).Result(); err != nil || ttl <= 0 || ttl > time.Minute {
					t.Fatalf("entry %d: PTTL %v, %v, want (0, 1m]", i, ttl, err)
				}
			}
		})
	}
}

// Fills send the store script's SHA1 (EVALSHA), never its source, which
// Redis would hash on every call: on a server of the test's own, INFO
// commandstats counts no EVAL, also for a fill after SCRIPT FLUSH (a
// restarted or failed-over server), which gets NOSCRIPT, loads the script
// and stores its entry.
func TestCacheFillsSendTheScriptHash(t *testing.T) {
	t.Parallel()
	_, rdb := redistest.MustServer(t)
	s := mustLoaded(t, New(rdb, Options{Prefix: "t", Timeout: 5 * time.Second})).cache // the reload after NOSCRIPT within it, on a loaded machine
	ctx := t.Context()
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for i, flush := range []bool{false, true} {
		if flush {
			if err := rdb.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		key, body := "t:cache:e:"+strconv.Itoa(i), "body"+strconv.Itoa(i)
		e := &cache.Entry{Status: 200, Header: http.Header{}, Body: []byte(body), Stored: time.Now(), TTL: time.Minute}
		if err := s.put(ctx, key, http.Header{}, e); err != nil {
			t.Fatalf("fill (after SCRIPT FLUSH: %v): %v", flush, err)
		}
		if got, err := s.get(ctx, key, http.Header{}); err != nil || got == nil || string(got.Body) != body {
			t.Fatalf("read of the fill (after SCRIPT FLUSH: %v): got %v, %v, want %q", flush, got, err, body)
		}
	}
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(info, "cmdstat_eval:") || !strings.Contains(info, "cmdstat_evalsha:") {
		t.Errorf("commandstats: want EVALSHA and no EVAL, got\n%s", info)
	}
}

// admitting answers as a capacity lease does for DecideLookup: admitted,
// without a round trip, so the cache reads go in pipelines of their own
// (the lease package's tests run the real layer).
type admitting struct{}

func (admitting) Decide(context.Context, *limit.Request) (limit.Decision, error) {
	return limit.Decision{Allowed: true, Now: time.Now()}, nil
}

// heldPipelines is a go-redis hook counting pipelines (not those that set
// up a new connection) and their sizes, which holds the next hold of
// them, each handing the test its own release channel on held.
type heldPipelines struct {
	hold atomic.Int32
	// fillsOnly: only pipelines of cache fills alone are held
	fillsOnly atomic.Bool
	held      chan chan struct{}
	mu        sync.Mutex
	sizes     []int
}

// fills reports whether every command of cmds is a cache fill.
func fills(cmds []redis.Cmder) bool {
	for _, c := range cmds {
		if args := c.Args(); len(args) < 2 || args[0] != "evalsha" || args[1] != storeHash {
			return false
		}
	}
	return true
}

func newHeldPipelines() *heldPipelines { return &heldPipelines{held: make(chan chan struct{})} }

// reset forgets the pipelines counted so far.
func (h *heldPipelines) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sizes = nil
}

// size returns the commands of pipeline i counted since the last reset;
// -1 when fewer were.
func (h *heldPipelines) size(i int) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if i >= len(h.sizes) {
		return -1
	}
	return h.sizes[i]
}

// pipes returns the pipelines counted since the last reset.
func (h *heldPipelines) pipes() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sizes)
}

func (h *heldPipelines) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *heldPipelines) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return next
}
func (h *heldPipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if n := cmds[0].Name(); n == "hello" || n == "client" { // a new connection's setup
			return next(ctx, cmds)
		}
		h.mu.Lock()
		h.sizes = append(h.sizes, len(cmds))
		h.mu.Unlock()
		if (!h.fillsOnly.Load() || fills(cmds)) && h.hold.Add(-1) >= 0 {
			release := make(chan struct{})
			h.held <- release
			<-release
		}
		return next(ctx, cmds)
	}
}

// cacheEngine returns an engine on a fresh prefix whose cache Redis, the
// limiter's unless separate, has hook h, with cacheCalls of it.
func cacheEngine(t *testing.T, separate bool, h *heldPipelines) (e *Engine, lookup func(i int) *cache.Lookup, fill func(lk *cache.Lookup, i int)) {
	rdb, prefix := redistest.MustClient(t)
	cacheRDB := rdb
	if separate {
		cacheRDB, _ = redistest.MustClient(t)
	}
	cacheRDB.AddHook(h)
	e = mustLoaded(t, New(rdb, Options{Prefix: prefix, Timeout: 5 * time.Second, CacheRedis: cacheRDB}))
	lookup, fill = cacheCalls(t, e)
	return e, lookup, fill
}

// cacheCalls returns DecideLookup and Fill of request i's entry on e: an
// admitted request, as on a lease, whose reads must succeed; the fill's
// body is "body<i>".
func cacheCalls(t *testing.T, e *Engine) (lookup func(i int) *cache.Lookup, fill func(lk *cache.Lookup, i int)) {
	lookup = func(i int) *cache.Lookup {
		lk, d, err := lookupOf(t, e, i)
		if err != nil || !d.Allowed || lk.Digest == "" || lk.Err != nil {
			t.Errorf("lookup %d: %+v, %v, digest %q, error %v, want admitted and read", i, d, err, lk.Digest, lk.Err)
		}
		return lk
	}
	fill = func(lk *cache.Lookup, i int) {
		ent := &cache.Entry{Status: 200, Header: http.Header{}, Body: []byte("body" + strconv.Itoa(i)), Stored: time.Now(), TTL: time.Minute}
		if err := e.Fill(t.Context(), lk, ent); err != nil {
			t.Errorf("fill %d: %v", i, err)
		}
	}
	return lookup, fill
}

// lookupOf is DecideLookup of request i's entry, admitted as on a lease.
func lookupOf(t *testing.T, e *Engine, i int) (*cache.Lookup, limit.Decision, error) {
	req := &limit.Request{KeyID: "k", PlanID: "p", API: "api", Stage: "prod"}
	lk := &cache.Lookup{Request: cache.Request{APIID: "api", Stage: "prod", Method: "GET", Path: "/items/" + strconv.Itoa(i), Header: http.Header{}}}
	d, err := e.DecideLookup(t.Context(), admitting{}, req, lk)
	return lk, d, err
}

// eachCacheServer runs test with the cache in the limiter Redis and in a
// Redis of its own.
func eachCacheServer(t *testing.T, test func(t *testing.T, separate bool)) {
	for _, separate := range []bool{false, true} {
		t.Run(map[bool]string{false: "shared", true: "separate"}[separate], func(t *testing.T) {
			t.Parallel()
			test(t, separate)
		})
	}
}

// The cache reads of requests admitted without a round trip (a lease) and
// the fills share pipelines on the cache Redis: while a pipeline of fills
// and two of reads are held (reads pass pipelines of fills alone; a fill
// starts a pipeline only when none is in flight), the lookups and fills
// of 8 more requests queue, and the first read pipeline back takes them
// all in one round trip; each lookup finds no entry, and each fill is
// stored.
func TestCacheReadsAndFillsShareRoundTrips(t *testing.T) {
	t.Parallel()
	eachCacheServer(t, func(t *testing.T, separate bool) {
		h := newHeldPipelines()
		e, lookup, fill := cacheEngine(t, separate, h)
		lks := make([]*cache.Lookup, 1+8)
		for i := range lks {
			lks[i] = lookup(i)
		}
		h.reset()
		h.hold.Store(1 + maxFlushers)
		var releases []chan struct{}
		t.Cleanup(func() { // a failed wait lets the held pipelines go
			for _, r := range releases {
				select {
				case <-r:
				default:
					close(r)
				}
			}
		})
		var wg sync.WaitGroup
		wg.Go(func() { fill(lks[0], 0) })
		releases = append(releases, <-h.held)
		for i := range maxFlushers {
			wg.Go(func() { lookup(100 + i) })
			releases = append(releases, <-h.held)
		}
		misses := make([]*cache.Lookup, 8)
		for i := range misses {
			wg.Go(func() { misses[i] = lookup(200 + i) })
			wg.Go(func() { fill(lks[1+i], 1+i) })
		}
		b := e.cache.cachePipes
		waittest.Until(t, "8 reads and 8 fills queued", 10*time.Second, func() bool { return b.queued() == 2*len(misses) })
		close(releases[1]) // the first read pipeline
		held := 1 + maxFlushers
		waittest.Until(t, "the reads and fills sent", 10*time.Second, func() bool { return h.pipes() == held+1 })
		close(releases[0])
		for _, r := range releases[2:] {
			close(r)
		}
		wg.Wait()
		want := 8 + 8 // the entry reads and the fills
		if !separate {
			want++ // the stage's generation, read once for the 8
		}
		if got := h.size(held); h.pipes() != held+1 || got != want {
			t.Errorf("pipelines: got %d, the one after the held of %d commands, want %d, the last of %d (the held ones, then the 8 reads and 8 fills)",
				h.pipes(), got, held+1, want)
		}
		for i, lk := range misses {
			if lk.Entry != nil {
				t.Errorf("miss %d: got entry %v, want none", i, lk.Entry)
			}
		}
		for i := range lks {
			if got := lookup(i); got.Entry == nil || string(got.Entry.Body) != "body"+strconv.Itoa(i) {
				t.Errorf("entry %d after its fill: got %v", i, got.Entry)
			}
		}
	})
}

// A cache read never waits for fills: while a pipeline of fills is held
// (a slow cache Redis) and another fill waits for it, a lookup is read
// and answered.
func TestCacheReadsDoNotWaitForFills(t *testing.T) {
	t.Parallel()
	eachCacheServer(t, func(t *testing.T, separate bool) {
		h := newHeldPipelines()
		e, lookup, fill := cacheEngine(t, separate, h)
		lks := []*cache.Lookup{lookup(0), lookup(1)}
		h.hold.Store(1)
		var wg sync.WaitGroup
		wg.Go(func() { fill(lks[0], 0) })
		release := <-h.held
		wg.Go(func() { fill(lks[1], 1) })
		b := e.cache.cachePipes
		waittest.Until(t, "the second fill queued", 10*time.Second, func() bool { return b.queued() == 1 })
		done := make(chan struct{})
		go func() {
			defer close(done)
			lookup(2)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("lookup: not answered within 10 s while fills were held")
		}
		close(release)
		wg.Wait()
		<-done
	})
}

// A read passes any number of queued fills: while a pipeline of fills
// alone is held (a slow cache Redis) and more than a pipeline's worth of
// fills wait behind it, a lookup goes at once, ahead of the fills in a
// pipeline of its own deadline, and no second pipeline of fills alone
// goes meanwhile; once the held one is back, every fill is stored.
func TestCacheReadPassesManyQueuedFills(t *testing.T) {
	t.Parallel()
	eachCacheServer(t, func(t *testing.T, separate bool) {
		h := newHeldPipelines()
		e, lookup, fill := cacheEngine(t, separate, h)
		lks := make([]*cache.Lookup, maxBatch+9)
		for i := range lks {
			lks[i] = lookup(i)
		}
		h.fillsOnly.Store(true)
		h.hold.Store(1 << 20)
		var wg sync.WaitGroup
		wg.Go(func() { fill(lks[0], 0) })
		release := <-h.held
		t.Cleanup(func() {
			select {
			case <-release:
			default:
				close(release)
			}
		})
		for i := 1; i < len(lks); i++ {
			wg.Go(func() { fill(lks[i], i) })
		}
		waittest.Until(t, "the fills queued", 10*time.Second, func() bool { return e.cache.cachePipes.queued() == len(lks)-1 })
		done := make(chan struct{})
		go func() {
			defer close(done)
			lookup(len(lks))
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("lookup: not answered within 10 s while %d fills waited behind a held pipeline of fills", len(lks)-1)
		case r := <-h.held:
			close(r)
			t.Fatal("a second pipeline of fills alone went while one was held")
		}
		h.hold.Store(0) // the fills left go alone once the held pipeline is back
		close(release)
		wg.Wait()
		for i := range lks {
			if got := lookup(i); got.Entry == nil || string(got.Entry.Body) != "body"+strconv.Itoa(i) {
				t.Errorf("entry %d after its fill: got %v", i, got.Entry)
			}
		}
	})
}

// A read that shares a pipeline with a fill waits no longer than the
// cache's timeout, not the fill's 1 s: on a paused cache Redis, a lookup
// sent with a fill fails at its own deadline.
func TestCacheReadBesideAFillWaitsItsOwnDeadline(t *testing.T) {
	t.Parallel()
	srv := redistest.MustServerProcess(t)
	h := newHeldPipelines()
	srv.Client.AddHook(h)
	const timeout = 200 * time.Millisecond
	e := mustLoaded(t, New(srv.Client, Options{Prefix: "t", Timeout: timeout}))
	lookup, fill := cacheCalls(t, e)
	lks := []*cache.Lookup{lookup(0), lookup(1)}
	h.hold.Store(1)
	var wg sync.WaitGroup
	wg.Go(func() { fill(lks[0], 0) })
	release := <-h.held // a pipeline of fills in flight: the fill below waits
	wg.Go(func() {
		ent := &cache.Entry{Status: 200, Header: http.Header{}, Body: []byte("late"), Stored: time.Now(), TTL: time.Minute}
		_ = e.Fill(t.Context(), lks[1], ent) // fails with the read's deadline
	})
	b := e.cache.cachePipes
	waittest.Until(t, "the second fill queued", 10*time.Second, func() bool { return b.queued() == 1 })
	srv.Pause(t)
	start := time.Now()
	lk, d, err := lookupOf(t, e, 2)
	took := time.Since(start)
	srv.Resume(t)
	close(release)
	wg.Wait()
	if err != nil || !d.Allowed || lk.Err == nil {
		t.Errorf("lookup on a paused Redis: %+v, %v, cache error %v, want admitted with a cache error", d, err, lk.Err)
	}
	if took >= fillTimeout {
		t.Errorf("lookup on a paused Redis beside a fill: answered after %v, want within the cache's timeout %v, before the fill's %v", took, timeout, fillTimeout)
	}
}
