package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"

	"tollgate/internal/waittest"
	"tollgate/plans"
	"tollgate/plans/postgres"
)

// faultStack is a stack on a redis-server of the test's own.
type faultStack struct {
	*stack
	redis *redisProc
	logs  *logBuffer
	api   caseAPI
	plan  string
	known string // a key each gateway has used (its record is cached)
	fresh string // a key no gateway has seen yet
}

// mustFaultStack starts a redis-server, a stack on it in failure mode mode
// with Redis deadline timeout, an API, a plan (quota 1000 per DAY) and two
// keys; known has been used on both gateways.
func mustFaultStack(t *testing.T, mode string, timeout time.Duration) *faultStack {
	t.Helper()
	f := &faultStack{redis: mustRedisServer(t), logs: &logBuffer{}}
	f.stack = mustStackWith(t, stackOptions{redisURL: f.redis.url(), failureMode: mode, redisTimeout: timeout, logs: f.logs})
	f.api = f.mustCaseAPI(t)
	f.plan = f.mustPlan(t, f.api.id, planSpec{Throttle: throttle(1000, 1000), Quota: quota(1000, types.QuotaPeriodTypeDay, 0)})
	_, f.known = f.mustKey(t, f.plan)
	_, f.fresh = f.mustKey(t, f.plan)
	f.sync(t)
	f.waitAdmitted(t, f.known, recovered)
	return f
}

// atoi parses a header number or fails.
func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return n
}

// limiterErrors sums tollgate_limiter_errors_total over both gateways.
func (f *faultStack) limiterErrors(t *testing.T) float64 {
	return counterValue(t, f.gateways[0], "tollgate_limiter_errors_total") + counterValue(t, f.gateways[1], "tollgate_limiter_errors_total")
}

// recovered is how long the fault tests give both gateways to decide again
// once Redis answers. The promise is one TOLLGATE_REDIS_TIMEOUT (250 ms
// here; docs/behaviour.md), which the tests log as measured; a machine
// loaded by parallel tests may stretch it, so they fail only on a gateway
// that did not recover at all.
const recovered = 10 * time.Second

// waitAdmitted polls key on both gateways until each answers 200 with
// rate-limit headers (the limiter decides again); it returns how long that
// took, or fails after limit. Every answer on the way must be 200 or 503,
// never 403.
func (f *faultStack) waitAdmitted(t *testing.T, key string, limit time.Duration) time.Duration {
	t.Helper()
	took, ok := waittest.Poll(limit, func() bool {
		done := true
		for i := range 2 {
			res := f.call(t, i, f.api.id, "/prod/items", key)
			if res.StatusCode != 200 && res.StatusCode != 503 {
				t.Fatalf("while Redis recovers, gateway %d: got %d, want 200 or 503 (never 403)", i, res.StatusCode)
			}
			done = done && res.StatusCode == 200 && res.Header.Get("X-RateLimit-Limit") != ""
		}
		return done
	})
	if !ok {
		t.Fatalf("key not admitted with limits on both gateways %v after Redis returned", limit)
	}
	return took
}

