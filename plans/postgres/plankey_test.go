package postgres_test

import (
	"strings"
	"sync"
	"testing"

	"tollgate/plans"
)

func TestUsagePlanKeyLifecycle(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	p := newPlan(t, db, "gold", plans.ApiStage{ApiID: f.api.ID, Stage: "prod"})
	k, hash := newKey(t, db, "partner")
	pk, err := db.CreateUsagePlanKey(ctx, p.ID, k.ID)
	must(t, err)
	if *pk != (plans.UsagePlanKey{ID: k.ID, Type: "API_KEY", Name: "partner"}) {
		t.Errorf("got %+v, want id %s, API_KEY, partner", pk, k.ID)
	}
	ch := lastChange(t, db)
	if ch.Snapshot || strings.Join(ch.KeyHashes, ",") != hash || len(ch.Plans) != 0 {
		t.Errorf("got change %+v, want key %s only", ch, hash)
	}
	got, err := db.GetUsagePlanKey(ctx, p.ID, k.ID)
	must(t, err)
	if *got != *pk {
		t.Errorf("got %+v, want %+v", got, pk)
	}
	_, err = db.CreateUsagePlanKey(ctx, p.ID, k.ID)
	wantErr(t, err, plans.KindConflict, "")
	must(t, db.DeleteUsagePlanKey(ctx, p.ID, k.ID))
	_, err = db.GetUsagePlanKey(ctx, p.ID, k.ID)
	wantMsg(t, err, plans.KindNotFound, "Invalid API Key identifier specified")
	wantMsg(t, db.DeleteUsagePlanKey(ctx, p.ID, k.ID), plans.KindNotFound, "Invalid API Key identifier specified")
	if ch := lastChange(t, db); strings.Join(ch.KeyHashes, ",") != hash {
		t.Errorf("got change %+v, want key %s", ch, hash)
	}
}

func TestUsagePlanKeyNotFound(t *testing.T) {
	db := newDB(t)
	p := newPlan(t, db, "a")
	k, _ := newKey(t, db, "k")
	cases := []struct {
		name, plan, key, msg string
	}{
		{"plan", "nope", k.ID, "Invalid Usage Plan ID specified"},
		{"key", p.ID, "nope", "Invalid API Key identifier specified"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := db.CreateUsagePlanKey(ctx, c.plan, c.key)
			wantMsg(t, err, plans.KindNotFound, c.msg)
			_, _, err = db.ListUsagePlanKeys(ctx, "nope", "", pageAll)
			wantMsg(t, err, plans.KindNotFound, "Invalid Usage Plan ID specified")
		})
	}
}

func TestListUsagePlanKeys(t *testing.T) {
	db := newDB(t)
	p := newPlan(t, db, "a")
	for _, n := range []string{"alpha", "beta", "alpine"} {
		k, _ := newKey(t, db, n)
		_, err := db.CreateUsagePlanKey(ctx, p.ID, k.ID)
		must(t, err)
	}
	newKey(t, db, "alps") // not in the plan
	ks, _, err := db.ListUsagePlanKeys(ctx, p.ID, "al", pageAll)
	must(t, err)
	var names []string
	for _, k := range ks {
		names = append(names, k.Name)
	}
	slicesSort(names)
	if strings.Join(names, ",") != "alpha,alpine" {
		t.Errorf("got %v, want alpha, alpine", names)
	}
	page, next, err := db.ListUsagePlanKeys(ctx, p.ID, "", plans.Page{Limit: 2})
	must(t, err)
	if len(page) != 2 || next == "" {
		t.Errorf("got %d keys and position %q, want 2 and a position", len(page), next)
	}
}

// A key may be in many plans, but in one plan per (api, stage) at most,
// whichever way the second claim arrives.
func TestOnePlanPerStage(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	f.addStage(t, db, "beta")
	prod := plans.ApiStage{ApiID: f.api.ID, Stage: "prod"}
	beta := plans.ApiStage{ApiID: f.api.ID, Stage: "beta"}
	a := newPlan(t, db, "a", prod)
	b := newPlan(t, db, "b", beta)
	c := newPlan(t, db, "c", prod)
	k, _ := newKey(t, db, "k")
	_, err := db.CreateUsagePlanKey(ctx, a.ID, k.ID)
	must(t, err)
	_, err = db.CreateUsagePlanKey(ctx, b.ID, k.ID) // other stage: fine
	must(t, err)

	t.Run("CreateUsagePlanKey", func(t *testing.T) {
		_, err := db.CreateUsagePlanKey(ctx, c.ID, k.ID)
		wantErr(t, err, plans.KindConflict, "")
		if !strings.Contains(plans.ErrorMessage(err), f.api.ID+":prod") {
			t.Errorf("got message %q, want it to name %s:prod", plans.ErrorMessage(err), f.api.ID)
		}
	})
	t.Run("add apiStages", func(t *testing.T) {
		_, err := db.UpdateUsagePlan(ctx, b.ID, func(p *plans.UsagePlan) error {
			p.ApiStages = append(p.ApiStages, prod)
			return nil
		})
		wantErr(t, err, plans.KindConflict, "")
		got, err := db.GetUsagePlan(ctx, b.ID)
		must(t, err)
		if len(got.ApiStages) != 1 {
			t.Errorf("got stages %+v after a refused update, want beta only", got.ApiStages)
		}
	})
	t.Run("freed by removing the stage", func(t *testing.T) {
		_, err := db.UpdateUsagePlan(ctx, a.ID, func(p *plans.UsagePlan) error { p.ApiStages = nil; return nil })
		must(t, err)
		_, err = db.CreateUsagePlanKey(ctx, c.ID, k.ID)
		must(t, err)
	})
	t.Run("freed by removing the key", func(t *testing.T) {
		_, err := db.UpdateUsagePlan(ctx, a.ID, func(p *plans.UsagePlan) error { p.ApiStages = []plans.ApiStage{prod}; return nil })
		wantErr(t, err, plans.KindConflict, "")
		must(t, db.DeleteUsagePlanKey(ctx, a.ID, k.ID))
		_, err = db.UpdateUsagePlan(ctx, a.ID, func(p *plans.UsagePlan) error { p.ApiStages = []plans.ApiStage{prod}; return nil })
		must(t, err)
	})
}

// Concurrent claims of one (key, api, stage) through both paths: key k is
// in plan b for prod; at the same time k joins plan a and a gains prod.
// Each alone is fine; together they would put k in two plans for prod, so
// exactly one may win.
func TestOnePlanPerStageConcurrent(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	prod := plans.ApiStage{ApiID: f.api.ID, Stage: "prod"}
	for round := range 10 {
		a := newPlan(t, db, "a")
		b := newPlan(t, db, "b", prod)
		k, _ := newKey(t, db, "k")
		_, err := db.CreateUsagePlanKey(ctx, b.ID, k.ID)
		must(t, err)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, errs[0] = db.CreateUsagePlanKey(ctx, a.ID, k.ID)
		}()
		go func() {
			defer wg.Done()
			_, errs[1] = db.UpdateUsagePlan(ctx, a.ID, func(p *plans.UsagePlan) error {
				p.ApiStages = []plans.ApiStage{prod}
				return nil
			})
		}()
		wg.Wait()
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
			} else if plans.ErrorKind(err) != plans.KindConflict {
				t.Fatalf("round %d: got %v, want success or conflict", round, err)
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: got %d successes (%v), want exactly 1", round, ok, errs)
		}
		// Free the stage for the next round.
		must(t, db.DeleteUsagePlan(ctx, a.ID))
		must(t, db.DeleteUsagePlan(ctx, b.ID))
	}
}
