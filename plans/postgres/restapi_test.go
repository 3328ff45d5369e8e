package postgres_test

import (
	"context"
	"testing"
	"time"

	"tollgate/plans"
	"tollgate/plans/postgres"
	"tollgate/plans/postgres/postgrestest"
)

// store assertion lives in store_test.go

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// newDB returns a store on a fresh database with a clock starting at t0.
func newDB(t *testing.T) *postgres.DB {
	t.Helper()
	t.Parallel()
	return postgrestest.MustDBWith(t, postgres.Options{Now: postgrestest.FixedClock(t0)})
}

func TestRestApiCRUD(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()
	api := &plans.RestApi{Name: "pets", Description: "d", Tags: map[string]string{"a": "b"}}
	if err := db.CreateRestApi(ctx, api); err != nil {
		t.Fatal(err)
	}
	if len(api.ID) != plans.LongIDLen || api.ApiKeySource != "HEADER" || api.CreatedDate.IsZero() {
		t.Fatalf("got %+v, want a 10-character id, HEADER and a date", api)
	}
	got, err := db.GetRestApi(ctx, api.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "pets" || got.Tags["a"] != "b" || !got.CreatedDate.Equal(api.CreatedDate.Time) {
		t.Fatalf("got %+v, want %+v", got, api)
	}
}
