package gateway

import (
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/faultnet"
	"tollgate/internal/redistest"
	"tollgate/internal/waittest"
	"tollgate/limit"
	"tollgate/plans"
)

// settleGateway serves /ok (200), /fail (500) and /down (an upstream that
// refuses connections: 502) with a keyed proxy, for plan01 with a quota of
// 10 a day and the given tags.
func settleGateway(t *testing.T, tags map[string]string) *testGateway {
	t.Helper()
	up := httptestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			w.WriteHeader(500)
		}
	}))
	snap := snapshot(plans.Stage{},
		res{"/ok", methods(proxy(true, up.URL+"/ok"), "GET")},
		res{"/fail", methods(proxy(true, up.URL+"/fail"), "GET")},
		res{"/down", methods(proxy(true, "http://127.0.0.1:1/down"), "GET")},
	)
	addPlan(snap, plans.UsagePlan{ID: "plan01", Quota: &plans.Quota{Limit: 10, Period: plans.PeriodDay}, Tags: tags})
	return limitGateway(t, snap)
}

// wantCounts waits until the key's quota remaining and today's usage in
// plan01 are remaining and used.
func (tg *testGateway) wantCounts(t *testing.T, remaining, used int64) {
	t.Helper()
	var gotRem, gotUsed int64
	cond := func() bool {
		u, err := tg.engine.KeyUsage(t.Context(), "key0000001", "plan01", &limit.Quota{Limit: 10, Period: plans.PeriodDay})
		if err != nil {
			return false
		}
		gotRem, gotUsed = u.Quota.Remaining, u.Today
		return gotRem == remaining && gotUsed == used
	}
	if _, ok := waittest.Poll(10*time.Second, cond); !ok {
		t.Fatalf("quota remaining %d, usage %d; want %d, %d", gotRem, gotUsed, remaining, used)
	}
}

func (tg *testGateway) sendStatuses(t *testing.T) {
	t.Helper()
	for _, c := range []struct {
		path   string
		status int
	}{{"/prod/fail", 500}, {"/prod/ok", 200}, {"/prod/down", 502}, {"/prod/ok", 200}, {"/prod/fail", 500}, {"/prod/ok", 200}} {
		if got := tg.do(t, "GET", c.path, "x-api-key", goodKey); got.status != c.status {
			t.Fatalf("%s: status %d, want %d", c.path, got.status, c.status)
		}
	}
}

func TestQuotaCountsNon5xxGivesBack5xxAnswers(t *testing.T) {
	t.Parallel()
	tg := settleGateway(t, map[string]string{plans.QuotaCountsTag: plans.QuotaCountsNon5xx})
	tg.sendStatuses(t)
	tg.wantCounts(t, 7, 3) // the three 200s alone
	rep := tg.usage(t, goodKey)
	if rep.Quota.Used != 3 || rep.Today.Count != 3 {
		t.Errorf("partner usage: used %d today %d, want 3 3", rep.Quota.Used, rep.Today.Count)
	}
}

func TestQuotaCountsAllCountsEveryAnswer(t *testing.T) {
	t.Parallel()
	for _, tags := range []map[string]string{nil, {plans.QuotaCountsTag: plans.QuotaCountsAll}} {
		tg := settleGateway(t, tags)
		tg.sendStatuses(t)
		tg.wantCounts(t, 4, 6)
	}
}

// settledCostOnProxy is a gateway whose limiter Redis is reached through
// a proxy the test cuts, serving /llm for plan01 (a quota of 100 units a
// day, a cost read from X-Tokens, reserving 5), whose upstream answers
// X-Tokens: 12 once released.
func settledCostOnProxy(t *testing.T, release func() chan struct{}, reached chan<- struct{}) (*testGateway, *redistest.Server, *faultnet.Proxy) {
	t.Helper()
	srv := redistest.MustServerProcess(t)
	fault := faultnet.MustProxy(t, srv.Addr)
	client := redis.NewClient(&redis.Options{Addr: fault.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true,
		DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { _ = client.Close() })
	up := httptestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Tokens", "12")
		reached <- struct{}{}
		<-release()
	}))
	snap := snapshot(plans.Stage{}, res{"/llm", methods(proxy(true, up.URL+"/llm"), "GET")})
	addPlan(snap, plans.UsagePlan{ID: "plan01", Quota: &plans.Quota{Limit: 100, Period: plans.PeriodDay},
		Tags: map[string]string{plans.CostTag: "header:X-Tokens", plans.CostReserveTag: "5"}})
	tg := mustGatewayOn(t, client, "t", snap, nil)
	addTestKeys(tg.keys)
	return tg, srv, fault
}

// A settled-cost request admitted in failure mode open (the limiter
// unreachable when it was decided) is charged its real cost by its
// settle once Redis answers: the quota 12 units, usage one request of 12.
func TestFailOpenSettledCostIsChargedItsRealCost(t *testing.T) {
	t.Parallel()
	reached, release := make(chan struct{}, 1), make(chan struct{})
	close(release)
	tg, _, fault := settledCostOnProxy(t, func() chan struct{} { return release }, reached)
	fault.Cut()
	if got := tg.do(t, "GET", "/prod/llm", "x-api-key", goodKey); got.status != 200 || got.header.Get("X-RateLimit-Remaining") != "" {
		t.Fatalf("a request while the limiter is unreachable: %d, X-RateLimit-Remaining %q; want 200 without limits", got.status, got.header.Get("X-RateLimit-Remaining"))
	}
	waittest.Until(t, "a try of the settle failed", 20*time.Second, func() bool { return tg.settles.Failures() > 0 })
	fault.Restore()
	tg.wantUnits(t, 100, 12, 1, 12)
}

// A settle that fails is kept and counted once Redis answers again: after
// the response, the limiter is unreachable (its run never reaches Redis),
// or paused (its run waits in Redis and runs late, its reply lost); either
// way the settled cost lands on the quota and the request in usage
// exactly once.
func TestFailedSettleIsCountedOnceWhenRedisAnswers(t *testing.T) {
	t.Parallel()
	reached, release := make(chan struct{}), make(chan struct{})
	tg, srv, fault := settledCostOnProxy(t, func() chan struct{} { return release }, reached)
	for i, v := range []struct {
		name         string
		fail, answer func()
	}{
		{"unreachable", fault.Cut, fault.Restore},
		{"paused", func() { srv.Pause(t) }, func() { srv.Resume(t) }},
	} {
		done := make(chan response, 1)
		go func() { done <- tg.do(t, "GET", "/prod/llm", "x-api-key", goodKey) }()
		<-reached // decided: its reservation taken
		v.fail()
		failures := tg.settles.Failures()
		close(release)
		if got := <-done; got.status != 200 {
			t.Fatalf("%s: status %d, want 200", v.name, got.status)
		}
		waittest.Until(t, v.name+": a try of the settle failed", 20*time.Second, func() bool { return tg.settles.Failures() > failures })
		v.answer()
		release = make(chan struct{})
		tg.wantUnits(t, 100, int64(12*(i+1)), int64(i+1), int64(12*(i+1)))
	}
}