// TestFaultRedisDown kills the limiter's Redis: open admits known keys
// without limits (a metric, one log line per node and outage), closed
// answers 503; a key that cannot be verified gets 503 in both modes. When
// Redis is started again (with its append-only file, without its scripts:
// NOSCRIPT), both nodes enforce limits again without a restart (the test logs how soon).
func TestFaultRedisDown(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"open", "closed"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			f := mustFaultStack(t, mode, 250*time.Millisecond)
			errs := f.limiterErrors(t)
			f.redis.stop(t)
			wantKnown := map[string]int{"open": 200, "closed": 503}[mode]
			for i := range 4 {
				res := f.call(t, i%2, f.api.id, "/prod/items", f.known)
				if res.StatusCode != wantKnown {
					t.Fatalf("known key, Redis down, request %d: got %d, want %d", i+1, res.StatusCode, wantKnown)
				}
				if h := res.Header.Get("X-RateLimit-Limit"); h != "" {
					t.Errorf("known key, Redis down: X-RateLimit-Limit %q, want none", h)
				}
				if mode == "closed" {
					checkHeader(t, i+1, res, "x-amzn-ErrorType", "ServiceUnavailableException")
				}
			}
			for name, key := range map[string]string{"fresh": f.fresh, "unknown": "NeverCreatedNeverCreated01"} {
				for i := range 2 {
					if res := f.call(t, i, f.api.id, "/prod/items", key); res.StatusCode != 503 {
						t.Errorf("%s key, Redis down, via gateway %d: got %d, want 503 (never 403)", name, i, res.StatusCode)
					}
				}
			}
			if got := f.limiterErrors(t) - errs; got < 4 {
				t.Errorf("tollgate_limiter_errors_total grew by %v, want ≥ 4", got)
			}
			// An outage is logged once it has lasted outageAfter (a second;
			// one missed deadline on a loaded node is not an outage): traffic
			// goes on until both nodes have said so, and they say it once.
			waittest.Until(t, "both nodes log the outage", 10*time.Second, func() bool {
				f.call(t, 0, f.api.id, "/prod/items", f.known)
				f.call(t, 1, f.api.id, "/prod/items", f.known)
				return logCount(f.logs, "limiter unavailable") >= 2
			})
			f.call(t, 0, f.api.id, "/prod/items", f.known)
			f.call(t, 1, f.api.id, "/prod/items", f.known)
			if n := logCount(f.logs, "limiter unavailable"); n != 2 {
				t.Errorf("'limiter unavailable' logged %d times, want 2 (once per node for the outage)", n)
			}
			f.redis.start(t)
			took := f.waitAdmitted(t, f.known, recovered)
			t.Logf("%s: known key admitted with limits on both nodes %v after Redis answered", mode, took)
			f.waitAdmitted(t, f.fresh, recovered)
			// The quota survived the restart: the fresh key's count goes on.
			before := f.call(t, 0, f.api.id, "/prod/items", f.fresh).Header.Get("X-RateLimit-Remaining")
			after := f.call(t, 1, f.api.id, "/prod/items", f.fresh).Header.Get("X-RateLimit-Remaining")
			if before == "" || before == "1000" || after != itoa(atoi(t, before)-1) {
				t.Errorf("fresh key's quota after the restart: Remaining %q then %q, want it to count on (below 999, then one less)", before, after)
			}
		})
	}
}

// TestFaultNoScript: a script cache flushed under a running gateway (as a
// Redis restart or failover does) is reloaded on the spot: no failed
// decision, no 503.
func TestFaultNoScript(t *testing.T) {
	t.Parallel()
	f := mustFaultStack(t, "closed", 5*time.Second) // no decision may time out here
	errs := f.limiterErrors(t)
	for round := range 3 {
		if err := f.redis.client.ScriptFlush(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			res := f.call(t, i, f.api.id, "/prod/items", f.known)
			if res.StatusCode != 200 || res.Header.Get("X-RateLimit-Limit") != "1000" {
				t.Errorf("round %d, gateway %d after SCRIPT FLUSH: got %d with limit %q, want 200 with 1000", round+1, i, res.StatusCode, res.Header.Get("X-RateLimit-Limit"))
			}
		}
	}
	if got := f.limiterErrors(t) - errs; got != 0 {
		t.Errorf("limiter errors after SCRIPT FLUSH: got %v, want 0", got)
	}
}

