package admin_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	"tollgate/usage"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"
	"github.com/redis/go-redis/v9"

	"tollgate/admin"
	"tollgate/engine"
	"tollgate/internal/redistest"
	"tollgate/keyspace"
	"tollgate/limit"
	"tollgate/plans"
	"tollgate/plans/postgres"
	"tollgate/plans/postgres/postgrestest"
)

// announcer is a recorder that also records usage announcements
// ("planId:keyId").
type announcer struct {
	*recorder
	mu        sync.Mutex
	announced []string
}

func (a *announcer) AnnounceUsageUpdate(_ context.Context, planID, keyID string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.announced = append(a.announced, planID+":"+keyID)
	return nil
}

func (a *announcer) list() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.announced...)
}

// usageEnv is an admin with a real limiter on a fresh Redis prefix and
// the usage ledger in its database.
type usageEnv struct {
	*env
	lim    *engine.Engine
	rdb    *redis.Client
	prefix string
	ann    *announcer
	db     *postgres.DB
}

func newUsageEnv(t *testing.T) *usageEnv {
	t.Helper()
	rdb, prefix := redistest.MustClient(t)
	return newUsageEnvOn(t, rdb, prefix)
}

// newUsageEnvOn is newUsageEnv on the limiter Redis rdb, its keys under
// prefix.
func newUsageEnvOn(t *testing.T, rdb *redis.Client, prefix string) *usageEnv {
	t.Helper()
	lim := engine.New(rdb, engine.Options{Prefix: prefix, Timeout: 5 * time.Second}) // a loaded test machine never times out
	ann := &announcer{recorder: &recorder{}}
	db := postgrestest.MustDB(t)
	srv := httptest.NewServer(admin.New(admin.Options{
		Store:       db,
		Ledger:      db,
		Publisher:   ann,
		Credentials: admin.Credentials{AccessKeyID: akid, SecretAccessKey: secret, BearerToken: token},
		Logger:      slog.New(slog.NewTextHandler(testWriter{t}, nil)),
		Usage:       usage.New(rdb, usage.Options{Prefix: prefix}),
	}))
	t.Cleanup(srv.Close)
	c := apigateway.New(apigateway.Options{
		BaseEndpoint: aws.String(srv.URL),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider(akid, secret, ""),
		Retryer:      aws.NopRetryer{},
	})
	return &usageEnv{env: &env{t: t, url: srv.URL, c: c, pub: ann.recorder, ctx: context.Background()}, lim: lim, rdb: rdb, prefix: prefix, ann: ann, db: db}
}

// plan creates a usage plan (quota nil: none) holding n new keys.
func (e *usageEnv) plan(name string, quota *types.QuotaSettings, n int) (string, []string) {
	e.t.Helper()
	p := call(e.c.CreateUsagePlan(e.ctx, &apigateway.CreateUsagePlanInput{Name: aws.String(name), Quota: quota})).must(e.t)
	var keys []string
	for i := range n {
		k := call(e.c.CreateApiKey(e.ctx, &apigateway.CreateApiKeyInput{Name: aws.String(name + string(rune('a'+i))), Enabled: true})).must(e.t)
		call(e.c.CreateUsagePlanKey(e.ctx, &apigateway.CreateUsagePlanKeyInput{UsagePlanId: p.Id, KeyId: k.Id, KeyType: aws.String("API_KEY")})).must(e.t)
		keys = append(keys, *k.Id)
	}
	return *p.Id, keys
}

// requests makes n admitted requests of keyID in planID through the limiter.
func (e *usageEnv) requests(planID, keyID string, q *limit.Quota, n int) {
	e.t.Helper()
	for range n {
		d, err := e.lim.Decide(e.ctx, &limit.Request{KeyID: keyID, PlanID: planID, Quota: q})
		if err != nil || !d.Allowed {
			e.t.Fatalf("Decide: %+v, %v; want admitted", d, err)
		}
	}
}

func (e *usageEnv) usage(planID, keyID, from, to string) *apigateway.GetUsageOutput {
	e.t.Helper()
	in := &apigateway.GetUsageInput{UsagePlanId: aws.String(planID), StartDate: aws.String(from), EndDate: aws.String(to)}
	if keyID != "" {
		in.KeyId = aws.String(keyID)
	}
	return call(e.c.GetUsage(e.ctx, in)).must(e.t)
}

