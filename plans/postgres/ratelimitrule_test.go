package postgres_test

import (
	"fmt"
	"slices"
	"testing"

	"tollgate/plans"
	"tollgate/plans/postgres"
)

func ptr[T any](v T) *T { return &v }

// ipRule is a sliding-window rule on GET /pets by client address.
func ipRule(name string) *plans.RateLimitRule {
	return &plans.RateLimitRule{Name: name, ResourcePath: "/pets", HTTPMethod: "GET", KeyBy: []string{"ip"},
		Algorithm: plans.SlidingWindow, Limit: ptr[int32](10), WindowSeconds: ptr[int32](60)}
}

// stageRules returns the rules of (api, stage) in the snapshot, by name.
func stageRules(t *testing.T, db *postgres.DB, apiID, stage string) map[string]plans.StageRule {
	t.Helper()
	s, err := db.Snapshot(ctx)
	must(t, err)
	must(t, s.Validate())
	out := map[string]plans.StageRule{}
	if st := s.Apis[apiID].Stages[stage]; st != nil {
		for _, r := range st.RateLimitRules {
			out[r.Name] = r
		}
	}
	return out
}

func TestRateLimitRuleLifecycleRecordsStageChanges(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	r := &plans.RateLimitRule{Name: "everyone", Algorithm: plans.Concurrency, Limit: ptr[int32](5)}
	must(t, db.CreateRateLimitRule(ctx, f.api.ID, "prod", r))
	if len(r.ID) != plans.ShortIDLen || r.ResourcePath != "*" || r.HTTPMethod != "*" || r.Mode != plans.ModeEnforce || r.KeyBy == nil {
		t.Fatalf("created rule: got %+v, want an id and the defaults filled", r)
	}
	if c := lastChange(t, db); !c.Snapshot || !slices.Equal(c.Stages, []string{f.api.ID + ":prod"}) {
		t.Errorf("create: got change %+v, want a snapshot change naming the stage", c)
	}
	got, err := db.GetRateLimitRule(ctx, f.api.ID, "prod", r.ID)
	must(t, err)
	if got.Name != "everyone" || *got.Limit != 5 {
		t.Errorf("get: got %+v", got)
	}
	before := stageRules(t, db, f.api.ID, "prod")["everyone"].CounterID

	v := version(t, db)
	_, err = db.UpdateRateLimitRule(ctx, f.api.ID, "prod", r.ID, func(r *plans.RateLimitRule) error {
		r.Limit, r.Mode, r.ResourcePath = ptr[int32](9), plans.ModeShadow, "/pets"
		return nil
	})
	must(t, err)
	if after := stageRules(t, db, f.api.ID, "prod")["everyone"]; after.CounterID != before || *after.Limit != 9 || !after.Shadow() {
		t.Errorf("a change of limit, mode and path: got %+v (counter %s before), want the same counters", after, before)
	}
	if version(t, db) != v+1 {
		t.Errorf("update: got version %d, want %d", version(t, db), v+1)
	}
	_, err = db.UpdateRateLimitRule(ctx, f.api.ID, "prod", r.ID, func(r *plans.RateLimitRule) error {
		r.KeyBy = []string{"apiKey"}
		return nil
	})
	must(t, err)
	if after := stageRules(t, db, f.api.ID, "prod")["everyone"].CounterID; after == before {
		t.Errorf("a change of keyBy kept counter id %s, want a new one", after)
	}

	must(t, db.DeleteRateLimitRule(ctx, f.api.ID, "prod", r.ID))
	_, err = db.GetRateLimitRule(ctx, f.api.ID, "prod", r.ID)
	wantMsg(t, err, plans.KindNotFound, "Invalid Rate Limit Rule identifier specified")
	if c := lastChange(t, db); !c.Snapshot || !slices.Equal(c.Stages, []string{f.api.ID + ":prod"}) {
		t.Errorf("delete: got change %+v, want a snapshot change naming the stage", c)
	}
}

func TestRateLimitRuleAlgorithmChangeRestartsCounters(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	r := ipRule("ip")
	must(t, db.CreateRateLimitRule(ctx, f.api.ID, "prod", r))
	before := stageRules(t, db, f.api.ID, "prod")["ip"].CounterID
	_, err := db.UpdateRateLimitRule(ctx, f.api.ID, "prod", r.ID, func(r *plans.RateLimitRule) error {
		r.Algorithm = plans.FixedWindow
		return nil
	})
	must(t, err)
	if after := stageRules(t, db, f.api.ID, "prod")["ip"].CounterID; after == before {
		t.Errorf("a change of algorithm kept counter id %s, want a new one", after)
	}
}

func TestRateLimitRuleRefusals(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	must(t, db.CreateRateLimitRule(ctx, f.api.ID, "prod", ipRule("ip")))
	v := version(t, db)

	bad := ipRule("other")
	bad.ResourcePath = "/nope"
	wantErr(t, db.CreateRateLimitRule(ctx, f.api.ID, "prod", bad), plans.KindInvalid, "resourcePath")
	wantErr(t, db.CreateRateLimitRule(ctx, f.api.ID, "prod", ipRule("ip")), plans.KindConflict, "-")
	wantMsg(t, db.CreateRateLimitRule(ctx, f.api.ID, "beta", ipRule("x")), plans.KindNotFound, "Invalid Stage identifier specified")
	wantMsg(t, db.CreateRateLimitRule(ctx, "nope", "prod", ipRule("x")), plans.KindNotFound, "Invalid API identifier specified")
	noParam := ipRule("x")
	noParam.WindowSeconds = nil
	wantErr(t, db.CreateRateLimitRule(ctx, f.api.ID, "prod", noParam), plans.KindInvalid, "windowSeconds")
	_, err := db.UpdateRateLimitRule(ctx, f.api.ID, "prod", "nope00", func(*plans.RateLimitRule) error { return nil })
	wantErr(t, err, plans.KindNotFound, "-")
	if got := version(t, db); got != v {
		t.Errorf("refused writes moved the version from %d to %d", v, got)
	}
}

