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
// up a new connection), which holds the next hold of them, each
// signalling entered, until release closes.
type heldPipelines struct {
	hold    atomic.Int32
	pipes   atomic.Int64
	entered chan struct{}
	release chan struct{}
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
		h.pipes.Add(1)
		if h.hold.Add(-1) >= 0 {
			h.entered <- struct{}{}
			<-h.release
		}
		return next(ctx, cmds)
	}
}

// The cache reads of requests admitted without a round trip (a lease) and
// the fills of those that missed share pipelines on the cache Redis: one
// pipelineBatch per server, the limiter's when the cache shares it. While
// two fills hold both pipelines in flight, the lookups and fills of 8
// more requests queue together and go in one round trip once those came
// back; each lookup reads its generation and finds no entry, and each
// fill is stored.
func TestCacheLookupsAndFillsShareRoundTrips(t *testing.T) {
	t.Parallel()
	for _, separate := range []bool{false, true} {
		t.Run(map[bool]string{false: "shared", true: "separate"}[separate], func(t *testing.T) {
			t.Parallel()
			rdb, prefix := redistest.MustClient(t)
			cacheRDB := rdb
			if separate {
				cacheRDB, _ = redistest.MustClient(t)
			}
			h := &heldPipelines{entered: make(chan struct{}), release: make(chan struct{})}
			release := sync.OnceFunc(func() { close(h.release) })
			t.Cleanup(release) // a failed wait lets the held pipelines go
			cacheRDB.AddHook(h)
			e := mustLoaded(t, New(rdb, Options{Prefix: prefix, Timeout: 5 * time.Second, CacheRedis: cacheRDB}))
			ctx := t.Context()
			lookup := func(i int) *cache.Lookup {
				req := &limit.Request{KeyID: "k", PlanID: "p", API: "api", Stage: "prod"}
				lk := &cache.Lookup{Request: cache.Request{APIID: "api", Stage: "prod", Method: "GET", Path: "/items/" + strconv.Itoa(i), Header: http.Header{}}}
				if d, err := e.DecideLookup(ctx, admitting{}, req, lk); err != nil || !d.Allowed {
					t.Errorf("lookup %d: %+v, %v, want admitted", i, d, err)
				}
				return lk
			}
			lks := make([]*cache.Lookup, 10)
			for i := range lks {
				lks[i] = lookup(i)
				if lks[i].Digest == "" || lks[i].Err != nil || lks[i].Entry != nil {
					t.Fatalf("lookup %d: digest %q, error %v, entry %v, want a miss", i, lks[i].Digest, lks[i].Err, lks[i].Entry)
				}
			}
			fill := func(i int) {
				ent := &cache.Entry{Status: 200, Header: http.Header{}, Body: []byte("body" + strconv.Itoa(i)), Stored: time.Now(), TTL: time.Minute}
				if err := e.Fill(ctx, lks[i], ent); err != nil {
					t.Errorf("fill %d: %v", i, err)
				}
			}
			h.hold.Store(maxFlushers)
			h.pipes.Store(0)
			var wg sync.WaitGroup
			for i := range maxFlushers {
				wg.Go(func() { fill(i) })
				<-h.entered
			}
			misses := make([]*cache.Lookup, 8)
			for i := range misses {
				wg.Go(func() { misses[i] = lookup(100 + i) })
				wg.Go(func() { fill(maxFlushers + i) })
			}
			b := e.cache.cachePipes
			waittest.Until(t, "16 calls queued", 10*time.Second, func() bool {
				b.mu.Lock()
				defer b.mu.Unlock()
				return len(b.queue) == 2*len(misses)
			})
			release()
			wg.Wait()
			if got, want := h.pipes.Load(), int64(maxFlushers+1); got != want {
				t.Errorf("cache Redis pipelines: got %d, want %d (the held ones, then one for the 8 lookups and 8 fills)", got, want)
			}
			for i, lk := range misses {
				if lk.Digest == "" || lk.Err != nil || lk.Entry != nil {
					t.Errorf("miss %d: digest %q, error %v, entry %v, want a miss", i, lk.Digest, lk.Err, lk.Entry)
				}
			}
			for i := range maxFlushers + len(misses) {
				if got := lookup(i); got.Entry == nil || string(got.Entry.Body) != "body"+strconv.Itoa(i) {
					t.Errorf("entry %d after its fill: got %v, %v", i, got.Entry, got.Err)
				}
			}
		})
	}
}
