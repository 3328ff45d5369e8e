package postgres_test

import (
	"strings"
	"testing"

	"tollgate/plans"
)

func TestUsagePlanLifecycle(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	p := &plans.UsagePlan{Name: "gold", Description: "d",
		Throttle:  &plans.Throttle{RateLimit: 1.5, BurstLimit: 3},
		Quota:     &plans.Quota{Limit: 1000, Offset: 2, Period: plans.PeriodWeek},
		ApiStages: []plans.ApiStage{{ApiID: f.api.ID, Stage: "prod", Throttle: map[string]plans.Throttle{"~1pets/GET": {RateLimit: 1, BurstLimit: 1}}}},
		Tags:      map[string]string{"tier": "gold"}}
	must(t, db.CreateUsagePlan(ctx, p))
	if len(p.ID) != plans.ShortIDLen {
		t.Errorf("got id %q, want 6 characters", p.ID)
	}
	ch := lastChange(t, db)
	if !ch.Snapshot || strings.Join(ch.Plans, ",") != p.ID {
		t.Errorf("got change %+v, want snapshot and plan %s", ch, p.ID)
	}
	got, err := db.GetUsagePlan(ctx, p.ID)
	must(t, err)
	if *got.Throttle != *p.Throttle || *got.Quota != *p.Quota || got.Tags["tier"] != "gold" {
		t.Errorf("got %+v, want %+v", got, p)
	}
	if len(got.ApiStages) != 1 || got.ApiStages[0].Throttle["/pets/GET"].BurstLimit != 1 {
		t.Errorf("got api stages %+v, want prod with /pets/GET burst 1 (unescaped)", got.ApiStages)
	}

	f.addStage(t, db, "beta")
	got, err = db.UpdateUsagePlan(ctx, p.ID, func(p *plans.UsagePlan) error {
		p.Throttle, p.Quota = nil, nil
		p.ApiStages = append([]plans.ApiStage{{ApiID: f.api.ID, Stage: "beta"}}, p.ApiStages[0])
		p.ApiStages[1].Throttle = nil
		return nil
	})
	must(t, err)
	stored, err := db.GetUsagePlan(ctx, p.ID)
	must(t, err)
	if stored.Throttle != nil || stored.Quota != nil || len(stored.ApiStages) != 2 ||
		stored.ApiStages[0].Stage != "beta" || stored.ApiStages[1].Throttle != nil {
		t.Errorf("got %+v, want no limits and stages beta, prod (no method throttle)", stored)
	}
	if got.ID != p.ID {
		t.Errorf("got id %q, want %q", got.ID, p.ID)
	}
	must(t, db.DeleteUsagePlan(ctx, p.ID))
	_, err = db.GetUsagePlan(ctx, p.ID)
	wantMsg(t, err, plans.KindNotFound, "Invalid Usage Plan ID specified")
}

func TestUsagePlanInvalid(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	cases := []struct {
		name  string
		p     plans.UsagePlan
		field string
	}{
		{"no name", plans.UsagePlan{}, "name"},
		{"missing stage", plans.UsagePlan{Name: "a", ApiStages: []plans.ApiStage{{ApiID: f.api.ID, Stage: "nope"}}}, "apiStages"},
		{"missing api", plans.UsagePlan{Name: "a", ApiStages: []plans.ApiStage{{ApiID: "nope", Stage: "prod"}}}, "apiStages"},
		{"burst 0", plans.UsagePlan{Name: "a", Throttle: &plans.Throttle{RateLimit: 1}}, "throttle.burstLimit"},
		{"quota offset", plans.UsagePlan{Name: "a", Quota: &plans.Quota{Limit: 1, Offset: 1, Period: plans.PeriodDay}}, "quota.offset"},
		{"quota period", plans.UsagePlan{Name: "a", Quota: &plans.Quota{Limit: 1}}, "quota.period"},
		{"method key", plans.UsagePlan{Name: "a", ApiStages: []plans.ApiStage{{ApiID: f.api.ID, Stage: "prod",
			Throttle: map[string]plans.Throttle{"pets": {}}}}}, "apiStages.throttle"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantErr(t, db.CreateUsagePlan(ctx, &c.p), plans.KindInvalid, c.field)
		})
	}
	p := newPlan(t, db, "a")
	_, err := db.UpdateUsagePlan(ctx, p.ID, func(p *plans.UsagePlan) error {
		p.ApiStages = []plans.ApiStage{{ApiID: f.api.ID, Stage: "nope"}}
		return nil
	})
	wantErr(t, err, plans.KindInvalid, "apiStages")
	_, err = db.UpdateUsagePlan(ctx, "nope", func(*plans.UsagePlan) error { return nil })
	wantMsg(t, err, plans.KindNotFound, "Invalid Usage Plan ID specified")
	wantMsg(t, db.DeleteUsagePlan(ctx, "nope"), plans.KindNotFound, "Invalid Usage Plan ID specified")
}

