package gateway

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redistest"
	"tollgate/internal/waittest"
	"tollgate/plans"
)

func TestCacheVaryAcceptEncoding(t *testing.T) {
	u := newUpstream(t)
	u.set(func(u *upstream) { u.echoAE, u.header = true, http.Header{"Vary": {"Accept-Encoding"}} })
	tg := newCacheEnv(t).gateway(t, cacheSnapshot(cachedStage(map[string]plans.MethodSetting{"*/*": caching(300)}), nil,
		res{"/items", methods(keyedProxy(u, "/items"), "GET")}), nil)
	steps := []struct {
		ae     string
		xcache string
		body   string
	}{
		{"gzip", "Miss", "v1 GET /items ae=gzip"},
		{"identity", "Miss", "v1 GET /items ae=identity"},
		{"x-gzip", "Hit", "v1 GET /items ae=gzip"},
		{"deflate", "Hit", "v1 GET /items ae=identity"},
		{"br, gzip", "Miss", "v1 GET /items ae=br, gzip"},
		{"gzip;q=0.5, br", "Hit", "v1 GET /items ae=br, gzip"},
	}
	for _, s := range steps {
		want(t, "Accept-Encoding "+s.ae, tg.get(t, "/prod/items", "Accept-Encoding", s.ae), 200, s.xcache, s.body)
	}
	u.wantHits(t, "end", 3)
}

func TestCacheCredentialedRequests(t *testing.T) {
	u := newUpstream(t)
	tg := newCacheEnv(t).gateway(t, cacheSnapshot(cachedStage(map[string]plans.MethodSetting{"*/*": caching(300)}), nil,
		res{"/items", methods(keyedProxy(u, "/items"), "GET")},
		res{"/mine", methods(keyedProxy(u, "/mine", "method.request.header.Authorization"), "GET")}), nil)
	want(t, "fill", tg.get(t, "/prod/items"), 200, "Miss", "")
	want(t, "Authorization", tg.get(t, "/prod/items", "Authorization", "Bearer a"), 200, "Bypass", "")
	want(t, "Cookie", tg.get(t, "/prod/items", "Cookie", "s=1"), 200, "Bypass", "")
	want(t, "plain still hits", tg.get(t, "/prod/items"), 200, "Hit", "")
	u.set(func(u *upstream) { u.version = "v2" })
	want(t, "keyed Authorization a", tg.get(t, "/prod/mine", "Authorization", "Bearer a"), 200, "Miss", "v2 GET /mine")
	want(t, "keyed Authorization a again", tg.get(t, "/prod/mine", "Authorization", "Bearer a"), 200, "Hit", "v2 GET /mine")
	u.set(func(u *upstream) { u.version = "v3" })
	want(t, "keyed Authorization b", tg.get(t, "/prod/mine", "Authorization", "Bearer b"), 200, "Miss", "v3 GET /mine")
	u.wantHits(t, "end", 5)
}

