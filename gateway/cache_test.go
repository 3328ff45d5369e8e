package gateway

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"tollgate/plans"
)

func TestCacheHitMissAndHead(t *testing.T) {
	u := newUpstream(t)
	env := newCacheEnv(t)
	tg := env.gateway(t, cacheSnapshot(cachedStage(map[string]plans.MethodSetting{"*/*": caching(300)}), nil,
		res{"/items", methods(keyedProxy(u, "/items"), "GET", "POST", "PUT", "DELETE")},
		res{"/items2", methods(keyedProxy(u, "/items2"), "GET")}), nil)
	first := tg.get(t, "/prod/items")
	want(t, "first GET", first, 200, "Miss", "v1 GET /items")
	second := tg.get(t, "/prod/items")
	want(t, "second GET", second, 200, "Hit", "v1 GET /items")
	u.wantHits(t, "after two GETs", 1)
	for _, res := range []response{first, second} { // metrics are recorded before the access-log line
		tg.logLine(t, res.header.Get("x-amzn-RequestId"))
	}
	hits, misses := tg.metrics.CacheHits.WithLabelValues(testAPI, testStage, "GET", "/items"), tg.metrics.CacheMisses.WithLabelValues(testAPI, testStage, "GET", "/items")
	if h, m := counterValue(t, hits), counterValue(t, misses); h != 1 || m != 1 {
		t.Errorf("tollgate_cache_hits_total, _misses_total: got %v, %v, want 1, 1", h, m)
	}
	if second.header.Get("Age") == "" || first.header.Get("Age") != "" {
		t.Errorf("Age: got %q on the miss and %q on the hit, want none then a number", first.header.Get("Age"), second.header.Get("Age"))
	}
	if got := second.header.Get("X-RateLimit-Limit"); got != "10000" {
		t.Errorf("X-RateLimit-Limit on a hit: got %q, want 10000", got)
	}
	// Other methods never hit and leave the entry alone.
	for _, verb := range []string{"POST", "PUT", "DELETE"} {
		got := tg.doBody(t, verb, "/prod/items", strings.NewReader("{}"), "x-api-key", cacheKey1)
		want(t, verb, got, 200, "", "v1 "+verb+" /items")
	}
	want(t, "GET after POST", tg.get(t, "/prod/items"), 200, "Hit", "v1 GET /items")
	u.wantHits(t, "after other methods", 4)
	head := tg.do(t, http.MethodHead, "/prod/items", "x-api-key", cacheKey1)
	want(t, "HEAD of a cached GET", head, 200, "Hit", "")
	if head.body != "" || head.header.Get("Content-Length") != strconv.Itoa(len("v1 GET /items")) {
		t.Errorf("HEAD hit: got body %q, Content-Length %q, want none and %d", head.body, head.header.Get("Content-Length"), len("v1 GET /items"))
	}
	// A cold HEAD goes upstream and stores nothing; the GET then gets a full body.
	want(t, "cold HEAD", tg.do(t, http.MethodHead, "/prod/items2", "x-api-key", cacheKey1), 200, "Miss", "")
	get2 := tg.get(t, "/prod/items2")
	want(t, "GET after cold HEAD", get2, 200, "Miss", "v1 GET /items2")
	if cl := get2.header.Get("Content-Length"); cl != strconv.Itoa(len(get2.body)) {
		t.Errorf("Content-Length: got %s, want %d", cl, len(get2.body))
	}
	u.wantHits(t, "end", 6)
}

