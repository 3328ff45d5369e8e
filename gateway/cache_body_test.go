package gateway

import (
	"io"
	"strings"
	"testing"

	"tollgate/plans"
)

// TestCacheRequestWithBodyNeverPoisons: a GET with a body reaches the
// upstream, but its answer is neither served from nor stored in the
// cache (X-Cache: Bypass), so it cannot plant an answer for the plain
// GETs of other callers; a chunked body, of no declared length, alike.
func TestCacheRequestWithBodyNeverPoisons(t *testing.T) {
	u := newUpstream(t)
	u.set(func(u *upstream) { u.echoBody = true })
	tg := newCacheEnv(t).gateway(t, cacheSnapshot(cachedStage(map[string]plans.MethodSetting{"*/*": caching(300)}), nil,
		res{"/items", methods(keyedProxy(u, "/items"), "GET")}), nil)
	getBody := func(label string, body io.Reader) response {
		t.Helper()
		res := tg.doBody(t, "GET", "/prod/items", body, "x-api-key", cacheKey1)
		tg.fills.Wait()
		return res
	}
	poison := strings.Repeat("p", 1000)
	want(t, "cold GET with a 1000-byte body", getBody("poison", strings.NewReader(poison)), 200, "Bypass", "v1 GET /items body=1000")
	want(t, "plain GET after it", tg.get(t, "/prod/items"), 200, "Miss", "v1 GET /items body=0")
	want(t, "plain GET again", tg.get(t, "/prod/items"), 200, "Hit", "v1 GET /items body=0")
	want(t, "warm GET with a 1000-byte body", getBody("poison", strings.NewReader(poison)), 200, "Bypass", "v1 GET /items body=1000")
	chunked := io.MultiReader(strings.NewReader(poison)) // no length known: sent chunked
	want(t, "GET with a chunked body", getBody("chunked", chunked), 200, "Bypass", "v1 GET /items body=1000")
	want(t, "plain GET keeps its entry", tg.get(t, "/prod/items"), 200, "Hit", "v1 GET /items body=0")
	u.wantHits(t, "end", 4)
}
