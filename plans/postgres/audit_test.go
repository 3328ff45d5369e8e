package postgres_test

import (
	"context"
	"testing"
	"time"

	"tollgate/plans"
)

func TestAuditEntryCommitsWithItsChangeOnce(t *testing.T) {
	db := newDB(t)
	e := &plans.AuditEntry{Actor: "alice", Source: plans.SourceAPI, Operation: "CreateRestApi", Resource: "/restapis"}
	actx := plans.WithAudit(ctx, e)
	api := &plans.RestApi{Name: "a"}
	must(t, db.CreateRestApi(actx, api))
	if !e.Recorded || e.ID == 0 {
		t.Fatalf("entry %+v: want recorded with an id", e)
	}
	must(t, db.CreateRestApi(actx, &plans.RestApi{Name: "b"})) // a second write of the same request
	got, next, err := db.AuditEntries(ctx, plans.AuditQuery{})
	must(t, err)
	if len(got) != 1 || next != "" || got[0].Actor != "alice" || got[0].Operation != "CreateRestApi" || string(got[0].Change) != "{}" {
		t.Fatalf("got %+v, want the one entry", got)
	}
}

func TestAuditEntryRollsBackWithItsChange(t *testing.T) {
	db := newDB(t)
	e := &plans.AuditEntry{Actor: "bob", Source: plans.SourceAPI, Operation: "DeleteRestApi", Resource: "/restapis/nope"}
	err := db.DeleteRestApi(plans.WithAudit(ctx, e), "nope")
	wantErr(t, err, plans.KindNotFound, "-")
	if e.Recorded {
		t.Fatal("a failed change marked its entry recorded")
	}
	got, _, err := db.AuditEntries(ctx, plans.AuditQuery{})
	must(t, err)
	if len(got) != 0 {
		t.Fatalf("got %+v, want no entry", got)
	}
}

func TestPruneAuditDeletesOnlyOldEntries(t *testing.T) {
	db := newDB(t) // the clock advances a second per transaction
	for range 3 {
		must(t, db.RecordAudit(ctx, &plans.AuditEntry{Actor: "a", Source: plans.SourceAPI, Operation: "X", Resource: "/x"}))
	}
	n, err := db.PruneAudit(ctx, 1500*time.Millisecond) // entries at t0+1s, +2s, +3s; now t0+4s
	must(t, err)
	got, _, _ := db.AuditEntries(ctx, plans.AuditQuery{})
	if n != 2 || len(got) != 1 {
		t.Fatalf("pruned %d, %d left; want 2 pruned, 1 left", n, len(got))
	}
}

func TestAtomicallyCommitsAllOrNothing(t *testing.T) {
	db := newDB(t)
	err := db.Atomically(ctx, time.Minute, func(ctx context.Context) error {
		must(t, db.CreateUsagePlan(ctx, &plans.UsagePlan{Name: "first"}))
		return db.DeleteUsagePlan(ctx, "nosuchplan") // fails after a write that succeeded
	})
	wantErr(t, err, plans.KindNotFound, "-")
	got, _, err := db.ListUsagePlans(ctx, "", plans.Page{})
	must(t, err)
	if len(got) != 0 {
		t.Fatalf("got %d plans after a failed Atomically, want none", len(got))
	}
	must(t, db.Atomically(ctx, time.Minute, func(ctx context.Context) error {
		must(t, db.CreateUsagePlan(ctx, &plans.UsagePlan{Name: "a"}))
		return db.CreateUsagePlan(ctx, &plans.UsagePlan{Name: "b"})
	}))
	if got, _, _ = db.ListUsagePlans(ctx, "", plans.Page{}); len(got) != 2 {
		t.Fatalf("got %d plans, want 2", len(got))
	}
}