// TestFaultRedisRestartedEmpty: Redis comes back without its data while no
// admin node runs. A key a node already knew keeps its last good record
// (never 403), but its quota and usage are not in Redis until an admin node
// writes them back from the usage ledger, so it gets 503, never 200 (issue
// 12: a key that had used up its quota must not be admitted); a key no
// node has seen gets 503 (never 403) until the republish; within 5 s of
// the admin's start both nodes enforce again.
func TestFaultRedisRestartedEmpty(t *testing.T) {
	t.Parallel()
	f := mustFaultStack(t, "open", time.Second)
	_ = f.admin.Close() // no republish until the gateways have reloaded
	f.redis.stop(t)
	f.redis.wipe(t)
	f.redis.start(t)
	waittest.Until(t, "both gateways notice the empty Redis", 10*time.Second, func() bool {
		return logCount(f.logs, "push: change stream ends before our position; reloading everything")+
			logCount(f.logs, "push: change stream readable again; config reloaded") >= 2
	})
	for start := time.Now(); time.Since(start) < 500*time.Millisecond; time.Sleep(5 * time.Millisecond) {
		for i := range 2 {
			if res := f.call(t, i, f.api.id, "/prod/items", f.known); res.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("known key via gateway %d, after it reloaded the empty Redis, before a restore: got %d, want 503", i, res.StatusCode)
			}
		}
	}
	for i := range 2 {
		if res := f.call(t, i, f.api.id, "/prod/items", f.fresh); res.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("unseen key via gateway %d before the republish: got %d, want 503", i, res.StatusCode)
		}
	}
	f.admin = f.startMain(t, f.admin.Config, "admin", f.logs)
	took := f.waitAdmitted(t, f.fresh, recovered)
	t.Logf("unseen key admitted on both nodes %v after the admin restarted", took)
	f.waitAdmitted(t, f.known, recovered)
}

// TestFaultRedisFlushed: Redis loses everything while running (FLUSHALL on
// the test's own server). Until the admin has republished and written the
// usage ledger back, valid keys get 503, never 403; within 5 s both nodes
// enforce again, and an unknown key is 403 again.
func TestFaultRedisFlushed(t *testing.T) {
	t.Parallel()
	f := mustFaultStack(t, "open", time.Second)
	if err := f.redis.client.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	took := f.waitAdmitted(t, f.fresh, recovered)
	t.Logf("fresh key admitted on both nodes %v after FLUSHALL", took)
	f.waitAdmitted(t, f.known, recovered)
	if res := f.call(t, 0, f.api.id, "/prod/items", "NeverCreatedNeverCreated01"); res.StatusCode != http.StatusForbidden {
		t.Errorf("unknown key after the republish: got %d, want 403", res.StatusCode)
	}
	if v := f.publishedVersion(t); v < 1 {
		t.Errorf("republished snapshot version %d, want ≥ 1", v)
	}
}

// TestFaultRedisSlow: Redis answers, but later than TOLLGATE_REDIS_TIMEOUT
// (CLIENT PAUSE holds every command): open admits known keys without
// limits, closed answers 503, an unverifiable key is 503 in both; limits
// apply again once Redis answers in time (the test logs how soon).
func TestFaultRedisSlow(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"open", "closed"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			f := mustFaultStack(t, mode, 250*time.Millisecond)
			ctx := context.Background()
			// 10 s: the first decision waits up to 1 s for its run, later
			// ones try Redis again every 250 ms (TOLLGATE_REDIS_TIMEOUT), and
			// the fresh key's lookup takes 500 ms; on a loaded machine the
			// five calls took over 5 s, and a pause that ended before them
			// let the fresh key through (200: a failure of the test, not of
			// the gateway; the check below tells the two apart).
			const pause = 10 * time.Second
			paused := time.Now()
			if err := f.redis.client.Do(ctx, "CLIENT", "PAUSE", strconv.FormatInt(pause.Milliseconds(), 10), "ALL").Err(); err != nil {
				t.Fatal(err)
			}
			wantKnown := map[string]int{"open": 200, "closed": 503}[mode]
			for i := range 4 {
				res := f.call(t, i%2, f.api.id, "/prod/items", f.known)
				if res.StatusCode != wantKnown || res.Header.Get("X-RateLimit-Limit") != "" {
					t.Errorf("known key, Redis slow, request %d: got %d with limit %q, want %d without limits", i+1, res.StatusCode, res.Header.Get("X-RateLimit-Limit"), wantKnown)
				}
			}
			if res := f.call(t, 0, f.api.id, "/prod/items", f.fresh); res.StatusCode != 503 {
				t.Errorf("fresh key, Redis slow: got %d, want 503 (never 403)", res.StatusCode)
			}
			if took := time.Since(paused); took >= pause {
				t.Fatalf("the calls took %v, longer than Redis was paused (%v): the answers above may come from a Redis that answered again", took, pause)
			}
			time.Sleep(time.Until(paused.Add(pause))) // the pause ends (a PING would outwait the client's 3 s read timeout)
			if err := f.redis.client.Ping(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			took := f.waitAdmitted(t, f.known, recovered)
			t.Logf("%s: limits apply %v after the pause ended", mode, took)
			f.waitAdmitted(t, f.fresh, recovered)
		})
	}
}

