package cache

import (
	"context"
	"sync"
	"testing"
)

func TestFlight(t *testing.T) {
	var f Flight
	c, leader := f.Join("k")
	if !leader {
		t.Fatalf("first Join: got leader false, want true")
	}
	const n = 4
	var wg sync.WaitGroup
	got := make([]*Shared, n)
	for i := range n {
		w, lead := f.Join("k")
		if lead || w != c {
			t.Fatalf("Join %d: got leader %v, want a waiter of the same call", i, lead)
		}
		wg.Go(func() { got[i] = w.Wait(context.Background()) })
	}
	res := &Shared{Variant: "v"}
	f.Done("k", c, func() *Shared { return res })
	wg.Wait()
	for i, g := range got {
		if g != res {
			t.Errorf("waiter %d: got %v, want the leader's result", i, g)
		}
	}
	if _, lead := f.Join("k"); !lead {
		t.Errorf("Join after Done: got a waiter, want a new leader")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w, _ := f.Join("k")
	if g := w.Wait(ctx); g != nil {
		t.Errorf("Wait with an ended context: got %v, want nil", g)
	}
}

// A leader nobody joined shares nothing: Done does not build its result.
func TestFlightLeaderAloneBuildsNoResult(t *testing.T) {
	var f Flight
	c, _ := f.Join("k")
	f.Done("k", c, func() *Shared {
		t.Errorf("share called for a call nobody joined")
		return nil
	})
	if g := c.Wait(context.Background()); g != nil {
		t.Errorf("Wait: got %v, want nil", g)
	}
}
