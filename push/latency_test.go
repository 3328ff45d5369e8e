package push

import (
	"context"
	"slices"
	"testing"
	"time"

	"tollgate/internal/waittest"
)

// TestPropagationLatency measures, over 100 admin changes, the time from
// the start of Publish (the admin's commit is done) to the moment a
// gateway's Reader enforces it: a disabled or re-enabled key seen by
// Lookup, or a new snapshot handed over. docs/behaviour.md ("Config push") targets p99 ≤ 250 ms.
func TestPropagationLatency(t *testing.T) {
	t.Parallel()
	rdb, prefix, src, p := publisherWorld(t)
	h := testHash(1)
	src.putKey(h, true, "plan01")
	mustPublish(t, p)
	rc := &recorder{}
	r := startReader(t, rdb, rc.options(prefix))
	if got := mustLookup(t, r, h); got == nil || !got.Enabled {
		t.Fatalf("Lookup: got %+v, want the enabled record", got)
	}

	const n = 100
	lat := make([]time.Duration, 0, n)
	for i := range n {
		var seen func() bool
		if i%2 == 0 {
			enabled := i%4 != 0
			src.putKey(h, enabled, "plan01")
			seen = func() bool { return mustLookup(t, r, h).Enabled == enabled }
		} else {
			v := src.setAccountRate(float64(100 + i))
			seen = func() bool { return r.Version() >= v }
		}
		start := time.Now()
		if err := p.Publish(context.Background()); err != nil {
			t.Fatalf("Publish: %v", err)
		}
		waittest.Until(t, "change enforced", time.Second, seen)
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	p50, p99 := lat[n/2], lat[n*99/100-1]
	t.Logf("propagation over %d changes: p50 %v, p99 %v, max %v", n, p50, p99, lat[n-1])
	if p99 > 250*time.Millisecond {
		t.Errorf("p99 propagation: got %v, want at most 250ms", p99)
	}
}