// TestUsageAndQuotaSurviveALimiterRestartedEmpty (issue 12): the limiter's
// redis-server is killed and started again without its data. Until the
// admin node has written the ledger back, the gateways answer the keys 503
// (never 200: the key that used up its quota is never admitted); then that
// key stays refused, another counts on from its count, and GetUsage still
// shows every request.
func TestUsageAndQuotaSurviveALimiterRestartedEmpty(t *testing.T) {
	t.Parallel()
	r := mustRedisServer(t)
	logs := &logBuffer{}
	s := mustStackWith(t, stackOptions{redisURL: r.url(), flushInterval: 100 * time.Millisecond, logs: logs})
	api := s.mustCaseAPI(t)
	p := s.mustPlan(t, api.id, planSpec{Throttle: throttle(1000, 1000), Quota: quota(3, types.QuotaPeriodTypeDay, 0)})
	usedID, used := s.mustKey(t, p)
	halfID, half := s.mustKey(t, p)
	s.sync(t)
	s.expectSeq(t, api.id, used, []seq{{200, "2", "3"}, {200, "1", "3"}, {200, "0", "3"}, {429, "0", "3"}})
	s.expectSeq(t, api.id, half, []seq{{200, "2", "3"}, {200, "1", "3"}}) // both gateways know it
	today := plans.UTCDate(time.Now())
	dbURL := s.admin.Config.DatabaseURL
	waittest.Until(t, "the ledger has both keys' counts", 30*time.Second, func() bool {
		return ledgerCount(t, dbURL, p, usedID, today) == 3 && ledgerCount(t, dbURL, p, halfID, today) == 2
	})

	r.stop(t)
	r.wipe(t)
	r.start(t)
	restarted := time.Now()
	var unavailable int
	var statuses [2]int
	refused := func() bool {
		for i := range 2 {
			res := s.call(t, i, api.id, "/prod/items", used)
			statuses[i] = res.StatusCode
			switch res.StatusCode {
			case http.StatusServiceUnavailable:
				unavailable++
			case http.StatusTooManyRequests:
			default:
				t.Fatalf("the key that used its quota, via gateway %d, %v after the restart: got %d, want 503 or 429", i, time.Since(restarted), res.StatusCode)
			}
		}
		return statuses == [2]int{429, 429}
	}
	if _, ok := waittest.Poll(20*time.Second, refused); !ok {
		t.Fatalf("the key that used its quota still gets %v 20 s after the restart, want 429", statuses)
	}
	t.Logf("the used-up key was refused by its restored quota %v after the restart (%d answers 503 before)", time.Since(restarted).Round(time.Millisecond), unavailable)
	s.expectSeq(t, api.id, half, []seq{{200, "0", "3"}, {429, "0", "3"}})
	day := today.Format(plans.UsageDateLayout)
	out, err := s.sdk.GetUsage(context.Background(), &apigateway.GetUsageInput{UsagePlanId: &p, StartDate: &day, EndDate: &day})
	must(t, "GetUsage", err)
	if want := map[string][][]int64{usedID: {{3, 0}}, halfID: {{3, 0}}}; !reflect.DeepEqual(out.Items, want) {
		t.Fatalf("GetUsage after the restart: got %v, want %v", out.Items, want)
	}
	if logCount(logs, "usage ledger: limiter Redis restored from the ledger") < 2 { // at start, after the restart
		t.Errorf("the admin did not log the restore:\n%s", logs.String())
	}
}

