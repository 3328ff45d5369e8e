package gateway

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"tollgate/internal/waittest"
	"tollgate/plans"
)

// TestCacheSingleFlight: concurrent misses of one entry on one node make
// one upstream call and share it, unless the response is private.
func TestCacheSingleFlight(t *testing.T) {
	cases := []struct {
		name    string
		header  http.Header
		wantHit int64
	}{
		{"shared", nil, 1},
		{"private", http.Header{"Set-Cookie": {"s=1"}}, 5},
		{"no-store", http.Header{"Cache-Control": {"no-store"}}, 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := newUpstream(t)
			gate := make(chan struct{})
			u.set(func(u *upstream) { u.header, u.gate = c.header, gate })
			tg := newCacheEnv(t).gateway(t, cacheSnapshot(cachedStage(map[string]plans.MethodSetting{"*/*": caching(300)}), nil,
				res{"/items", methods(keyedProxy(u, "/items"), "GET")}), nil)
			var wg sync.WaitGroup
			got := make([]response, 5)
			for i := range got {
				wg.Go(func() { got[i] = tg.get(t, "/prod/items") })
			}
			waits := tg.metrics.CacheFillWaits.WithLabelValues(testAPI, testStage, "GET", "/items")
			if _, ok := waittest.Poll(5*time.Second, func() bool { return counterValue(t, waits) >= 4 }); !ok {
				n := counterValue(t, waits) // single flight broken: fail, do not hang
				u.set(func(u *upstream) { u.gate = nil })
				close(gate)
				wg.Wait()
				t.Fatalf("waiters on the fill: got %v after 5 s, want 4", n)
			}
			u.set(func(u *upstream) { u.gate = nil })
			close(gate)
			wg.Wait()
			for i, g := range got {
				want(t, "request", g, 200, "Miss", "v1 GET /items")
				if c.header != nil && g.header.Get("Set-Cookie") != c.header.Get("Set-Cookie") {
					t.Errorf("request %d: Set-Cookie: got %q, want %q", i, g.header.Get("Set-Cookie"), c.header.Get("Set-Cookie"))
				}
			}
			u.wantHits(t, "end", c.wantHit)
		})
	}
}
