package gateway

import (
	"cmp"
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/cache"
	"tollgate/gateway/limiter"
	"tollgate/plans"
)

// PipelineLimiter is a Limiter that can also queue other commands right
// after its decision, on the same pipeline (*limiter.Limiter's
// DecideAlong), so a caching method reads its cache generation and entry in
// the same round trip. Options.Cache requires one.
type PipelineLimiter interface {
	Limiter
	DecideAlong(ctx context.Context, req *limiter.Request, along func(ctx context.Context, p redis.Pipeliner)) (limiter.Decision, error)
}

// Values of X-Cache (DESIGN.md 6).
const (
	cacheHit     = "Hit"
	cacheMiss    = "Miss"
	cacheRefresh = "Refresh"
	cacheBypass  = "Bypass"
)

// Headers the cache writes.
const (
	headerAge     = "Age"
	headerWarning = "Warning"
)

// Values the cache writes.
var (
	warningUnauthorized = []string{`199 - "cache-control ignored: caller not authorized to invalidate"`}
	errAccessDenied     = errorType{http.StatusForbidden, "Forbidden", "AccessDeniedException"}
)

// ErrorTypeAccessDenied is logged for a max-age=0 refused under
// FAIL_WITH_403.
const ErrorTypeAccessDenied = "ACCESS_DENIED"

// fillTimeout bounds one cache write (up to MaxBody bytes); it runs after
// the response was sent.
const fillTimeout = time.Second

// responseCache is the gateway's side of the stage cache: the entry store,
// the limiter pipeline that carries the generation read, single flight,
// and the last generation seen per stage.
//
// Where the generation lives: the admin bumps it in the limiter Redis
// (push.Publisher.FlushStageCache), so it is read there, queued after the
// limiter decision in the limiter pipeline, while the entry is read from
// the cache Redis in a pipeline of its own, sent in parallel (one round
// trip per server; one pipeline when both are the same client). The entry
// key needs the generation before the round trip, so it is built with the
// last generation this node read for the stage; when the generation read
// in the round trip differs (a flush happened), the entry read is
// discarded as a miss and the fill uses the new generation. So every
// request that starts after a flush's 202 misses, on any node, without
// waiting for the change stream.
type responseCache struct {
	store   *cache.Store
	lim     PipelineLimiter
	shared  bool // the cache Redis is the limiter Redis: one pipeline
	genKey  func(apiID, stage string) string
	timeout time.Duration
	flight  cache.Flight
	gens    sync.Map       // stageConfig.cacheID → *stageCache
	fills   sync.WaitGroup // misses and refreshes until their fill landed (tests wait)
}

// newResponseCache wires the cache from opts, or returns nil when
// opts.Cache is nil. It panics on a wiring bug (no limiter Redis, no
// generation key function, or a Limiter that cannot pipeline).
func newResponseCache(opts Options) *responseCache {
	if opts.Cache == nil {
		return nil
	}
	lim, ok := opts.Limiter.(PipelineLimiter)
	if !ok || opts.LimiterRedis == nil || opts.CacheGenKey == nil {
		panic("gateway: Options.Cache needs LimiterRedis, CacheGenKey and a PipelineLimiter")
	}
	c := &responseCache{store: opts.Cache, lim: lim, genKey: opts.CacheGenKey, timeout: opts.CacheTimeout}
	c.shared = opts.Cache.Client() == opts.LimiterRedis
	if c.timeout <= 0 {
		c.timeout = limiter.DefaultTimeout
	}
	return c
}

// stageCache is the cache's state of one stage on this node: the last
// generation seen and the Redis key it is read from.
type stageCache struct {
	gen    atomic.Int64
	genKey string
}

// stage returns sc's state, created on first use (the generation outlives
// config snapshots; sc.cacheID names the stage without allocating).
func (c *responseCache) stage(sc *stageConfig) *stageCache {
	if v, ok := c.gens.Load(sc.cacheID); ok {
		return v.(*stageCache)
	}
	v, _ := c.gens.LoadOrStore(sc.cacheID, &stageCache{genKey: c.genKey(sc.apiID, sc.name)})
	return v.(*stageCache)
}

// trip is the outcome of the pipelined round trip of a caching request.
type trip struct {
	decision limiter.Decision
	decErr   error
	gen      int64
	genErr   error
	entry    *cache.Entry
	entErr   error
}

// roundTrip runs, within the cache timeout, the limiter decision and the
// generation read on the limiter Redis (the read rides on the limiter's
// batched round trip) and, when lookup is set, the entry read: on that
// same round trip when the cache Redis is the limiter Redis, else on the
// cache Redis in parallel (one round trip per server).
func (c *responseCache) roundTrip(ctx context.Context, lreq *limiter.Request, genKey, key string, h http.Header, lookup bool) trip {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var (
		genCmd   *redis.StringCmd
		shared   *cache.Lookup // queued by along on the limiter's pipeline
		separate *cache.Lookup // read from the cache Redis in parallel
		wg       sync.WaitGroup
	)
	if lookup && !c.shared {
		wg.Go(func() {
			cp := c.store.Client().Pipeline()
			separate = c.store.Queue(ctx, cp, key, h)
			_, _ = cp.Exec(ctx)
		})
	}
	var t trip
	t.decision, t.decErr = c.lim.DecideAlong(ctx, lreq, func(ctx context.Context, p redis.Pipeliner) {
		genCmd = p.Get(ctx, genKey)
		if lookup && c.shared {
			shared = c.store.Queue(ctx, p, key, h)
		}
	})
	wg.Wait()
	switch {
	case genCmd == nil: // the decision never ran
		t.genErr = t.decErr
	default:
		t.gen, t.genErr = genCmd.Int64()
		if t.genErr == redis.Nil {
			t.gen, t.genErr = 0, nil // never flushed
		}
	}
	if lk := cmp.Or(shared, separate); lk != nil {
		t.entry, t.entErr = lk.Result(ctx)
	}
	return t
}

