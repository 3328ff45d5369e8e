package postgres_test

import (
	"testing"

	"tollgate/internal/clocktest"
	"tollgate/plans"
	"tollgate/plans/postgres"
	"tollgate/plans/postgres/postgrestest"
)

// An invite names existing plans, is used once within its week, and
// creates (or updates) the account of its email, ending its sessions.
func TestPortalInviteCreatesTheAccountOnce(t *testing.T) {
	t.Parallel()
	clock := clocktest.New(t0)
	db := postgrestest.MustDBWith(t, postgres.Options{Now: clock.Now})
	plan := newPlan(t, db, "gold")
	wantErr(t, db.CreatePortalInvite(ctx, &plans.PortalInvite{Email: "a@example.com", CustomerID: "acme", UsagePlanIDs: []string{"nosuch"}}, "h0"),
		plans.KindInvalid, "usagePlanIds")
	wantErr(t, db.CreatePortalInvite(ctx, &plans.PortalInvite{Email: "not an email", CustomerID: "acme", UsagePlanIDs: []string{plan.ID}}, "h0"),
		plans.KindInvalid, "email")
	must(t, db.CreatePortalInvite(ctx, &plans.PortalInvite{Email: "Partner@Example.com", CustomerID: "acme", UsagePlanIDs: []string{plan.ID}}, "h1"))
	in, err := db.PortalInvite(ctx, "h1")
	must(t, err)
	if in.Email != "partner@example.com" || in.CustomerID != "acme" {
		t.Fatalf("invite %+v, want the lowercase email and customer acme", in)
	}
	a, err := db.AcceptPortalInvite(ctx, "h1", "hash-1")
	must(t, err)
	if a.Email != "partner@example.com" || a.CustomerID != "acme" || a.PasswordHash != "hash-1" || len(a.UsagePlanIDs) != 1 {
		t.Fatalf("account %+v, want partner@example.com of acme in plan %s", a, plan.ID)
	}
	_, err = db.AcceptPortalInvite(ctx, "h1", "hash-2")
	wantErr(t, err, plans.KindNotFound, "-")
	must(t, db.CreatePortalSession(ctx, "s1", a.ID, "csrf-1"))
	got, csrf, err := db.PortalSession(ctx, "s1")
	must(t, err)
	if got.ID != a.ID || csrf != "csrf-1" {
		t.Fatalf("session: account %+v csrf %q", got, csrf)
	}

	other := newPlan(t, db, "silver")
	must(t, db.CreatePortalInvite(ctx, &plans.PortalInvite{Email: "partner@example.com", CustomerID: "acme2", UsagePlanIDs: []string{other.ID}}, "h2"))
	b, err := db.AcceptPortalInvite(ctx, "h2", "hash-3")
	must(t, err)
	if b.ID != a.ID || b.CustomerID != "acme2" || b.PasswordHash != "hash-3" || b.UsagePlanIDs[0] != other.ID {
		t.Fatalf("second invite of the email: got %+v, want account %s updated", b, a.ID)
	}
	_, _, err = db.PortalSession(ctx, "s1")
	wantErr(t, err, plans.KindNotFound, "-") // a new password ends the sessions

	must(t, db.CreatePortalInvite(ctx, &plans.PortalInvite{Email: "late@example.com", CustomerID: "x", UsagePlanIDs: []string{plan.ID}}, "h3"))
	must(t, db.CreatePortalSession(ctx, "s2", a.ID, "csrf-2"))
	clock.Add(plans.PortalInviteTTL)
	_, err = db.AcceptPortalInvite(ctx, "h3", "hash")
	wantErr(t, err, plans.KindNotFound, "-")
	_, _, err = db.PortalSession(ctx, "s2")
	wantErr(t, err, plans.KindNotFound, "-")
	n, err := db.PrunePortal(ctx)
	must(t, err)
	if n != 2 {
		t.Errorf("pruned %d, want the expired invite and session", n)
	}
}

// Self-service accounts get a customer of their own; an email has one
// account.
func TestPortalSignUpAccount(t *testing.T) {
	db := newDB(t)
	a := &plans.PortalAccount{Email: "self@example.com", PasswordHash: "h", UsagePlanIDs: []string{"p1"}}
	must(t, db.CreatePortalAccount(ctx, a))
	if a.ID == "" || a.CustomerID != "portal-"+a.ID {
		t.Fatalf("account %+v, want an id and customer portal-<id>", a)
	}
	got, err := db.PortalAccountByEmail(ctx, "self@example.com")
	must(t, err)
	if got.ID != a.ID || got.PasswordHash != "h" {
		t.Fatalf("by email: got %+v", got)
	}
	wantMsg(t, db.CreatePortalAccount(ctx, &plans.PortalAccount{Email: "self@example.com", PasswordHash: "h"}), plans.KindConflict, "An account with this email exists")
	_, err = db.PortalAccountByEmail(ctx, "nobody@example.com")
	wantErr(t, err, plans.KindNotFound, "-")
}
