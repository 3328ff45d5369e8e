package postgres_test

import (
	"testing"

	"tollgate/plans"
	"tollgate/plans/postgres"
	"tollgate/plans/postgres/postgrestest"
)

func TestOpenSeedsAccountOnce(t *testing.T) {
	t.Parallel()
	u := postgrestest.MustURL(t)
	seed := plans.Throttle{RateLimit: 50, BurstLimit: 25}
	db, err := postgres.Open(ctx, u, postgres.Options{AccountDefault: seed})
	must(t, err)
	defer db.Close()
	a, err := db.GetAccount(ctx)
	must(t, err)
	if a.ThrottleSettings != seed || len(a.Features) != 1 || a.Features[0] != "UsagePlans" {
		t.Fatalf("got %+v, want throttle %+v and features [UsagePlans]", a, seed)
	}
	ch := lastChange(t, db)
	if ch.Version != 1 || !ch.Snapshot {
		t.Errorf("got change %+v, want version 1 with snapshot", ch)
	}
	db.Close()

	// A second start with another default keeps the stored throttle.
	db2, err := postgres.Open(ctx, u, postgres.Options{AccountDefault: plans.Throttle{RateLimit: 1, BurstLimit: 1}})
	must(t, err)
	defer db2.Close()
	a, err = db2.GetAccount(ctx)
	must(t, err)
	if a.ThrottleSettings != seed {
		t.Errorf("got %+v after a second start, want %+v", a.ThrottleSettings, seed)
	}
	if v := version(t, db2); v != 1 {
		t.Errorf("got version %d after a second start, want 1", v)
	}
}

func TestOpenDefaultAccount(t *testing.T) {
	db := newDB(t)
	a, err := db.GetAccount(ctx)
	must(t, err)
	if a.ThrottleSettings != plans.DefaultAccountThrottle {
		t.Errorf("got %+v, want %+v", a.ThrottleSettings, plans.DefaultAccountThrottle)
	}
}

func TestOpenRefusesInvalidDefault(t *testing.T) {
	t.Parallel()
	u := postgrestest.MustURL(t)
	_, err := postgres.Open(ctx, u, postgres.Options{AccountDefault: plans.Throttle{RateLimit: 5}})
	wantErr(t, err, plans.KindInvalid, "accountDefault.burstLimit")
}

func TestUpdateAccount(t *testing.T) {
	db := newDB(t)
	v := version(t, db)
	a, err := db.UpdateAccount(ctx, func(a *plans.Account) error {
		a.ThrottleSettings = plans.Throttle{RateLimit: 0.5, BurstLimit: 2}
		return nil
	})
	must(t, err)
	if a.ThrottleSettings.RateLimit != 0.5 {
		t.Errorf("got %+v, want rate 0.5", a)
	}
	ch := lastChange(t, db)
	if ch.Version != v+1 || !ch.Snapshot {
		t.Errorf("got change %+v, want version %d with snapshot", ch, v+1)
	}
	_, err = db.UpdateAccount(ctx, func(a *plans.Account) error {
		a.ThrottleSettings.RateLimit = -1
		return nil
	})
	wantErr(t, err, plans.KindInvalid, "throttleSettings.rateLimit")
	got, err := db.GetAccount(ctx)
	must(t, err)
	if got.ThrottleSettings != (plans.Throttle{RateLimit: 0.5, BurstLimit: 2}) {
		t.Errorf("got %+v after a refused update, want rate 0.5 burst 2", got.ThrottleSettings)
	}
}