// TestCacheTTL: an entry is served until its TTL and missed after; Age
// counts from the fill, and an upstream's own Age or X-Cache never
// reaches the client (the gateway owns them).
func TestCacheTTL(t *testing.T) {
	u := newUpstream(t)
	u.set(func(u *upstream) { u.header = http.Header{"Age": {"99"}, "X-Cache": {"upstream"}} })
	env, clock := clockEnv(t)
	tg := env.gateway(t, cacheSnapshot(cachedStage(map[string]plans.MethodSetting{"*/*": caching(1)}), nil,
		res{"/items", methods(keyedProxy(u, "/items"), "GET")}), nil)
	miss := tg.get(t, "/prod/items")
	want(t, "fill", miss, 200, "Miss", "")
	if got := miss.header.Values("Age"); len(got) != 0 {
		t.Errorf("Age on a miss: got %q, want none (the upstream's is dropped)", got)
	}
	hit := tg.get(t, "/prod/items")
	want(t, "within the TTL", hit, 200, "Hit", "")
	if got := hit.header.Get("Age"); got != "0" {
		t.Errorf("Age on a hit: got %q, want 0", got)
	}
	clock.Add(1100 * time.Millisecond) // the TTL is 1 s, the smallest there is
	want(t, "after the TTL", tg.get(t, "/prod/items"), 200, "Miss", "")
	u.wantHits(t, "end", 2)
}

func TestCacheSettings(t *testing.T) {
	getOnly := caching(300)
	off := caching(300)
	off.CachingEnabled = false
	cases := []struct {
		name    string
		cluster bool
		set     map[string]plans.MethodSetting
		verb    string
		xcache  string // of the second call
	}{
		{"stage default caches GET", true, map[string]plans.MethodSetting{"*/*": getOnly}, "GET", "Hit"},
		{"stage default does not cache POST", true, map[string]plans.MethodSetting{"*/*": getOnly}, "POST", ""},
		{"method setting caches POST", true, map[string]plans.MethodSetting{"~1items/POST": getOnly}, "POST", "Hit"},
		{"cluster disabled", false, map[string]plans.MethodSetting{"*/*": getOnly}, "GET", ""},
		{"ttl 0 disables", true, map[string]plans.MethodSetting{"*/*": caching(0)}, "GET", ""},
		{"method entry turns it off", true, map[string]plans.MethodSetting{"*/*": getOnly, "~1items/GET": off}, "GET", ""},
		{"no settings", true, nil, "GET", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := newUpstream(t)
			st := cachedStage(c.set)
			st.CacheClusterEnabled = c.cluster
			tg := newCacheEnv(t).gateway(t, cacheSnapshot(st, nil, res{"/items", methods(keyedProxy(u, "/items"), c.verb)}), nil)
			tg.do(t, c.verb, "/prod/items", "x-api-key", cacheKey1)
			tg.fills.Wait()
			got := tg.do(t, c.verb, "/prod/items", "x-api-key", cacheKey1)
			if h := got.header.Get("X-Cache"); h != c.xcache {
				t.Errorf("X-Cache: got %q, want %q", h, c.xcache)
			}
		})
	}
}