// TestCacheControlMaxAgeZero: a client's Cache-Control: max-age=0 refreshes
// the entry only when the key may invalidate it; otherwise each
// unauthorized-request strategy answers as it says, and never reaches the
// upstream however often it is sent.
func TestCacheControlMaxAgeZero(t *testing.T) {
	cases := []struct {
		name       string
		require    bool
		strategy   string
		k1Status   int
		k1XCache   string
		k1Body     string // after the upstream moved to v2
		k1Warning  bool
		k1Refreshs bool
	}{
		{"FAIL_WITH_403", true, plans.FailWith403, 403, "", `{"message":"Forbidden"}`, false, false},
		{"SUCCEED_WITH_RESPONSE_HEADER", true, plans.SucceedWithResponseHeader, 200, "Hit", "v1 GET /items", true, false},
		{"SUCCEED_WITHOUT_RESPONSE_HEADER", true, plans.SucceedWithoutResponseHeader, 200, "Hit", "v1 GET /items", false, false},
		{"authorization not required", false, plans.FailWith403, 200, "Refresh", "v2 GET /items", false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := newUpstream(t)
			ms := caching(300)
			ms.RequireAuthorizationForCacheControl, ms.UnauthorizedCacheControlHeaderStrategy = c.require, c.strategy
			env := newCacheEnv(t)
			snap := func() *plans.Snapshot {
				return cacheSnapshot(cachedStage(map[string]plans.MethodSetting{"*/*": ms}), nil, res{"/items", methods(keyedProxy(u, "/items"), "GET")})
			}
			tg, node2 := env.gateway(t, snap(), nil), env.gateway(t, snap(), nil)
			want(t, "fill v1", tg.get(t, "/prod/items"), 200, "Miss", "v1 GET /items")
			u.set(func(u *upstream) { u.version = "v2" })
			got := tg.get(t, "/prod/items", "Cache-Control", "max-age=0")
			want(t, "k1 max-age=0", got, c.k1Status, c.k1XCache, c.k1Body)
			if c.k1Status == 403 && got.header.Get("x-amzn-ErrorType") != "AccessDeniedException" {
				t.Errorf("x-amzn-ErrorType: got %q, want AccessDeniedException", got.header.Get("x-amzn-ErrorType"))
			}
			if w := got.header.Get("Warning"); (w != "") != c.k1Warning {
				t.Errorf("Warning: got %q, want present %v", w, c.k1Warning)
			}
			if !c.k1Refreshs {
				n := 50
				if c.strategy == plans.FailWith403 {
					n = 1000
				}
				for range n { // unauthorized max-age=0 never reaches the upstream
					tg.get(t, "/prod/items", "Cache-Control", "no-cache, max-age=0")
				}
				u.wantHits(t, "after "+strconv.Itoa(n)+" unauthorized max-age=0", 1)
				want(t, "k1 plain after", tg.get(t, "/prod/items"), 200, "Hit", "v1 GET /items")
			}
			want(t, "k2 max-age=0", tg.getAs(t, cacheKey2, "/prod/items", "Cache-Control", "max-age=0"), 200, "Refresh", "v2 GET /items")
			want(t, "k1 plain after k2's refresh", tg.get(t, "/prod/items"), 200, "Hit", "v2 GET /items")
			want(t, "k1 plain on node 2", node2.get(t, "/prod/items"), 200, "Hit", "v2 GET /items")
		})
	}
}

// TestCacheFlushTwoNodes: a flush makes the next call a miss on
// both nodes, for every Vary variant and key parameter value, and a fill
// that was in flight during the flush is never served after it.
func TestCacheFlushTwoNodes(t *testing.T) {
	for _, mode := range []struct {
		name     string
		separate bool
	}{{"cache on the limiter Redis", false}, {"cache on its own client", true}} {
		t.Run(mode.name, func(t *testing.T) {
			u := newUpstream(t)
			env := newCacheEnv(t)
			ms := caching(600)
			snap := func() *plans.Snapshot {
				return cacheSnapshot(cachedStage(map[string]plans.MethodSetting{"*/*": ms}), nil,
					res{"/items", methods(keyedProxy(u, "/items", "method.request.header.Accept-Language"), "GET")})
			}
			var cacheRDB redis.UniversalClient
			if mode.separate {
				cacheRDB, _ = redistest.MustClient(t)
			}
			nodes := []*testGateway{env.gateway(t, snap(), cacheRDB), env.gateway(t, snap(), cacheRDB)}
			for _, lang := range []string{"en", "fr"} {
				want(t, "fill "+lang, nodes[0].get(t, "/prod/items", "Accept-Language", lang), 200, "Miss", "v1 GET /items")
				want(t, "hit on node 2 "+lang, nodes[1].get(t, "/prod/items", "Accept-Language", lang), 200, "Hit", "v1 GET /items")
			}
			u.set(func(u *upstream) { u.version = "v2" })
			env.flush(t, testStage)
			for i, n := range nodes {
				for _, lang := range []string{"en", "fr"} {
					got := n.get(t, "/prod/items", "Accept-Language", lang)
					if i == 0 {
						want(t, "after flush "+lang, got, 200, "Miss", "v2 GET /items")
					} else {
						want(t, "after flush, node 2 "+lang, got, 200, "Hit", "v2 GET /items")
					}
				}
			}
			// The race: a slow fill starts, the stage is flushed, the fill lands.
			u.set(func(u *upstream) { u.version, u.delay = "v3", 300e6 })
			done := make(chan response)
			go func() { done <- nodes[0].get(t, "/prod/items", "Accept-Language", "de") }()
			waittest.Until(t, "the slow fill at the upstream", 2*time.Second, func() bool { return u.hits.Load() >= 5 })
			env.flush(t, testStage)
			want(t, "in-flight fill", <-done, 200, "Miss", "v3 GET /items")
			u.set(func(u *upstream) { u.version, u.delay = "v4", 0 })
			for i, n := range nodes {
				got := n.get(t, "/prod/items", "Accept-Language", "de")
				if got.body != "v4 GET /items" {
					t.Errorf("node %d after the flush raced a fill: got %q (%s), want v4 GET /items", i+1, got.body, got.header.Get("X-Cache"))
				}
			}
		})
	}
}

