package lease

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"tollgate/internal/redistest"
	"tollgate/limit"
	"tollgate/plans"
)

// Many keys taken in turn from 8 workers on each of two nodes, as a
// gateway with many partners decides them (each key mostly below a
// lease's rate, so their decisions share runs: docs/leases.md, "Many
// keys"): each key's quota admits exactly its limit, and usage counts
// exactly that once the nodes gave their leases back.
func TestManyKeysInTurnAdmitExactlyTheirQuotas(t *testing.T) {
	t.Parallel()
	eachForm(t, forms, func(t *testing.T, b redistest.Backend, f form) {
		const keys, quota = 100, 40
		nodes := mustNodes(t, b, 2, nil)
		keyID := func(i int) string { return fmt.Sprintf("key%03d", i) }
		admitted := make([]atomic.Int64, keys)
		var total, next atomic.Int64
		stop := quiet(&total)
		var wg sync.WaitGroup
		for _, n := range nodes {
			for range 8 {
				wg.Go(func() {
					for !stop() {
						i := int(next.Add(1) % keys)
						req := f.hot(1e6, 1<<30, quota)
						req.KeyID = keyID(i)
						d, err := n.top.Decide(t.Context(), req)
						if err != nil {
							t.Errorf("Decide: %v", err)
							return
						}
						if d.Allowed {
							admitted[i].Add(1)
							total.Add(1)
						}
					}
				})
			}
		}
		wg.Wait()
		t.Logf("%d round trips for %d admitted", trips(nodes), total.Load())
		for _, n := range nodes {
			n.t.Close()
		}
		for i := range keys {
			if got := admitted[i].Load(); got != quota {
				t.Errorf("%s admitted: got %d, want %d", keyID(i), got, quota)
			}
			u, err := nodes[0].e.KeyUsage(t.Context(), keyID(i), "p1", &limit.Quota{Limit: quota, Period: plans.PeriodDay})
			if err != nil {
				t.Fatal(err)
			}
			if u.Today != quota || u.Quota.Remaining != 0 {
				t.Errorf("%s usage %d and quota left %d, want %d and 0", keyID(i), u.Today, u.Quota.Remaining, quota)
			}
		}
	})
}