// TestCacheKeying: the cache key holds the stage, the path and the selected
// key parameters (query string and header), in canonical form; unselected
// parameters and headers do not split an entry.
func TestCacheKeying(t *testing.T) {
	u := newUpstream(t)
	env := newCacheEnv(t)
	beta := cachedStage(map[string]plans.MethodSetting{"*/*": caching(300)})
	beta.StageName = "beta"
	snap := cacheSnapshot(cachedStage(map[string]plans.MethodSetting{"*/*": caching(300)}), func(s *plans.Snapshot) {
		api := s.Apis[testAPI]
		api.Stages["beta"] = &plans.StageConfig{Stage: beta, Resources: api.Stages[testStage].Resources}
		s.Plans["plan01"].ApiStages = append(s.Plans["plan01"].ApiStages, plans.ApiStage{ApiID: testAPI, Stage: "beta"})
	},
		res{"/search", methods(keyedProxy(u, "/search", "method.request.querystring.q", "method.request.header.Accept-Language"), "GET")},
		res{"/items/{id}", methods(keyedProxy(u, "/items/{id}"), "GET")})
	tg := env.gateway(t, snap, nil)
	steps := []struct {
		path   string
		hdr    []string
		xcache string
		body   string
	}{
		{"/prod/search?q=one", nil, "Miss", "v1 GET /search?q=one"},
		{"/prod/search?q=two", nil, "Miss", "v1 GET /search?q=two"},
		{"/prod/search?q=one&utm_source=x", nil, "Hit", "v1 GET /search?q=one"},
		{"/prod/search?utm_source=y&q=%6Fne", nil, "Hit", "v1 GET /search?q=one"},
		{"/prod/search?q=", nil, "Miss", "v1 GET /search?q="},
		{"/prod/search", nil, "Miss", "v1 GET /search"},
		{"/prod/search?q=one&q=one", nil, "Miss", "v1 GET /search?q=one&q=one"},
		{"/prod/search?q=one", []string{"Accept-Language", "fr"}, "Miss", "v1 GET /search?q=one"},
		{"/prod/search?q=one", []string{"X-Unlisted", "1"}, "Hit", "v1 GET /search?q=one"},
		{"/prod/items/1", nil, "Miss", "v1 GET /items/1"},
		{"/prod/items/2", nil, "Miss", "v1 GET /items/2"},
		{"/prod/items/1?q=two", nil, "Hit", "v1 GET /items/1"},
		{"/beta/items/1", nil, "Miss", "v1 GET /items/1"},
		{"/beta/items/1", nil, "Hit", "v1 GET /items/1"},
	}
	for i, s := range steps {
		want(t, strconv.Itoa(i)+" "+s.path, tg.get(t, s.path, s.hdr...), 200, s.xcache, s.body)
	}
	u.wantHits(t, "end", 9)
}

// TestCacheWhatIsStored: only a 200 that is cacheable by its headers and at
// most 1 MiB is stored; upstream errors, redirects, cookies, no-store,
// private and Vary: * are not.
func TestCacheWhatIsStored(t *testing.T) {
	cases := []struct {
		name   string
		status int
		header http.Header
		size   int
		stored bool
	}{
		{"200", 200, nil, 0, true},
		{"201", 201, nil, 0, false},
		{"503", 503, nil, 0, false},
		{"429 from upstream", 429, nil, 0, false},
		{"404", 404, nil, 0, false},
		{"302", 302, http.Header{"Location": {"/x"}}, 0, false},
		{"Set-Cookie", 200, http.Header{"Set-Cookie": {"s=1"}}, 0, false},
		{"no-store", 200, http.Header{"Cache-Control": {"no-store"}}, 0, false},
		{"private", 200, http.Header{"Cache-Control": {"private, max-age=60"}}, 0, false},
		{"Vary star", 200, http.Header{"Vary": {"*"}}, 0, false},
		{"body of exactly 1 MiB", 200, nil, 1 << 20, true},
		{"body over 1 MiB", 200, nil, 1<<20 + 1, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := newUpstream(t)
			u.set(func(u *upstream) { u.statuses, u.header, u.size = []int{c.status}, c.header, c.size })
			tg := newCacheEnv(t).gateway(t, cacheSnapshot(cachedStage(map[string]plans.MethodSetting{"*/*": caching(300)}), nil,
				res{"/items", methods(keyedProxy(u, "/items"), "GET")}), nil)
			noRedirect := tg.http.Client()
			noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			want(t, "first", tg.get(t, "/prod/items"), c.status, "Miss", "")
			u.set(func(u *upstream) { u.header = nil })
			second := tg.get(t, "/prod/items")
			if wantX := map[bool]string{true: "Hit", false: "Miss"}[c.stored]; second.header.Get("X-Cache") != wantX {
				t.Errorf("second: X-Cache: got %q, want %q", second.header.Get("X-Cache"), wantX)
			}
			if c.stored && len(second.body) != max(c.size, len("v1 GET /items")) {
				t.Errorf("hit body length: got %d, want %d", len(second.body), max(c.size, len("v1 GET /items")))
			}
		})
	}
}