// TestCacheHitsAreCharged: the key check and the limits run
// before the cache, and hits are charged.
func TestCacheHitsAreCharged(t *testing.T) {
	u := newUpstream(t)
	env := newCacheEnv(t)
	snap := cacheSnapshot(cachedStage(map[string]plans.MethodSetting{"*/*": caching(300)}), func(s *plans.Snapshot) {
		s.Plans["plan01"].Throttle = &plans.Throttle{RateLimit: 0.01, BurstLimit: 2}
		s.Plans["plan01"].Quota = &plans.Quota{Limit: 100, Period: plans.PeriodDay}
		addPlan(s, plans.UsagePlan{ID: "plan02", ApiStages: []plans.ApiStage{{ApiID: testAPI, Stage: "beta"}}})
	}, res{"/items", methods(keyedProxy(u, "/items"), "GET")})
	tg := env.gateway(t, snap, nil)
	tg.keys.add("disabledkeyccccccccccccccccc", &plans.KeyRecord{KeyID: "key0000003", Enabled: false, PlanIDs: []string{"plan01"}})
	tg.keys.add("otherplankeyddddddddddddddd", &plans.KeyRecord{KeyID: "key0000004", Enabled: true, PlanIDs: []string{"plan02"}})
	want(t, "k1 fills", tg.get(t, "/prod/items"), 200, "Miss", "")
	for _, key := range []string{"", "bogus", "unknownkeyeeeeeeeeeeeeeeeeee", "disabledkeyccccccccccccccccc", "otherplankeyddddddddddddddd"} {
		got := tg.getAs(t, key, "/prod/items")
		wantError(t, got, 403, "Forbidden", "ForbiddenException")
		if got.header.Get("X-Cache") != "" {
			t.Errorf("key %q: X-Cache: got %q, want none", key, got.header.Get("X-Cache"))
		}
	}
	h1 := tg.getAs(t, cacheKey2, "/prod/items")
	want(t, "k2 first", h1, 200, "Hit", "v1 GET /items")
	h2 := tg.getAs(t, cacheKey2, "/prod/items")
	want(t, "k2 second", h2, 200, "Hit", "v1 GET /items")
	if r1, r2 := h1.header.Get("X-RateLimit-Remaining"), h2.header.Get("X-RateLimit-Remaining"); r1 != "99" || r2 != "98" {
		t.Errorf("quota remaining on hits: got %s then %s, want 99 then 98", r1, r2)
	}
	third := tg.getAs(t, cacheKey2, "/prod/items")
	wantError(t, third, 429, "Too Many Requests", "TooManyRequestsException")
	// A gateway 429 of k2 is never served to k1 from the cache.
	want(t, "k1 after k2's 429", tg.get(t, "/prod/items"), 200, "Hit", "v1 GET /items")
	u.wantHits(t, "end", 1)
}

// TestCacheUpstreamErrors: upstream 503 and 429 are not stored,
// the 200 after them is; a gateway-made 502 is not stored, and the next
// call after the upstream is back goes to it.
func TestCacheUpstreamErrors(t *testing.T) {
	u := newUpstream(t)
	u.set(func(u *upstream) { u.statuses = []int{503, 429} })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	_ = ln.Close()
	tg := newCacheEnv(t).gateway(t, cacheSnapshot(cachedStage(map[string]plans.MethodSetting{"*/*": caching(300)}), nil,
		res{"/items", methods(keyedProxy(u, "/items"), "GET")},
		res{"/other", methods(proxy(true, "http://"+down+"/other"), "GET")}), nil)
	for i, status := range []int{503, 429, 200} {
		want(t, "call "+strconv.Itoa(i+1), tg.get(t, "/prod/items"), status, "Miss", "")
	}
	want(t, "call 4", tg.get(t, "/prod/items"), 200, "Hit", "v1 GET /items")
	u.wantHits(t, "scripted statuses", 3)
	wantError(t, tg.get(t, "/prod/other"), 502, "Bad Gateway", "BadGatewayException")
	back := httptest.NewUnstartedServer(http.HandlerFunc(u.serve))
	if back.Listener, err = net.Listen("tcp", down); err != nil {
		t.Fatalf("restart the upstream on %s: %v", down, err)
	}
	back.Start()
	t.Cleanup(back.Close)
	want(t, "after the upstream is back", tg.get(t, "/prod/other"), 200, "Miss", "v1 GET /other")
	want(t, "then", tg.get(t, "/prod/other"), 200, "Hit", "v1 GET /other")
}

