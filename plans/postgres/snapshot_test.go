package postgres_test

import (
	"errors"
	"slices"
	"testing"

	"tollgate/plans"
)

func TestSnapshot(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	bare := newAPI(t, db, "bare")
	_, err := db.UpdateStage(ctx, f.api.ID, "prod", func(s *plans.Stage) error {
		s.CacheClusterEnabled = true
		return nil
	})
	must(t, err)
	// Undeployed edits do not reach the snapshot.
	addMethod(t, db, f.api.ID, f.root.ID, "POST", false)
	p := newPlan(t, db, "gold", plans.ApiStage{ApiID: f.api.ID, Stage: "prod"})
	_, err = db.UpdateAccount(ctx, func(a *plans.Account) error {
		a.ThrottleSettings = plans.Throttle{RateLimit: 7, BurstLimit: 8}
		return nil
	})
	must(t, err)

	s, err := db.Snapshot(ctx)
	must(t, err)
	must(t, s.Validate())
	if s.Version != version(t, db) {
		t.Errorf("got version %d, want %d", s.Version, version(t, db))
	}
	if s.Account != (plans.Throttle{RateLimit: 7, BurstLimit: 8}) {
		t.Errorf("got account %+v, want 7/8", s.Account)
	}
	if len(s.Apis) != 2 || s.Apis[bare.ID] == nil || len(s.Apis[bare.ID].Stages) != 0 {
		t.Fatalf("got apis %+v, want the fixture's and %s without stages", s.Apis, bare.ID)
	}
	api := s.Apis[f.api.ID]
	st := api.Stages["prod"]
	if api.ApiKeySource != "HEADER" || st == nil || !st.Stage.CacheClusterEnabled || st.Stage.DeploymentID != f.deployment.ID {
		t.Fatalf("got api %+v stage %+v, want HEADER and prod with the cache on", api, st)
	}
	var paths []string
	for _, r := range st.Resources {
		paths = append(paths, r.Path)
		if r.Path == "/" && r.ResourceMethods["POST"] != nil {
			t.Errorf("got POST / in the snapshot, want only deployed methods")
		}
		if r.Path == "/pets" && (r.ResourceMethods["GET"] == nil || !r.ResourceMethods["GET"].APIKeyRequired) {
			t.Errorf("got /pets methods %+v, want GET requiring a key", r.ResourceMethods)
		}
	}
	if !slices.Equal(paths, []string{"/", "/pets"}) {
		t.Errorf("got paths %v, want / and /pets", paths)
	}
	if got := s.Plans[p.ID]; got == nil || !slices.ContainsFunc(got.ApiStages, func(as plans.ApiStage) bool { return as.ApiID == f.api.ID && as.Stage == "prod" }) {
		t.Errorf("got plans %+v, want %s covering prod", s.Plans, p.ID)
	}
}

func TestKeyRecords(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	f.addStage(t, db, "beta")
	a := newPlan(t, db, "a", plans.ApiStage{ApiID: f.api.ID, Stage: "prod"})
	b := newPlan(t, db, "b", plans.ApiStage{ApiID: f.api.ID, Stage: "beta"})
	k1, h1 := newKey(t, db, "k1")
	k2, h2 := newKey(t, db, "k2")
	k3, h3 := newKey(t, db, "gone")
	for _, pk := range [][2]string{{b.ID, k1.ID}, {a.ID, k1.ID}} {
		_, err := db.CreateUsagePlanKey(ctx, pk[0], pk[1])
		must(t, err)
	}
	_, err := db.UpdateApiKey(ctx, k2.ID, func(k *plans.ApiKey) error {
		k.Enabled = false
		k.Tags = map[string]string{plans.InvalidateCacheTag: "TRUE"}
		return nil
	})
	must(t, err)
	must(t, db.DeleteApiKey(ctx, k3.ID))
	v := version(t, db)

	recs, err := db.KeyRecords(ctx, []string{h1, h2, h3, "unknown"})
	must(t, err)
	if len(recs) != 2 {
		t.Fatalf("got %d records, want 2 (deleted and unknown hashes absent)", len(recs))
	}
	wantPlans := []string{a.ID, b.ID}
	slices.Sort(wantPlans)
	r1, r2 := recs[h1], recs[h2]
	if r1.KeyID != k1.ID || !r1.Enabled || !slices.Equal(r1.PlanIDs, wantPlans) || r1.InvalidateCache || r1.Version != v {
		t.Errorf("got %+v, want key %s enabled in %v at version %d", r1, k1.ID, wantPlans, v)
	}
	if r2.KeyID != k2.ID || r2.Enabled || r2.PlanIDs == nil || len(r2.PlanIDs) != 0 || !r2.InvalidateCache {
		t.Errorf("got %+v, want key %s disabled, no plans, may invalidate", r2, k2.ID)
	}

	seen := map[string]*plans.KeyRecord{}
	var order []string
	must(t, db.AllKeyRecords(ctx, func(hash string, rec *plans.KeyRecord) error {
		seen[hash] = rec
		order = append(order, hash)
		return nil
	}))
	if len(seen) != 2 || seen[h1].KeyID != k1.ID || seen[h2].KeyID != k2.ID || !slices.IsSorted(order) {
		t.Errorf("got %v in order %v, want the 2 live keys in hash order", seen, order)
	}
	stop := errors.New("stop")
	calls := 0
	err = db.AllKeyRecords(ctx, func(string, *plans.KeyRecord) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("got %v after %d calls, want fn's error after 1", err, calls)
	}
}
