package gateway

import (
	"bytes"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tollgate/plans"
)

// rangeDoc is the document of the Range tests: 135 bytes, each position
// distinct enough that a wrong slice shows.
var rangeDoc = strings.Repeat("0123456789abcdefghijklmnopqrstuvwxyz", 4)[:135]

// A Range request never fills the cache, and a partial answer is never
// served to anyone else: a 206 stored under the plain GET's key would
// truncate every client's response for the entry's TTL (docs/behaviour.md,
// "Response cache").
func TestCacheRangeRequestsNeverStoredOrServedPartial(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	up := httptestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.ServeContent(w, r, "doc", time.Unix(0, 0), bytes.NewReader([]byte(rangeDoc))) // honours Range
	}))
	snap := cacheSnapshot(cachedStage(map[string]plans.MethodSetting{"*/*": caching(300)}), nil,
		res{"/doc", methods(proxy(true, up.URL+"/doc"), "GET")})
	env := newCacheEnv(t)
	n1, n2 := env.gateway(t, snap, nil), env.gateway(t, snap, nil)

	part := n1.get(t, "/prod/doc", "Range", "bytes=0-9")
	if part.status != http.StatusPartialContent || part.body != rangeDoc[:10] {
		t.Fatalf("Range 0-9: got %d %q, want 206 %q", part.status, part.body, rangeDoc[:10])
	}
	if x := part.header.Get("X-Cache"); x != "Bypass" {
		t.Errorf("Range 0-9: X-Cache: got %q, want Bypass", x)
	}
	for i, tg := range []*testGateway{n1, n2} {
		got := tg.get(t, "/prod/doc")
		if got.status != http.StatusOK || got.body != rangeDoc || got.header.Get("Content-Range") != "" {
			t.Errorf("node %d plain GET after a Range request: got %d %q Content-Range %q, want 200 and the whole document",
				i+1, got.status, got.body, got.header.Get("Content-Range"))
		}
	}
	if x := n2.get(t, "/prod/doc").header.Get("X-Cache"); x != "Hit" {
		t.Errorf("plain GET once a full response is stored: X-Cache %q, want Hit", x)
	}
	before := hits.Load()
	other := n1.get(t, "/prod/doc", "Range", "bytes=5-7")
	if other.status != http.StatusPartialContent || other.body != rangeDoc[5:8] {
		t.Errorf("Range 5-7 with a full entry stored: got %d %q, want 206 %q", other.status, other.body, rangeDoc[5:8])
	}
	if hits.Load() != before+1 {
		t.Errorf("Range 5-7: upstream hits %d -> %d, want one call (a Range request bypasses the cache)", before, hits.Load())
	}
}

// An upstream that answers 206 (or any status but 200) to a plain GET is
// not stored either.
func TestCacheStoresOnly200(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusCreated, http.StatusNoContent, http.StatusPartialContent} {
		u := newUpstream(t)
		u.set(func(u *upstream) {
			u.statuses = []int{status}
			if status == http.StatusPartialContent {
				u.header = http.Header{"Content-Range": {"bytes 0-12/135"}}
			}
		})
		tg := newCacheEnv(t).gateway(t, cacheSnapshot(cachedStage(map[string]plans.MethodSetting{"*/*": caching(300)}), nil,
			res{"/items", methods(keyedProxy(u, "/items"), "GET")}), nil)
		first := tg.get(t, "/prod/items")
		if first.status != status {
			t.Fatalf("%d: first: got %d", status, first.status)
		}
		u.set(func(u *upstream) { u.header = nil })
		second := tg.get(t, "/prod/items")
		if second.status != http.StatusOK || second.header.Get("X-Cache") != "Miss" {
			t.Errorf("after an upstream %d: got %d X-Cache %q, want 200 Miss (only 200 is stored)", status, second.status, second.header.Get("X-Cache"))
		}
	}
}