// TestCacheRedisDown: with the cache Redis unavailable a caching method
// behaves as uncached (X-Cache: Bypass) and stays limited.
func TestCacheRedisDown(t *testing.T) {
	u := newUpstream(t)
	dead := redis.NewClient(&redis.Options{Addr: deadAddr(t), MaxRetries: -1})
	t.Cleanup(func() { _ = dead.Close() })
	tg := newCacheEnv(t).gateway(t, cacheSnapshot(cachedStage(map[string]plans.MethodSetting{"*/*": caching(300)}), nil,
		res{"/items", methods(keyedProxy(u, "/items"), "GET")}), dead)
	for i := range 2 {
		got := tg.get(t, "/prod/items")
		want(t, "call", got, 200, "Bypass", "v1 GET /items")
		if got.header.Get("X-RateLimit-Limit") == "" {
			t.Errorf("call %d: X-RateLimit-Limit missing: the limiter still decides", i)
		}
	}
	u.wantHits(t, "end", 2)
	if !strings.Contains(tg.logs.String(), `"cache":"Bypass"`) {
		t.Errorf("access log: got %s, want a cache outcome Bypass", tg.logs.String())
	}
}

// An upstream that varies on the caller's identity (the X-Tollgate-Api-Key-Id
// the gateway forwards) gets one entry per key: another key, or a client
// sending that header itself, never gets the first key's response.
func TestCacheVaryOnForwardedKeyID(t *testing.T) {
	u := newUpstream(t)
	u.set(func(u *upstream) { u.header = http.Header{"Vary": {HeaderAPIKeyID}} })
	tg := newCacheEnv(t).gateway(t, cacheSnapshot(cachedStage(map[string]plans.MethodSetting{"*/*": caching(300)}), nil,
		res{"/items", methods(keyedProxy(u, "/items"), "GET")}), nil)
	want(t, "key 1 fills", tg.getAs(t, cacheKey1, "/prod/items"), 200, "Miss", "")
	want(t, "key 1 hits", tg.getAs(t, cacheKey1, "/prod/items"), 200, "Hit", "")
	want(t, "key 2 misses", tg.getAs(t, cacheKey2, "/prod/items"), 200, "Miss", "")
	want(t, "key 2 sending key 1's id gets its own entry",
		tg.getAs(t, cacheKey2, "/prod/items", HeaderAPIKeyID, "key0000001"), 200, "Hit", "")
	u.wantHits(t, "end", 2)
}

// Vary on a credential header stores a digest of its value, never the
// value, and still tells callers apart and serves each its own entry.
func TestCacheVaryOnCredentialStoresDigest(t *testing.T) {
	u := newUpstream(t)
	u.set(func(u *upstream) { u.header = http.Header{"Vary": {"X-Api-Key"}} })
	env := newCacheEnv(t)
	tg := env.gateway(t, cacheSnapshot(cachedStage(map[string]plans.MethodSetting{"*/*": caching(300)}), nil,
		res{"/items", methods(keyedProxy(u, "/items"), "GET")}), nil)
	want(t, "key 1 fills", tg.getAs(t, cacheKey1, "/prod/items"), 200, "Miss", "")
	want(t, "key 1 hits", tg.getAs(t, cacheKey1, "/prod/items"), 200, "Hit", "")
	want(t, "key 2 misses", tg.getAs(t, cacheKey2, "/prod/items"), 200, "Miss", "")
	want(t, "key 2 hits", tg.getAs(t, cacheKey2, "/prod/items"), 200, "Hit", "")
	u.wantHits(t, "end", 2)
	keys, err := env.rdb.Keys(t.Context(), env.prefix+":cache:e:*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("cache entries: %v (%v), want some", keys, err)
	}
	for _, k := range keys {
		fields, err := env.rdb.HKeys(t.Context(), k).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fields {
			if strings.Contains(f, cacheKey1) || strings.Contains(f, cacheKey2) {
				t.Errorf("entry %s field %q holds an API key value", k, f)
			}
		}
	}
}