func TestAStageHoldsAtMostAHundredRules(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	for i := range plans.MaxRateLimitRules {
		must(t, db.CreateRateLimitRule(ctx, f.api.ID, "prod", ipRule(fmt.Sprintf("r%03d", i))))
	}
	wantErr(t, db.CreateRateLimitRule(ctx, f.api.ID, "prod", ipRule("one-more")), plans.KindInvalid, "ratelimitrules")
	page1, next, err := db.ListRateLimitRules(ctx, f.api.ID, "prod", plans.Page{Limit: 60})
	must(t, err)
	page2, last, err := db.ListRateLimitRules(ctx, f.api.ID, "prod", plans.Page{Position: next, Limit: 60})
	must(t, err)
	if len(page1) != 60 || next == "" || len(page2) != 40 || last != "" || page1[59].ID >= page2[0].ID {
		t.Errorf("pages: got %d (next %q) and %d (next %q), want 60 and 40 in id order", len(page1), next, len(page2), last)
	}
}

func TestRulesGoWithTheirStage(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	f.addStage(t, db, "beta")
	must(t, db.CreateRateLimitRule(ctx, f.api.ID, "beta", ipRule("ip")))
	if len(stageRules(t, db, f.api.ID, "beta")) != 1 {
		t.Fatal("the snapshot lacks the rule")
	}
	must(t, db.DeleteStage(ctx, f.api.ID, "beta"))
	f.addStage(t, db, "beta")
	rules, _, err := db.ListRateLimitRules(ctx, f.api.ID, "beta", pageAll)
	must(t, err)
	if len(rules) != 0 || len(stageRules(t, db, f.api.ID, "beta")) != 0 {
		t.Errorf("a stage created again got the deleted stage's rules: %+v", rules)
	}
}

// importDef is a definition with GET /pets and the given rules.
func importDef(rules map[string][]plans.RateLimitRule) *plans.ApiDefinition {
	get := &plans.Method{HTTPMethod: "GET", MethodIntegration: &plans.Integration{Type: plans.IntegrationMock}}
	return &plans.ApiDefinition{Name: "imported", Resources: []plans.Resource{{Path: "/"},
		{Path: "/pets", ResourceMethods: map[string]*plans.Method{"GET": get}}}, RateLimitRules: rules}
}

func TestImportedRulesApplyOnceTheirStageIsDeployed(t *testing.T) {
	db := newDB(t)
	api, err := db.ImportRestApi(ctx, importDef(map[string][]plans.RateLimitRule{"prod": {*ipRule("ip")}}))
	must(t, err)
	if c := lastChange(t, db); !slices.Equal(c.Stages, []string{api.ID + ":prod"}) {
		t.Errorf("import: got change %+v, want it to name the rules' stage", c)
	}
	must(t, db.CreateDeployment(ctx, api.ID, &plans.Deployment{}, "prod", "", nil))
	rules, _, err := db.ListRateLimitRules(ctx, api.ID, "prod", pageAll)
	must(t, err)
	if len(rules) != 1 || rules[0].Name != "ip" || len(stageRules(t, db, api.ID, "prod")) != 1 {
		t.Errorf("after the deployment: got rules %+v, want the imported one live", rules)
	}

	bad := importDef(map[string][]plans.RateLimitRule{"prod": {*ipRule("ip")}})
	bad.RateLimitRules["prod"][0].ResourcePath = "/nope"
	_, err = db.ImportRestApi(ctx, bad)
	wantErr(t, err, plans.KindInvalid, plans.RulesExtension+".prod[0].resourcePath")
}

func TestPutRestApiReplacesOrMergesRulesByName(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	kept, dropped := ipRule("kept"), ipRule("dropped")
	must(t, db.CreateRateLimitRule(ctx, f.api.ID, "prod", kept))
	must(t, db.CreateRateLimitRule(ctx, f.api.ID, "prod", dropped))
	counter := stageRules(t, db, f.api.ID, "prod")["kept"].CounterID

	changed := *ipRule("kept")
	changed.Limit = ptr[int32](99)
	_, err := db.PutRestApi(ctx, f.api.ID, plans.PutModeMerge, importDef(map[string][]plans.RateLimitRule{"prod": {changed, *ipRule("new")}}))
	must(t, err)
	got := stageRules(t, db, f.api.ID, "prod")
	if len(got) != 3 || *got["kept"].Limit != 99 || got["kept"].ID != kept.ID || got["kept"].CounterID != counter {
		t.Fatalf("merge: got %+v, want kept (same id and counters, limit 99), dropped and new", got)
	}

	_, err = db.PutRestApi(ctx, f.api.ID, plans.PutModeOverwrite, importDef(map[string][]plans.RateLimitRule{"prod": {changed}}))
	must(t, err)
	if got := stageRules(t, db, f.api.ID, "prod"); len(got) != 1 || got["kept"].ID != kept.ID {
		t.Errorf("overwrite: got %+v, want only kept", got)
	}
	_, err = db.PutRestApi(ctx, f.api.ID, plans.PutModeOverwrite, importDef(nil))
	must(t, err)
	if got := stageRules(t, db, f.api.ID, "prod"); len(got) != 1 {
		t.Errorf("a document without rules changed them: got %+v", got)
	}
	all, err := db.RateLimitRules(ctx, f.api.ID)
	must(t, err)
	if len(all) != 1 || len(all["prod"]) != 1 {
		t.Errorf("RateLimitRules: got %+v", all)
	}
}