func TestListUsagePlans(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	a := newPlan(t, db, "a", plans.ApiStage{ApiID: f.api.ID, Stage: "prod"})
	b := newPlan(t, db, "b")
	newPlan(t, db, "c")
	k, _ := newKey(t, db, "k")
	_, err := db.CreateUsagePlanKey(ctx, a.ID, k.ID)
	must(t, err)
	_, err = db.CreateUsagePlanKey(ctx, b.ID, k.ID)
	must(t, err)
	all, _, err := db.ListUsagePlans(ctx, "", pageAll)
	must(t, err)
	if len(all) != 3 {
		t.Errorf("got %d plans, want 3", len(all))
	}
	mine, _, err := db.ListUsagePlans(ctx, k.ID, pageAll)
	must(t, err)
	ids := []string{a.ID, b.ID}
	slicesSort(ids)
	if len(mine) != 2 || mine[0].ID != ids[0] || mine[1].ID != ids[1] {
		t.Errorf("got %+v, want plans %v", mine, ids)
	}
	for _, p := range mine {
		if p.ID == a.ID && len(p.ApiStages) != 1 {
			t.Errorf("got plan a with stages %+v, want prod", p.ApiStages)
		}
	}
	page, next, err := db.ListUsagePlans(ctx, "", plansPage(1))
	must(t, err)
	if len(page) != 1 || next == "" {
		t.Errorf("got %d plans and position %q, want 1 and a position", len(page), next)
	}
}

func TestDeleteUsagePlanNamesItsKeys(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	p := newPlan(t, db, "a", plans.ApiStage{ApiID: f.api.ID, Stage: "prod"})
	k1, h1 := newKey(t, db, "k1")
	k2, h2 := newKey(t, db, "k2")
	for _, k := range []*plans.ApiKey{k1, k2} {
		_, err := db.CreateUsagePlanKey(ctx, p.ID, k.ID)
		must(t, err)
	}
	must(t, db.DeleteUsagePlan(ctx, p.ID))
	ch := lastChange(t, db)
	want := []string{h1, h2}
	slicesSort(want)
	if !ch.Snapshot || strings.Join(ch.KeyHashes, ",") != strings.Join(want, ",") || strings.Join(ch.Plans, ",") != p.ID {
		t.Errorf("got change %+v, want snapshot, plan %s and keys %v", ch, p.ID, want)
	}
	recs, err := db.KeyRecords(ctx, want)
	must(t, err)
	if len(recs[h1].PlanIDs) != 0 || len(recs[h2].PlanIDs) != 0 {
		t.Errorf("got records %+v %+v, want no plans left", recs[h1], recs[h2])
	}
}

// The native cost fields, the customer quota and the method costs are
// stored, read back, put in the snapshot the gateways are pushed, and
// dropped again; a method cost must name a deployed method.
func TestUsagePlanCostFieldsAreStored(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	p := &plans.UsagePlan{Name: "llm", Quota: &plans.Quota{Limit: 1000, Period: plans.PeriodMonth},
		CostSettings:   &plans.CostSettings{JSON: []string{"usage.input_tokens", "usage.output_tokens"}, Reserve: new(int32(50)), IfMissing: "0"},
		CustomerBudget: &plans.CustomerQuota{Limit: 300},
		ApiStages:      []plans.ApiStage{{ApiID: f.api.ID, Stage: "prod", MethodCosts: map[string]int32{"~1pets/GET": 4}}}}
	must(t, db.CreateUsagePlan(ctx, p))
	got, err := db.GetUsagePlan(ctx, p.ID)
	must(t, err)
	c := got.Cost()
	if got.CostSettings == nil || len(c.JSON) != 2 || c.Reserve != 50 || !c.IfMissingZero || got.CustomerBudget == nil || got.CustomerBudget.Limit != 300 {
		t.Errorf("got cost %+v (%+v), customer quota %+v; want the fields as created", got.CostSettings, c, got.CustomerBudget)
	}
	if w, ok := got.MethodCost(f.api.ID, "prod", "/pets", "GET"); !ok || w.Decided() != 4 {
		t.Errorf("got method costs %v, want /pets/GET 4", got.ApiStages[0].MethodCosts)
	}
	snap, err := db.Snapshot(ctx)
	must(t, err)
	if sp := snap.Plans[p.ID]; sp == nil || sp.CostSettings == nil || sp.CustomerBudget == nil || sp.ApiStages[0].MethodCosts["/pets/GET"] != 4 {
		t.Errorf("snapshot plan %+v, want its cost fields", sp)
	}
	_, err = db.UpdateUsagePlan(ctx, p.ID, func(p *plans.UsagePlan) error {
		p.ApiStages[0].MethodCosts = map[string]int32{"/nope/GET": 1}
		return nil
	})
	wantErr(t, err, plans.KindInvalid, "/apiStages/"+f.api.ID+":prod/methodCosts/~1nope/GET")
	_, err = db.UpdateUsagePlan(ctx, p.ID, func(p *plans.UsagePlan) error {
		p.CostSettings, p.CustomerBudget, p.ApiStages[0].MethodCosts = nil, nil, nil
		return nil
	})
	must(t, err)
	got, err = db.GetUsagePlan(ctx, p.ID)
	must(t, err)
	if got.CostSettings != nil || got.CustomerBudget != nil || got.ApiStages[0].MethodCosts != nil {
		t.Errorf("got %+v, want no cost fields", got)
	}
}
