package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"tollgate/plans"
)

func TestTranslate(t *testing.T) {
	cases := []struct {
		name  string
		err   error
		kind  plans.Kind
		field string
		msg   string
	}{
		{"domain error passes", plans.Invalid("name", "bad"), plans.KindInvalid, "name", "bad"},
		{"no rows", fmt.Errorf("q: %w", pgx.ErrNoRows), plans.KindNotFound, "", "Not found"},
		{"claim conflict", &pgconn.PgError{Code: pgerrcode.UniqueViolation, ConstraintName: "key_stage_claims_pkey",
			Detail: "Key (key_id, api_id, stage)=(k1, a1, prod) already exists."}, plans.KindConflict, "",
			"An API key can be in only one usage plan per API stage"},
		{"duplicate hash", &pgconn.PgError{Code: pgerrcode.UniqueViolation, ConstraintName: "api_keys_key_hash_key"}, plans.KindConflict, "", "API Key already exists"},
		{"unknown unique", &pgconn.PgError{Code: pgerrcode.UniqueViolation, ConstraintName: "x"}, plans.KindConflict, "", "Conflict"},
		{"missing deployment", &pgconn.PgError{Code: pgerrcode.ForeignKeyViolation, ConstraintName: "stages_deployment_fkey",
			Detail: `Key (api_id, deployment_id)=(a, d) is not present in table "deployments".`},
			plans.KindInvalid, "deploymentId", "Invalid Deployment identifier specified"},
		{"deployment in use", deleting(&pgconn.PgError{Code: pgerrcode.ForeignKeyViolation, ConstraintName: "stages_deployment_fkey",
			Detail: `Key (api_id, id)=(a, d) is still referenced from table "stages".`}),
			plans.KindInvalid, "deploymentId", "Active stages pointing to this deployment must be moved or deleted"},
		{"stage in plan", deleting(&pgconn.PgError{Code: pgerrcode.ForeignKeyViolation, ConstraintName: "usage_plan_stages_stage_fkey",
			Detail: `Key (api_id, name)=(a, prod) is still referenced from table "usage_plan_stages".`}),
			plans.KindInvalid, "apiStages", "The stage is included in a usage plan; remove it from the plan first"},
		{"check", &pgconn.PgError{Code: pgerrcode.CheckViolation, ConstraintName: "usage_plans_quota_check"}, plans.KindInvalid, "usage_plans_quota_check", "Invalid value"},
		{"admin shutdown", &pgconn.PgError{Code: pgerrcode.AdminShutdown}, plans.KindUnavailable, "", "database unavailable"},
		{"connection failure", &pgconn.PgError{Code: pgerrcode.ConnectionFailure}, plans.KindUnavailable, "", "database unavailable"},
		{"pooled connection dropped", fmt.Errorf("begin: %w", pgconn.ErrConnClosed), plans.KindUnavailable, "", "database unavailable"},
		{"net error", &net.OpError{Op: "dial", Err: errors.New("refused")}, plans.KindUnavailable, "", "database unavailable"},
		{"deadline", context.DeadlineExceeded, plans.KindUnavailable, "", "database unavailable"},
		{"other", errors.New("boom"), plans.KindInternal, "", "Internal server error"},
		{"syntax error is a bug", &pgconn.PgError{Code: pgerrcode.SyntaxError}, plans.KindInternal, "", "Internal server error"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := translate(c.err)
			var pe *plans.Error
			errors.As(err, &pe)
			if k := plans.ErrorKind(err); k != c.kind {
				t.Fatalf("got kind %v (%v), want %v", k, err, c.kind)
			}
			if pe != nil && pe.Field != c.field {
				t.Errorf("got field %q, want %q", pe.Field, c.field)
			}
			if m := plans.ErrorMessage(err); m != c.msg {
				t.Errorf("got message %q, want %q", m, c.msg)
			}
			var pg *pgconn.PgError
			if errors.As(c.err, &pg) && !errors.Is(err, pg) {
				t.Errorf("got %v, want the driver error kept as the cause", err)
			}
		})
	}
	if translate(nil) != nil {
		t.Error("got an error for nil, want nil")
	}
}

func TestOpenUnavailable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, err = Open(context.Background(), "postgres://postgres@"+addr+"/x?sslmode=disable&connect_timeout=2", Options{})
	if k := plans.ErrorKind(err); k != plans.KindUnavailable {
		t.Fatalf("got %v (kind %v), want KindUnavailable", err, k)
	}
}

// The same classification holds for real server errors whose messages are
// German (lc_messages): a foreign key violation of an insert names the
// missing row, one of a delete the reference still in use, a unique
// violation its constraint's conflict; none of it reads the message text.
func TestTranslateServerErrorsInGerman(t *testing.T) {
	t.Parallel()
	base := os.Getenv("TOLLGATE_TEST_DATABASE_URL")
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	conn, err := pgx.Connect(context.Background(), base)
	if err != nil {
		t.Fatalf("PostgreSQL: %v", err)
	}
	defer conn.Close(context.Background())
	exec := func(sql string) error { _, err := conn.Exec(context.Background(), sql); return err }
	SkipWithoutLocale(t, exec("SET lc_messages = '"+MessagesLocale+"'"))
	for _, sql := range []string{
		`CREATE TEMP TABLE deployments (api_id text, id text, PRIMARY KEY (api_id, id))`,
		`CREATE TEMP TABLE stages (api_id text, name text, deployment_id text,
			CONSTRAINT stages_deployment_fkey FOREIGN KEY (api_id, deployment_id) REFERENCES deployments (api_id, id))`,
		`CREATE TEMP TABLE key_stage_claims (key_id text, api_id text, stage text,
			CONSTRAINT key_stage_claims_pkey PRIMARY KEY (key_id, api_id, stage))`,
		`INSERT INTO deployments VALUES ('a', 'd')`,
		`INSERT INTO stages VALUES ('a', 'prod', 'd')`,
		`INSERT INTO key_stage_claims VALUES ('k', 'a', 'prod')`,
	} {
		if err := exec(sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	cases := []struct {
		name, sql string
		wrap      func(error) error
		kind      plans.Kind
		msg       string
	}{
		{"insert with a missing reference", `INSERT INTO stages VALUES ('a', 'beta', 'nosuch')`, func(e error) error { return e },
			plans.KindInvalid, "Invalid Deployment identifier specified"},
		{"delete of a referenced row", `DELETE FROM deployments`, deleting,
			plans.KindInvalid, "Active stages pointing to this deployment must be moved or deleted"},
		{"second claim", `INSERT INTO key_stage_claims VALUES ('k', 'a', 'prod')`, func(e error) error { return e },
			plans.KindConflict, "An API key can be in only one usage plan per API stage"},
	}
	for _, c := range cases {
		err := exec(c.sql)
		var pg *pgconn.PgError
		if !errors.As(err, &pg) {
			t.Fatalf("%s: got %v, want a server error", c.name, err)
		}
		if strings.Contains(pg.Message, "violates") || strings.Contains(pg.Detail, "referenced") || strings.Contains(pg.Detail, "already exists") {
			t.Fatalf("%s: the server answered in English (%q / %q); the test needs German messages", c.name, pg.Message, pg.Detail)
		}
		got := translate(c.wrap(err))
		if plans.ErrorKind(got) != c.kind || plans.ErrorMessage(got) != c.msg {
			t.Errorf("%s: got %v %q, want %v %q", c.name, plans.ErrorKind(got), plans.ErrorMessage(got), c.kind, c.msg)
		}
	}
}