func wantUsage(t *testing.T, got map[string][][]int64, want map[string][][]int64) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("usage items: got %v, want %v", got, want)
	}
}

func TestUsageGetAndUpdate(t *testing.T) {
	t.Parallel()
	e := newUsageEnv(t)
	now := time.Now().UTC()
	today, twoAgo := now.Format("2006-01-02"), now.AddDate(0, 0, -2).Format("2006-01-02")

	gold, gk := e.plan("gold", &types.QuotaSettings{Limit: 10, Period: types.QuotaPeriodTypeDay}, 2)
	free, fk := e.plan("free", nil, 1)
	e.requests(gold, gk[0], &limit.Quota{Limit: 10, Period: plans.PeriodDay}, 3)
	e.requests(free, fk[0], nil, 2)

	out := e.usage(gold, "", twoAgo, today)
	if aws.ToString(out.UsagePlanId) != gold || aws.ToString(out.StartDate) != twoAgo || aws.ToString(out.EndDate) != today {
		t.Fatalf("got plan %s %s..%s, want %s %s..%s", aws.ToString(out.UsagePlanId), aws.ToString(out.StartDate), aws.ToString(out.EndDate), gold, twoAgo, today)
	}
	wantUsage(t, out.Items, map[string][][]int64{
		gk[0]: {{0, 10}, {0, 10}, {3, 7}},
		gk[1]: {{0, 10}, {0, 10}, {0, 10}},
	})
	wantUsage(t, e.usage(gold, gk[0], today, today).Items, map[string][][]int64{gk[0]: {{3, 7}}})
	wantUsage(t, e.usage(free, "", today, today).Items, map[string][][]int64{fk[0]: {{2, -1}}})
	wantUsage(t, e.usage(gold, fk[0], today, today).Items, map[string][][]int64{})

	t.Run("pages over keys", func(t *testing.T) {
		p1 := call(e.c.GetUsage(e.ctx, &apigateway.GetUsageInput{UsagePlanId: aws.String(gold), StartDate: aws.String(today), EndDate: aws.String(today), Limit: aws.Int32(1)})).must(t)
		if len(p1.Items) != 1 || p1.Position == nil {
			t.Fatalf("page 1: got %v position %v, want one key and a position", p1.Items, p1.Position)
		}
		p2 := call(e.c.GetUsage(e.ctx, &apigateway.GetUsageInput{UsagePlanId: aws.String(gold), StartDate: aws.String(today), EndDate: aws.String(today), Limit: aws.Int32(1), Position: p1.Position})).must(t)
		if len(p2.Items) != 1 || p2.Position != nil {
			t.Fatalf("page 2: got %v position %v, want one key and no position", p2.Items, p2.Position)
		}
		for k := range p1.Items {
			if _, dup := p2.Items[k]; dup {
				t.Fatalf("key %s on both pages", k)
			}
		}
	})

	update := func(planID, keyID, value string) (*apigateway.UpdateUsageOutput, error) {
		return e.c.UpdateUsage(e.ctx, &apigateway.UpdateUsageInput{UsagePlanId: aws.String(planID), KeyId: aws.String(keyID),
			PatchOperations: []types.PatchOperation{op(types.OpReplace, "/remaining", value)}})
	}
	up := call(update(gold, gk[0], "50")).must(t)
	wantUsage(t, up.Items, map[string][][]int64{gk[0]: {{3, 10}}})
	wantUsage(t, e.usage(gold, gk[0], today, today).Items, map[string][][]int64{gk[0]: {{3, 10}}})
	call(update(gold, gk[0], "4")).must(t)
	wantUsage(t, e.usage(gold, gk[0], today, today).Items, map[string][][]int64{gk[0]: {{3, 4}}})
	call(update(gold, gk[0], "-5")).must(t)
	wantUsage(t, e.usage(gold, gk[0], today, today).Items, map[string][][]int64{gk[0]: {{3, 0}}})
	if got, want := e.ann.list(), []string{gold + ":" + gk[0], gold + ":" + gk[0], gold + ":" + gk[0]}; !reflect.DeepEqual(got, want) {
		t.Fatalf("announced %v, want %v", got, want)
	}

	t.Run("errors", func(t *testing.T) {
		_, err := update(free, fk[0], "5")
		wantBadRequest(t, err, "quota")
		_, err = update(gold, gk[0], "many")
		wantBadRequest(t, err, "/remaining")
		_, err = e.c.UpdateUsage(e.ctx, &apigateway.UpdateUsageInput{UsagePlanId: aws.String(gold), KeyId: aws.String(gk[0]),
			PatchOperations: []types.PatchOperation{op(types.OpReplace, "/used", "1")}})
		wantBadRequest(t, err, "/used")
		_, err = update("nosuchplan", gk[0], "5")
		wantCode(t, err, "NotFoundException")
		_, err = update(gold, fk[0], "5")
		wantCode(t, err, "NotFoundException")

		get := func(planID, from, to string) error {
			_, err := e.c.GetUsage(e.ctx, &apigateway.GetUsageInput{UsagePlanId: aws.String(planID), StartDate: aws.String(from), EndDate: aws.String(to)})
			return err
		}
		wantBadRequest(t, get(gold, "2026-01-01", "2026-04-01"), "startDate")
		wantBadRequest(t, get(gold, "2026-01-01", "2026-04-01"), "endDate")
		if err := get(gold, "2026-01-01", "2026-03-31"); err != nil {
			t.Fatalf("90 days: got %v, want none", err)
		}
		wantBadRequest(t, get(gold, "2026-13-01", "2026-01-02"), "startDate")
		wantBadRequest(t, get(gold, "2026-01-01", "yesterday"), "endDate")
		wantBadRequest(t, get(gold, "2026-01-02", "2026-01-01"), "endDate")
		wantCode(t, get("nosuchplan", today, today), "NotFoundException")
		if status, _, body := e.raw("GET", "/usageplans/"+gold+"/usage?endDate="+today, ""); status != 400 {
			t.Fatalf("missing startDate: got %d %s, want 400", status, body)
		}
	})
}