// A customer whose two keys used up its budget (tollgate:customer-quota,
// a month anchored to the 15th in Tokyo) stays refused, with either key on
// either gateway, after the limiter's redis-server restarted empty: the
// admin's restore writes the customer's use back from its keys' ledger
// counts of the period before it marks the slot, so no key of the
// customer is admitted in between (503, then 429). Another customer's key
// counts on.
func TestCustomerBudgetSurvivesALimiterRestartedEmpty(t *testing.T) {
	t.Parallel()
	r := mustRedisServer(t)
	s := mustStackWith(t, stackOptions{redisURL: r.url(), flushInterval: 100 * time.Millisecond})
	ctx := context.Background()
	api := s.mustCaseAPI(t)
	plan, err := s.sdk.CreateUsagePlan(ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("budget"), Throttle: throttle(1000, 1000),
		Quota:     quota(10, types.QuotaPeriodTypeMonth, 0),
		ApiStages: []types.ApiStage{{ApiId: &api.id, Stage: aws.String("prod")}},
		Tags:      map[string]string{plans.CustomerQuotaTag: "4", plans.QuotaAnchorTag: "15", plans.QuotaTimeZoneTag: "Asia/Tokyo"}})
	must(t, "CreateUsagePlan", err)
	var keys [3]string // two of acme, one of beta
	for i := range keys {
		customer := map[bool]string{true: "acme", false: "beta"}[i < 2]
		k, err := s.sdk.CreateApiKey(ctx, &apigateway.CreateApiKeyInput{Name: aws.String(fmt.Sprintf("%s-%d", customer, i)), Enabled: true, CustomerId: &customer})
		must(t, "CreateApiKey", err)
		_, err = s.sdk.CreateUsagePlanKey(ctx, &apigateway.CreateUsagePlanKeyInput{UsagePlanId: plan.Id, KeyId: k.Id, KeyType: aws.String("API_KEY")})
		must(t, "CreateUsagePlanKey", err)
		keys[i] = *k.Value
	}
	s.sync(t)
	for i, want := range []int{200, 200, 200, 200, 429, 429} { // acme's keys in turn, through both gateways
		if res := s.call(t, i%2, api.id, "/prod/items", keys[i%2]); res.StatusCode != want {
			t.Fatalf("acme's request %d: got %d, want %d", i+1, res.StatusCode, want)
		}
	}
	if res := s.call(t, 0, api.id, "/prod/items", keys[2]); res.StatusCode != http.StatusOK {
		t.Fatalf("beta's first request: got %d, want 200", res.StatusCode)
	}
	db, err := postgres.Open(ctx, s.admin.Config.DatabaseURL, postgres.Options{})
	must(t, "open", err)
	defer db.Close()
	waittest.Until(t, "the ledger has acme's 4 units and beta's 1 in the period", 30*time.Second, func() bool {
		uses, err := db.CustomerQuotaUsages(ctx, time.Now())
		got := map[string]int64{}
		for _, u := range uses {
			got[u.CustomerID] = u.Used
		}
		return err == nil && reflect.DeepEqual(got, map[string]int64{"acme": 4, "beta": 1})
	})

	r.stop(t)
	r.wipe(t)
	r.start(t)
	restarted := time.Now()
	var statuses [4]int
	refused := func() bool {
		for i := range statuses {
			res := s.call(t, i%2, api.id, "/prod/items", keys[i/2])
			statuses[i] = res.StatusCode
			if st := res.StatusCode; st != http.StatusServiceUnavailable && st != http.StatusTooManyRequests {
				t.Fatalf("acme's key %d via gateway %d, %v after the restart: got %d, want 503 or 429", i/2, i%2, time.Since(restarted), st)
			}
		}
		return statuses == [4]int{429, 429, 429, 429}
	}
	if _, ok := waittest.Poll(20*time.Second, refused); !ok {
		t.Fatalf("acme's keys still get %v 20 s after the restart, want 429", statuses)
	}
	t.Logf("acme's keys were refused by the restored customer quota %v after the restart", time.Since(restarted).Round(time.Millisecond))
	for i, want := range []int{200, 200, 200, 429} {
		if res := s.call(t, i%2, api.id, "/prod/items", keys[2]); res.StatusCode != want {
			t.Fatalf("beta's request %d after the restart: got %d, want %d", i+2, res.StatusCode, want)
		}
	}
}

