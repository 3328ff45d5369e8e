package postgres_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"tollgate/plans"
	"tollgate/plans/postgres"
	"tollgate/plans/postgres/postgrestest"
)

// Under a non-English lc_messages (postgres.MessagesLocale), every driver error the store turns
// into an answer keeps its kind, field and message: a foreign key still
// referenced on delete, one missing on insert, the one-plan-per-stage
// claim with the key and stage it names, a duplicate.
func TestErrorsClassifiedWhateverTheServerLanguage(t *testing.T) {
	t.Parallel()
	u := postgrestest.MustURL(t)
	conn, err := pgx.Connect(ctx, u)
	must(t, err)
	var db string
	must(t, conn.QueryRow(ctx, "SELECT current_database()").Scan(&db))
	_, err = conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{db}.Sanitize()+" SET lc_messages = '"+postgres.MessagesLocale+"'")
	conn.Close(ctx)
	postgres.SkipWithoutLocale(t, err)
	store, err := postgres.Open(ctx, u, postgres.Options{})
	must(t, err)
	defer store.Close()
	check, err := pgx.Connect(ctx, u)
	must(t, err)
	defer check.Close(ctx)
	var lang string
	must(t, check.QueryRow(ctx, "SHOW lc_messages").Scan(&lang))
	if lang != postgres.MessagesLocale {
		t.Fatalf("lc_messages of a new session: %q, want %q", lang, postgres.MessagesLocale)
	}

	f := newFixture(t, store)
	f.addStage(t, store, "beta")
	a := newPlan(t, store, "a", plans.ApiStage{ApiID: f.api.ID, Stage: "prod"})
	b := newPlan(t, store, "b", plans.ApiStage{ApiID: f.api.ID, Stage: "beta"})
	k, _ := newKey(t, store, "k")
	_, err = store.CreateUsagePlanKey(ctx, a.ID, k.ID)
	must(t, err)

	wantMsg(t, store.DeleteDeployment(ctx, f.api.ID, f.deployment.ID), plans.KindInvalid,
		"Active stages pointing to this deployment must be moved or deleted: beta, prod")
	wantMsg(t, store.DeleteStage(ctx, f.api.ID, "prod"), plans.KindInvalid,
		"Cannot delete stage prod: it is in usage plan "+a.ID+"; remove it from the plan first")
	wantMsg(t, store.CreateStage(ctx, f.api.ID, &plans.Stage{StageName: "gamma", DeploymentID: "nosuch"}), plans.KindInvalid,
		`Invalid Deployment identifier specified: "nosuch"`)
	claim := "An API key can be in only one usage plan per API stage: key " + k.ID + ", stage " + f.api.ID + ":prod"
	_, err = store.UpdateUsagePlan(ctx, b.ID, func(p *plans.UsagePlan) error {
		p.ApiStages = append(p.ApiStages, plans.ApiStage{ApiID: f.api.ID, Stage: "prod"})
		return nil
	})
	must(t, err) // b has no keys yet: nothing to claim
	_, err = store.CreateUsagePlanKey(ctx, b.ID, k.ID)
	wantMsg(t, err, plans.KindConflict, claim)
	c := newPlan(t, store, "c", plans.ApiStage{ApiID: f.api.ID, Stage: "beta"})
	k2, _ := newKey(t, store, "k2")
	_, err = store.CreateUsagePlanKey(ctx, c.ID, k2.ID)
	must(t, err)
	_, err = store.CreateUsagePlanKey(ctx, a.ID, k2.ID)
	must(t, err)
	_, err = store.UpdateUsagePlan(ctx, c.ID, func(p *plans.UsagePlan) error {
		p.ApiStages = append(p.ApiStages, plans.ApiStage{ApiID: f.api.ID, Stage: "prod"})
		return nil
	})
	wantMsg(t, err, plans.KindConflict, "An API key can be in only one usage plan per API stage: key "+k2.ID+", stage "+f.api.ID+":prod")
	dup := &plans.ApiKey{Name: "dup", Enabled: true, Value: plans.NewKeyValue()}
	must(t, store.CreateApiKey(ctx, dup, plans.HashKey(dup.Value, nil)))
	wantMsg(t, store.CreateApiKey(ctx, &plans.ApiKey{Name: "again", Enabled: true, Value: dup.Value}, plans.HashKey(dup.Value, nil)),
		plans.KindConflict, "API Key already exists")
}