// TestUsageRemainingPerDay checks that remaining is what was left in the
// enclosing quota period at the end of each day, counting days of that
// period before startDate, and that today's comes from the live counter.
func TestUsageRemainingPerDay(t *testing.T) {
	t.Parallel()
	e := newUsageEnv(t)
	now := time.Now().UTC()
	day := func(back int) string { return now.AddDate(0, 0, -back).Format("2006-01-02") }
	// A weekly quota whose period began 3 days ago: [today-3, today+4).
	offset := (int(now.Weekday()) - 3 + 7) % 7
	plan, keys := e.plan("weekly", &types.QuotaSettings{Limit: 20, Period: types.QuotaPeriodTypeWeek, Offset: int32(offset)}, 1)
	k := keys[0]
	// Earlier days are written where the limiter counts them (its usage
	// hash, one field per UTC day); today's through Decide.
	past := map[int]int64{8: 5, 6: 2, 5: 1, 3: 4, 1: 1}
	for back, n := range past {
		if err := e.rdb.HIncrBy(e.ctx, keyspace.Space{Prefix: e.prefix}.Usage(k, plan), day(back), n).Err(); err != nil {
			t.Fatal(err)
		}
	}
	e.requests(plan, k, &limit.Quota{Limit: 20, Period: plans.PeriodWeek, Offset: int32(offset)}, 3)
	wantUsage(t, e.usage(plan, k, day(6), day(0)).Items, map[string][][]int64{k: {
		{2, 13}, {1, 12}, {0, 12}, // the previous period, which had 5 before startDate
		{4, 16}, {0, 16}, {1, 15}, {3, 17}, // today: the live counter saw only Decide's 3
	}})
	call(e.c.UpdateUsage(e.ctx, &apigateway.UpdateUsageInput{UsagePlanId: aws.String(plan), KeyId: aws.String(k),
		PatchOperations: []types.PatchOperation{op(types.OpReplace, "/remaining", "12")}})).must(t)
	wantUsage(t, e.usage(plan, k, day(1), day(0)).Items, map[string][][]int64{k: {{1, 15}, {3, 12}}})
}
