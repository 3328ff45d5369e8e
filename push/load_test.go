package push

import (
	"fmt"
	"testing"

	"tollgate/internal/redistest"
	"tollgate/plans"
)

func TestLoadKeyRecordsAreFoundByLookup(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.MustClient(t)
	hash := func(i int) string { return plans.HashKey(fmt.Sprintf("loadedkey%016d", i), nil) }
	err := LoadKeyRecords(t.Context(), rdb, prefix, 2500, 3, func(i int) (string, *plans.KeyRecord) {
		return hash(i), &plans.KeyRecord{KeyID: fmt.Sprintf("k%d", i), Enabled: true, PlanIDs: []string{"p1"}, Version: 3}
	})
	if err != nil {
		t.Fatal(err)
	}
	r := NewReader(rdb, ReaderOptions{Prefix: prefix})
	for _, i := range []int{0, 1999, 2000, 2499} {
		rec, err := r.Lookup(t.Context(), hash(i))
		if err != nil || rec == nil || rec.KeyID != fmt.Sprintf("k%d", i) || !rec.Enabled {
			t.Errorf("key %d: got %+v, %v", i, rec, err)
		}
	}
	if rec, err := r.Lookup(t.Context(), hash(2500)); rec != nil || err != nil {
		t.Errorf("a key never loaded: got %+v, %v, want unknown", rec, err)
	}
}