// Issue 19's customer of two keys through a limiter Redis that is killed
// and started again (its append-only file kept), in failure mode open:
// the requests admitted without a decision are charged, once Redis
// answers, to the customer's budget and to each key's quota and usage,
// with the cost their responses reported (their settles), not a
// reservation, and not twice.
func TestFaultRedisKilledChargesTheCustomerTheRealCost(t *testing.T) {
	t.Parallel()
	r := mustRedisServer(t)
	s := mustStackWith(t, stackOptions{redisURL: r.url(), redisTimeout: 250 * time.Millisecond, adminToken: testAdminToken})
	ctx := context.Background()
	api := s.mustCaseAPI(t)
	plan, err := s.sdk.CreateUsagePlan(ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("llm"), Throttle: throttle(1000, 1000),
		Quota:     quota(1000, types.QuotaPeriodTypeDay, 0),
		ApiStages: []types.ApiStage{{ApiId: &api.id, Stage: aws.String("prod")}},
		Tags:      map[string]string{plans.CostTag: "header:X-Tokens", plans.CustomerQuotaTag: "1000"}})
	must(t, "CreateUsagePlan", err)
	keys := s.mustCustomerKeys(t, *plan.Id, "acme", 2)
	s.sync(t)
	customer := func() int64 {
		var u struct{ Used int64 }
		s.adminJSON(t, http.MethodGet, "/usageplans/"+*plan.Id+"/customers/acme/usage", nil, &u)
		return u.Used
	}
	// ask sends key i's request through gateway i, whose answer costs tokens
	ask := func(i int, tokens int) {
		t.Helper()
		if st := s.call(t, i, api.id, fmt.Sprintf("/prod/items?header=X-Tokens:%d", tokens), keys[i]).StatusCode; st != http.StatusOK {
			t.Fatalf("key %d asking for %d tokens: %d, want 200", i, tokens, st)
		}
	}
	ask(0, 10)
	ask(1, 10)
	waittest.Until(t, "the settled costs with Redis up", 10*time.Second, func() bool { return customer() == 20 })
	r.stop(t)
	ask(0, 7) // admitted without limits
	ask(1, 5)
	r.start(t)
	waittest.Until(t, "the outage's settled costs in the customer's budget", 20*time.Second, func() bool { return customer() == 32 })
	var usage struct {
		Quota struct{ Used int64 }            `json:"quota"`
		Today struct{ Count, Requests int64 } `json:"today"`
	}
	for i, want := range []int64{17, 15} {
		waittest.Until(t, fmt.Sprintf("key %d's quota and usage", i), 10*time.Second, func() bool {
			must(t, "partner usage", json.Unmarshal(s.partnerUsage(t, i, api.id, keys[i]), &usage))
			return usage.Quota.Used == want && usage.Today.Count == want && usage.Today.Requests == 2
		})
	}
	if got := customer(); got != 32 {
		t.Fatalf("the customer used %d after the charges landed, want 32 (each request once, its real cost)", got)
	}
}
