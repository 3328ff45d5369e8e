package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

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
		{"claim conflict", &pgconn.PgError{Code: "23505", ConstraintName: "key_stage_claims_pkey",
			Detail: "Key (key_id, api_id, stage)=(k1, a1, prod) already exists."}, plans.KindConflict, "",
			"An API key can be in only one usage plan per API stage: key k1, stage a1:prod"},
		{"duplicate hash", &pgconn.PgError{Code: "23505", ConstraintName: "api_keys_key_hash_key"}, plans.KindConflict, "", "API Key already exists"},
		{"unknown unique", &pgconn.PgError{Code: "23505", ConstraintName: "x"}, plans.KindConflict, "", "Conflict"},
		{"missing deployment", &pgconn.PgError{Code: "23503", ConstraintName: "stages_deployment_fkey",
			Detail: `Key (api_id, deployment_id)=(a, d) is not present in table "deployments".`},
			plans.KindInvalid, "deploymentId", "Invalid Deployment identifier specified"},
		{"deployment in use", &pgconn.PgError{Code: "23503", ConstraintName: "stages_deployment_fkey",
			Detail: `Key (api_id, id)=(a, d) is still referenced from table "stages".`},
			plans.KindInvalid, "deploymentId", "Active stages pointing to this deployment must be moved or deleted"},
		{"stage in plan", &pgconn.PgError{Code: "23503", ConstraintName: "usage_plan_stages_stage_fkey",
			Detail: `Key (api_id, name)=(a, prod) is still referenced from table "usage_plan_stages".`},
			plans.KindInvalid, "apiStages", "The stage is included in a usage plan; remove it from the plan first"},
		{"check", &pgconn.PgError{Code: "23514", ConstraintName: "usage_plans_quota_check"}, plans.KindInvalid, "usage_plans_quota_check", "Invalid value"},
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, plans.KindUnavailable, "", "database unavailable"},
		{"connection failure", &pgconn.PgError{Code: "08006"}, plans.KindUnavailable, "", "database unavailable"},
		{"pooled connection dropped", fmt.Errorf("begin: %w", pgconn.ErrConnClosed), plans.KindUnavailable, "", "database unavailable"},
		{"net error", &net.OpError{Op: "dial", Err: errors.New("refused")}, plans.KindUnavailable, "", "database unavailable"},
		{"deadline", context.DeadlineExceeded, plans.KindUnavailable, "", "database unavailable"},
		{"other", errors.New("boom"), plans.KindInternal, "", "Internal server error"},
		{"syntax error is a bug", &pgconn.PgError{Code: "42601"}, plans.KindInternal, "", "Internal server error"},
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
			if _, isPg := c.err.(*pgconn.PgError); isPg && !errors.Is(err, c.err) {
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
