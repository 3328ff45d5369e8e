package postgrestest_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"tollgate/migrations"
	"tollgate/plans"
	"tollgate/plans/postgres/postgrestest"
)

func TestMustURLGivesAFreshMigratedDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var name string
	t.Run("use", func(t *testing.T) {
		u := postgrestest.MustURL(t)
		v, dirty, err := migrations.Version(u)
		if err != nil || v != migrations.Latest() || dirty {
			t.Fatalf("got version %d dirty %v err %v, want %d clean", v, dirty, err, migrations.Latest())
		}
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var version, apis int64
		if err := conn.QueryRow(ctx, `SELECT (SELECT version FROM config_version), (SELECT count(*) FROM rest_apis)`).Scan(&version, &apis); err != nil {
			t.Fatal(err)
		}
		if version != 0 || apis != 0 {
			t.Errorf("got version %d and %d apis, want an empty database", version, apis)
		}
		parsed, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		name = strings.TrimPrefix(parsed.Path, "/")
	})
	conn, err := pgx.Connect(ctx, postgrestest.BaseURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if name == "" || exists {
		t.Errorf("got database %q existing=%v after cleanup, want it dropped", name, exists)
	}
}

func TestDatabasesAreIsolated(t *testing.T) {
	t.Parallel()
	a, b := postgrestest.MustDB(t), postgrestest.MustDB(t)
	ctx := context.Background()
	va, err := a.ConfigVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.UpdateAccount(ctx, func(*plans.Account) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if got, _ := a.ConfigVersion(ctx); got != va {
		t.Errorf("got version %d in a after writing b, want %d", got, va)
	}
}
