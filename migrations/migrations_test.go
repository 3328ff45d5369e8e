package migrations_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/migrations"
)

// emptyDB creates an empty database, dropped at cleanup, and returns its
// postgres:// URL. (postgrestest gives migrated databases; this test needs
// an empty one.)
func emptyDB(t *testing.T) string {
	t.Helper()
	base := os.Getenv("TOLLGATE_TEST_DATABASE_URL")
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	name := "tgmig_" + hex.EncodeToString(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect %s: %v", base, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE DATABASE `+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), `DROP DATABASE `+name+` WITH (FORCE)`); err != nil {
			t.Error(err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

func tables(t *testing.T, dbURL string) map[string]bool {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'schema_migrations'`)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out
}

func wantVersion(t *testing.T, dbURL string, want uint) {
	t.Helper()
	v, dirty, err := migrations.Version(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	if v != want || dirty {
		t.Fatalf("got version %d dirty %v, want %d clean", v, dirty, want)
	}
}

func TestUpDownUp(t *testing.T) {
	t.Parallel()
	u := emptyDB(t)
	wantVersion(t, u, 0)
	schema := []string{"rest_apis", "resources", "methods", "integrations", "deployments", "stages",
		"usage_plans", "usage_plan_stages", "api_keys", "usage_plan_keys", "key_stage_claims",
		"account", "config_version", "config_changes", "usage_days", "usage_quotas", "gateway_responses",
		"rate_limit_rules", "domain_names", "base_path_mappings", "admin_credentials", "audit_log", "webhook_outbox",
		"api_key_previous_values", "api_key_rotations", "portal_accounts", "portal_invites", "portal_sessions", "authorizers"}
	for round := range 2 {
		if err := migrations.Up(u); err != nil {
			t.Fatalf("round %d: up: %v", round, err)
		}
		if err := migrations.Up(u); err != nil {
			t.Fatalf("round %d: second up: got %v, want no error", round, err)
		}
		wantVersion(t, u, migrations.Latest())
		got := tables(t, u)
		for _, n := range schema {
			if !got[n] {
				t.Errorf("round %d: got tables %v, want %s", round, got, n)
			}
		}
		if err := migrations.Down(u, 0); err != nil {
			t.Fatalf("round %d: down: %v", round, err)
		}
		wantVersion(t, u, 0)
		if got := tables(t, u); len(got) != 0 {
			t.Errorf("round %d: got tables %v after down, want none", round, got)
		}
	}
}

func TestDownRevertsOnlyTheGivenSteps(t *testing.T) {
	t.Parallel()
	u := emptyDB(t)
	if err := migrations.Up(u); err != nil {
		t.Fatal(err)
	}
	all := migrations.All()
	plan, err := migrations.DownPlan(u, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan) != 2 || plan[0].Version != all[len(all)-1].Version || plan[1].Version != all[len(all)-2].Version {
		t.Fatalf("plan of 2 steps: %+v, want the two newest of %+v, newest first", plan, all)
	}
	if err := migrations.Down(u, 2); err != nil {
		t.Fatal(err)
	}
	wantVersion(t, u, all[len(all)-3].Version)
	got := tables(t, u)
	for _, mg := range plan {
		for _, d := range mg.Drops {
			if !strings.Contains(d, ".") && got[d] {
				t.Errorf("table %s of reverted migration %d is still there", d, mg.Version)
			}
		}
	}
	for _, keep := range []string{"usage_days", "usage_quotas", "api_keys", "audit_log"} {
		if !got[keep] {
			t.Errorf("down 2 dropped %s, which an older migration made", keep)
		}
	}
}

func TestDownRefusesMoreStepsThanAppliedAndChangesNothing(t *testing.T) {
	t.Parallel()
	u := emptyDB(t)
	if err := migrations.Up(u); err != nil {
		t.Fatal(err)
	}
	n := len(migrations.All())
	if err := migrations.Down(u, n+1); err == nil || !strings.Contains(err.Error(), "only") {
		t.Fatalf("down %d of %d applied: got %v, want a refusal", n+1, n, err)
	}
	wantVersion(t, u, migrations.Latest())
	if _, err := migrations.DownPlan(u, -1); err == nil {
		t.Fatal("a negative step count was accepted")
	}
}

// Every table or column a down file drops is named in its Migration's
// Drops, so `tollgate migrate down` never destroys something it did not list.
func TestEveryDropOfADownFileIsListed(t *testing.T) {
	for _, mg := range migrations.All() {
		names, _ := fs.Glob(migrations.FS, fmt.Sprintf("%06d_*.down.sql", mg.Version))
		if len(names) != 1 {
			t.Fatalf("migration %d: down files %v", mg.Version, names)
		}
		sql, _ := migrations.FS.ReadFile(names[0])
		upper := strings.ToUpper(string(sql))
		want := strings.Count(upper, "DROP TABLE") + strings.Count(upper, "DROP COLUMN")
		if len(mg.Drops) != want {
			t.Errorf("%s: Drops %v, but the file has %d DROP TABLE or DROP COLUMN statements", names[0], mg.Drops, want)
		}
	}
	ledger := migrations.All()[2]
	if ledger.Name != "usage_ledger" || !slices.Contains(ledger.Drops, "usage_days") {
		t.Errorf("the usage ledger's migration: %+v, want usage_ledger dropping usage_days", ledger)
	}
}

func TestLatestIsTheNewestMigration(t *testing.T) {
	if got, want := migrations.Latest(), uint(18); got != want { // 000018_key_quota_calendar
		t.Fatalf("got latest migration %d, want %d", got, want)
	}
}

func TestDriverURL(t *testing.T) {
	cases := []struct{ in, want string }{
		{"postgres://u@h/db", "pgx5://u@h/db"},
		{"postgresql://u@h/db?sslmode=disable", "pgx5://u@h/db?sslmode=disable"},
		{"pgx5://u@h/db", "pgx5://u@h/db"},
	}
	for _, c := range cases {
		if got := migrations.DriverURL(c.in); got != c.want {
			t.Errorf("DriverURL(%q): got %q, want %q", c.in, got, c.want)
		}
	}
}

func TestVersionUnreachable(t *testing.T) {
	_, _, err := migrations.Version("postgres://postgres@127.0.0.1:1/x?sslmode=disable&connect_timeout=1")
	if err == nil {
		t.Fatal("got no error for an unreachable database, want one")
	}
}
