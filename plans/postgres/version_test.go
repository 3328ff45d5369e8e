package postgres_test

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"tollgate/plans"
)

// Every data-plane write is one version with one change row, in order.
func TestVersionsAndChanges(t *testing.T) {
	db := newDB(t)
	start := version(t, db)
	f := newFixture(t, db) // CreateRestApi, CreateDeployment with a stage
	p := newPlan(t, db, "p", plans.ApiStage{ApiID: f.api.ID, Stage: "prod"})
	k, hash := newKey(t, db, "k")
	_, err := db.CreateUsagePlanKey(ctx, p.ID, k.ID)
	must(t, err)
	_, err = db.UpdateUsagePlan(ctx, p.ID, func(p *plans.UsagePlan) error { p.Description = "x"; return nil })
	must(t, err)

	cs, err := db.Changes(ctx, start, 100)
	must(t, err)
	type want struct {
		snapshot            bool
		keys, plans, stages string
	}
	wants := []want{
		{snapshot: true},
		{snapshot: true, stages: f.api.ID + ":prod"},
		{snapshot: true, plans: p.ID},
		{keys: hash},
		{keys: hash},
		{snapshot: true, plans: p.ID},
	}
	if len(cs) != len(wants) {
		t.Fatalf("got %d changes %+v, want %d", len(cs), cs, len(wants))
	}
	for i, w := range wants {
		c := cs[i]
		got := want{c.Snapshot, strings.Join(c.KeyHashes, ","), strings.Join(c.Plans, ","), strings.Join(c.Stages, ",")}
		if c.Version != start+int64(i)+1 || got != w {
			t.Errorf("change %d: got version %d %+v, want version %d %+v", i, c.Version, got, start+int64(i)+1, w)
		}
	}
	limited, err := db.Changes(ctx, start, 2)
	must(t, err)
	if len(limited) != 2 || limited[0].Version != start+1 {
		t.Errorf("got %+v with limit 2, want versions %d and %d", limited, start+1, start+2)
	}
	none, err := db.Changes(ctx, version(t, db), 10)
	must(t, err)
	if len(none) != 0 {
		t.Errorf("got %+v after the current version, want none", none)
	}
}

// Concurrent writes get distinct consecutive versions.
func TestConcurrentVersions(t *testing.T) {
	db := newDB(t)
	start := version(t, db)
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- db.CreateRestApi(ctx, &plans.RestApi{Name: "a"})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, err)
	}
	cs, err := db.Changes(ctx, start, 100)
	must(t, err)
	if len(cs) != n {
		t.Fatalf("got %d changes, want %d", len(cs), n)
	}
	for i, c := range cs {
		if c.Version != start+int64(i)+1 {
			t.Fatalf("change %d: got version %d, want %d", i, c.Version, start+int64(i)+1)
		}
	}
}

// A refused write leaves the version alone.
func TestRefusedWriteKeepsVersion(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	v := version(t, db)
	_ = db.CreateUsagePlan(ctx, &plans.UsagePlan{Name: "a", ApiStages: []plans.ApiStage{{ApiID: f.api.ID, Stage: "nope"}}})
	_, _ = db.UpdateStage(ctx, f.api.ID, "prod", func(s *plans.Stage) error { return plans.Invalid("patchOperations", "no") })
	_ = db.DeleteRestApi(ctx, "nope")
	if got := version(t, db); got != v {
		t.Errorf("got version %d, want %d", got, v)
	}
}

// PruneChanges deletes only changes both old enough and more than keep
// versions behind; the rest stay readable in order.
func TestPruneChanges(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	for i := range 4 {
		newPlan(t, db, "p"+strconv.Itoa(i), plans.ApiStage{ApiID: f.api.ID, Stage: "prod"})
	}
	cur := version(t, db)
	// every transaction advances the test clock one second: nothing is an hour old
	n, err := db.PruneChanges(ctx, 2, time.Hour)
	must(t, err)
	if n != 0 {
		t.Fatalf("pruned %d changes younger than an hour, want 0", n)
	}
	n, err = db.PruneChanges(ctx, 2, 0)
	must(t, err)
	if n != cur-2 {
		t.Fatalf("pruned %d, want %d (all but the last 2 of %d)", n, cur-2, cur)
	}
	cs, err := db.Changes(ctx, 0, 100)
	must(t, err)
	if len(cs) != 2 || cs[0].Version != cur-1 || cs[1].Version != cur {
		t.Fatalf("changes left: %+v, want versions %d and %d", cs, cur-1, cur)
	}
	if n, err := db.PruneChanges(ctx, -5, 0); err != nil || n != 1 {
		t.Fatalf("prune with keep < 0: %d, %v, want 1 deleted (the current change stays)", n, err)
	}
	if cs, err := db.Changes(ctx, 0, 100); err != nil || len(cs) != 1 || cs[0].Version != cur {
		t.Fatalf("changes left: %+v (%v), want the current version %d", cs, err, cur)
	}
}
