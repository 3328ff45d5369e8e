package postgres_test

import (
	"errors"
	"testing"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"tollgate/plans"
	"tollgate/plans/postgres"
	"tollgate/plans/postgres/postgrestest"
)

// The one-plan-per-(api, stage) rule is the database's, not only the
// store's: plain SQL that bypasses the store is refused too.
func TestClaimConstraintInSQL(t *testing.T) {
	t.Parallel()
	u := postgrestest.MustURL(t)
	db, err := postgres.Open(ctx, u, postgres.Options{})
	must(t, err)
	defer db.Close()
	f := newFixture(t, db)
	f.addStage(t, db, "beta")
	a := newPlan(t, db, "a", plans.ApiStage{ApiID: f.api.ID, Stage: "prod"})
	b := newPlan(t, db, "b", plans.ApiStage{ApiID: f.api.ID, Stage: "beta"})
	k, _ := newKey(t, db, "k")
	_, err = db.CreateUsagePlanKey(ctx, a.ID, k.ID)
	must(t, err)
	_, err = db.CreateUsagePlanKey(ctx, b.ID, k.ID)
	must(t, err)

	conn, err := pgx.Connect(ctx, u)
	must(t, err)
	defer conn.Close(ctx)
	c := newPlan(t, db, "c", plans.ApiStage{ApiID: f.api.ID, Stage: "beta"})
	cases := []struct {
		name, sql string
		args      []any
	}{
		{"plan gains a stage", `INSERT INTO usage_plan_stages (plan_id, api_id, stage, position) VALUES ($1, $2, 'prod', 1)`,
			[]any{b.ID, f.api.ID}},
		{"key joins a plan", `INSERT INTO usage_plan_keys (plan_id, key_id, created_at) VALUES ($1, $2, now())`,
			[]any{c.ID, k.ID}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := conn.Exec(ctx, tc.sql, tc.args...)
			var pg *pgconn.PgError
			if !errors.As(err, &pg) || pg.Code != pgerrcode.UniqueViolation || pg.ConstraintName != "key_stage_claims_pkey" {
				t.Fatalf("got %v, want 23505 on key_stage_claims_pkey", err)
			}
		})
	}
}
