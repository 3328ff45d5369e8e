package push_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"tollgate/internal/redistest"
	"tollgate/internal/waittest"
	"tollgate/plans"
	"tollgate/plans/postgres"
	"tollgate/plans/postgres/postgrestest"
	"tollgate/push"
)

// pgWorld is a PostgreSQL store with one API (GET / needing a key, MOCK),
// deployed to "prod", a usage plan covering it and two keys in the plan.
type pgWorld struct {
	db          *postgres.DB
	api         *plans.RestApi
	plan        *plans.UsagePlan
	key, other  *plans.ApiKey
	hash, hash2 string
}

var postgresPage = plans.Page{Limit: 500}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func newPgWorld(t *testing.T) *pgWorld {
	t.Helper()
	ctx := context.Background()
	w := &pgWorld{db: postgrestest.MustDB(t), api: &plans.RestApi{Name: "pets"}}
	must(t, w.db.CreateRestApi(ctx, w.api))
	rs, _, err := w.db.ListResources(ctx, w.api.ID, postgresPage)
	must(t, err)
	root := rs[slices.IndexFunc(rs, func(r plans.Resource) bool { return r.Path == "/" })]
	must(t, w.db.PutMethod(ctx, w.api.ID, root.ID, &plans.Method{HTTPMethod: "GET", APIKeyRequired: true}))
	must(t, w.db.PutIntegration(ctx, w.api.ID, root.ID, "GET", &plans.Integration{Type: plans.IntegrationMock}))
	must(t, w.db.CreateDeployment(ctx, w.api.ID, &plans.Deployment{}, "prod", "", nil))
	w.plan = &plans.UsagePlan{Name: "gold", ApiStages: []plans.ApiStage{{ApiID: w.api.ID, Stage: "prod"}}}
	must(t, w.db.CreateUsagePlan(ctx, w.plan))
	w.key, w.hash = w.newKey(t, "partnerkeyvalue0000000001")
	w.other, w.hash2 = w.newKey(t, "partnerkeyvalue0000000002")
	return w
}

func (w *pgWorld) newKey(t *testing.T, value string) (*plans.ApiKey, string) {
	t.Helper()
	ctx := context.Background()
	k := &plans.ApiKey{Name: value, Enabled: true}
	h := plans.HashKey(value, nil)
	must(t, w.db.CreateApiKey(ctx, k, h))
	_, err := w.db.CreateUsagePlanKey(ctx, w.plan.ID, k.ID)
	must(t, err)
	return k, h
}

// lastSnapshot keeps the snapshot a Reader handed over last.
type lastSnapshot struct {
	mu sync.Mutex
	s  *plans.Snapshot
}

func (l *lastSnapshot) set(s *plans.Snapshot) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.s = s
	return nil
}

func (l *lastSnapshot) get() *plans.Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s
}