// reread reads an entry again under a new generation: one more round trip
// to the cache Redis, only for the first request after a flush.
func (c *responseCache) reread(ctx context.Context, key string, h http.Header) (*cache.Entry, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return c.store.Get(ctx, key, h)
}

// serveCached serves a request of a caching method (DESIGN.md 4.2 steps
// 3-4 and 6): the key check already passed; the limiter decides (hits are
// charged too), then a fresh entry is served, or the integration is called
// once per entry on this node and a storable response is written to the
// cache after it was sent.
func (s *Server) serveCached(w *statusWriter, r *http.Request, ex *exchange, m *method, ps *params, rec *plans.KeyRecord, sp *stagePlan) {
	mode, warn := m.cache.mode(r, rec)
	switch mode {
	case modeForbidden: // refused before anything is charged (A3)
		ex.errType, ex.reason = ErrorTypeAccessDenied, "cache-control max-age=0 without cache invalidation permission"
		writeError(w, errAccessDenied)
		return
	case modeBypass:
		if s.limit(w, r, ex, m, rec, sp) {
			s.serveUncached(w, r, ex, m, ps)
		}
		return
	}
	c := s.cache
	st := c.stage(m.stage)
	gen := &st.gen
	kreq := cacheRequest(r, m, ps, gen.Load())
	key := c.store.Key(m.cache.params, kreq)
	t := c.roundTrip(r.Context(), &ex.lreq, st.genKey, key, r.Header, mode == modeLookup)
	if !s.applyDecision(w, r, ex, m, sp, t.decision, t.decErr) {
		return
	}
	if warn {
		w.Header()[headerWarning] = warningUnauthorized
	}
	if t.decErr != nil || t.genErr != nil { // generation unknown: nothing may be served or stored
		s.serveUncached(w, r, ex, m, ps)
		return
	}
	if t.gen != kreq.Generation { // flushed since this node last looked
		gen.Store(t.gen)
		kreq.Generation = t.gen
		key, t.entry = c.store.Key(m.cache.params, kreq), nil
		if mode == modeLookup && t.entErr == nil { // another node may have filled it already
			t.entry, t.entErr = c.reread(r.Context(), key, r.Header)
		}
	}
	switch {
	case t.entErr != nil: // cache Redis unavailable: uncached, single flight kept
		s.metrics.CacheMisses.WithLabelValues(ex.api, ex.stage).Inc()
		s.serveMiss(w, r, ex, m, ps, key, cacheBypass, 0)
	case mode == modeRefresh:
		s.metrics.CacheMisses.WithLabelValues(ex.api, ex.stage).Inc()
		s.serveRefresh(w, r, ex, m, ps, key)
	case t.entry != nil && t.entry.Fresh(time.Now()):
		s.metrics.CacheHits.WithLabelValues(ex.api, ex.stage).Inc()
		ex.cache = cacheHit
		writeEntry(w, r, t.entry, cacheHit)
	default:
		s.metrics.CacheMisses.WithLabelValues(ex.api, ex.stage).Inc()
		s.serveMiss(w, r, ex, m, ps, key, cacheMiss, m.cache.ttl)
	}
}

// cacheRequest gathers the parts of r its cache key is built from; HEAD
// uses the GET entry.
func cacheRequest(r *http.Request, m *method, ps *params, gen int64) *cache.Request {
	verb := r.Method
	if verb == http.MethodHead {
		verb = http.MethodGet
	}
	return &cache.Request{
		APIID: m.stage.apiID, Stage: m.stage.name, Generation: gen, Method: verb,
		Host: r.Host, Path: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery, Header: r.Header,
		PathParam: func(name string) (string, bool) {
			p, ok := ps.get(name)
			return p.value, ok
		},
	}
}

// serveUncached calls the integration with X-Cache: Bypass, neither
// reading nor storing an entry.
func (s *Server) serveUncached(w *statusWriter, r *http.Request, ex *exchange, m *method, ps *params) {
	ex.cache = cacheBypass
	w.Header()[headerXCache] = []string{cacheBypass}
	s.serveIntegration(w, r, ex, m, ps)
}

// writeEntry writes a stored (or shared) response: its headers, except
// those the gateway already set (rate-limit headers), X-Cache, Age on
// hits (xcache Hit), Content-Length, and the body unless the request is HEAD.
func writeEntry(w http.ResponseWriter, r *http.Request, e *cache.Entry, xcache string) {
	h := w.Header()
	for k, vs := range e.Header {
		if _, set := h[k]; !set {
			h[k] = vs
		}
	}
	h[headerXCache] = []string{xcache}
	if xcache == cacheHit {
		h[headerAge] = []string{strconv.FormatInt(int64(e.Age(time.Now())/time.Second), 10)}
	}
	h[headerContentLen] = []string{strconv.Itoa(len(e.Body))}
	w.WriteHeader(e.Status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(e.Body)
	}
}