// TestWithPostgres runs the push protocol against the real store:
// admin writes published to Redis and seen by a gateway Reader.
func TestWithPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newPgWorld(t)
	rdb, prefix := redistest.MustClient(t)
	pub := push.NewPublisher(w.db, rdb, push.Options{Prefix: prefix})
	must(t, pub.Reconcile(ctx))

	snap := &lastSnapshot{}
	r := push.NewReader(rdb, push.ReaderOptions{Prefix: prefix, OnSnapshot: snap.set, Block: 200 * time.Millisecond})
	must(t, r.Start(ctx))
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { r.Run(runCtx); close(done) }()
	defer func() { cancel(); <-done }()

	v, err := w.db.ConfigVersion(ctx)
	must(t, err)
	if got := r.Version(); got != v {
		t.Errorf("reader version: got %d, want the store's %d", got, v)
	}
	if s := snap.get(); s == nil || s.Apis[w.api.ID] == nil || s.Apis[w.api.ID].Stages["prod"] == nil || s.Plans[w.plan.ID] == nil {
		t.Fatalf("snapshot: got %+v, want api %s with stage prod and plan %s", s, w.api.ID, w.plan.ID)
	}
	rec, err := r.Lookup(ctx, w.hash)
	if err != nil || rec == nil || rec.KeyID != w.key.ID || !rec.Enabled || !slices.Equal(rec.PlanIDs, []string{w.plan.ID}) {
		t.Fatalf("Lookup: got (%+v, %v), want key %s enabled in plan %s", rec, err, w.key.ID, w.plan.ID)
	}

	t.Run("key disabled", func(t *testing.T) {
		_, err := w.db.UpdateApiKey(ctx, w.key.ID, func(k *plans.ApiKey) error { k.Enabled = false; return nil })
		must(t, err)
		must(t, pub.Publish(ctx))
		waittest.Until(t, "disabled key seen", 2*time.Second, func() bool { rec, err := r.Lookup(ctx, w.hash); return err == nil && !rec.Enabled })
	})
	t.Run("account throttle changed", func(t *testing.T) {
		_, err := w.db.UpdateAccount(ctx, func(a *plans.Account) error { a.ThrottleSettings.RateLimit = 77; return nil })
		must(t, err)
		must(t, pub.Publish(ctx))
		waittest.Until(t, "new account throttle seen", 2*time.Second, func() bool { return snap.get().Account.RateLimit == 77 })
	})
	t.Run("rate-limit rule created and changed", func(t *testing.T) {
		limit := int32(3)
		rule := &plans.RateLimitRule{Name: "per-ip", KeyBy: []string{"ip"}, Algorithm: plans.Concurrency, Limit: &limit}
		must(t, w.db.CreateRateLimitRule(ctx, w.api.ID, "prod", rule))
		must(t, pub.Publish(ctx))
		rules := func() []plans.StageRule { return snap.get().Apis[w.api.ID].Stages["prod"].RateLimitRules }
		waittest.Until(t, "new rule seen", 2*time.Second, func() bool { return len(rules()) == 1 && *rules()[0].Limit == 3 })
		counter := rules()[0].CounterID
		_, err := w.db.UpdateRateLimitRule(ctx, w.api.ID, "prod", rule.ID, func(r *plans.RateLimitRule) error { limit = 4; r.Limit = &limit; return nil })
		must(t, err)
		must(t, pub.Publish(ctx))
		waittest.Until(t, "changed rule seen", 2*time.Second, func() bool { return *rules()[0].Limit == 4 })
		if rules()[0].CounterID != counter {
			t.Errorf("a change of limit moved the rule's counters from %s to %s", counter, rules()[0].CounterID)
		}
	})
	t.Run("key deleted", func(t *testing.T) {
		must(t, w.db.DeleteApiKey(ctx, w.key.ID))
		must(t, pub.Publish(ctx))
		waittest.Until(t, "deleted key unknown", 2*time.Second, func() bool { rec, err := r.Lookup(ctx, w.hash); return err == nil && rec == nil })
	})
	t.Run("redis flushed then reconciled", func(t *testing.T) {
		redistest.DeletePrefix(ctx, rdb, prefix)
		if _, err := r.Lookup(ctx, w.hash2); !errors.Is(err, push.ErrNotPublished) || plans.ErrorKind(err) != plans.KindUnavailable {
			t.Errorf("Lookup while unpublished: got %v, want KindUnavailable caused by ErrNotPublished", err)
		}
		must(t, pub.Reconcile(ctx))
		rec, err := r.Lookup(ctx, w.hash2)
		if err != nil || rec == nil || rec.KeyID != w.other.ID || !rec.Enabled {
			t.Errorf("Lookup after Reconcile: got (%+v, %v), want key %s enabled", rec, err, w.other.ID)
		}
		if rec, err := r.Lookup(ctx, w.hash); err != nil || rec != nil {
			t.Errorf("Lookup of the deleted key after Reconcile: got (%+v, %v), want (nil, nil)", rec, err)
		}
	})
}
