package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"

	"tollgate/calendar"
	"tollgate/internal/browsertest"
	"tollgate/internal/redistest"
	"tollgate/internal/waittest"
	"tollgate/plans"
	"tollgate/plans/postgres"
	"tollgate/webhook/webhooktest"
)

// A plan's anchor, zone and alerts set with the AWS CLI's tag-resource: a
// bad zone is a 400 naming the tag; the key's quota then runs in periods
// from the 15th in Tokyo on both gateways (the partner endpoint's resetAt),
// and its 50 % and 100 % alerts arrive once each, signed, within 10 s,
// never again while the key keeps knocking at its limit; GET /alerts lists
// them delivered.
func TestQuotaAlertsArriveOnceEachInAnchoredPeriods(t *testing.T) {
	t.Parallel()
	hooks := webhooktest.MustReceiver(t, testWebhookSecret, 0)
	s := mustStackWith(t, stackOptions{webhookURL: hooks.URL, adminToken: testAdminToken, flushInterval: 100 * time.Millisecond})
	ctx := context.Background()
	api := s.mustCaseAPI(t)
	plan := s.mustPlan(t, api.id, planSpec{Throttle: throttle(100, 100), Quota: &types.QuotaSettings{Limit: 6, Period: types.QuotaPeriodTypeMonth}})
	arn := aws.String("arn:aws:apigateway:us-east-1::/usageplans/" + plan)

	_, err := s.sdk.TagResource(ctx, &apigateway.TagResourceInput{ResourceArn: arn, Tags: map[string]string{plans.QuotaTimeZoneTag: "Asia/Nowhere"}})
	if err == nil || !strings.Contains(err.Error(), plans.QuotaTimeZoneTag) || !strings.Contains(err.Error(), "400") {
		t.Fatalf("an unknown zone: %v, want 400 naming %s", err, plans.QuotaTimeZoneTag)
	}
	_, err = s.sdk.TagResource(ctx, &apigateway.TagResourceInput{ResourceArn: arn, Tags: map[string]string{
		plans.QuotaAnchorTag: "15", plans.QuotaTimeZoneTag: "Asia/Tokyo", plans.AlertsTag: "50,100"}})
	must(t, "TagResource", err)
	key, err := s.sdk.CreateApiKey(ctx, &apigateway.CreateApiKeyInput{Name: aws.String("acme-1"), Enabled: true, CustomerId: aws.String("acme")})
	must(t, "CreateApiKey", err)
	_, err = s.sdk.CreateUsagePlanKey(ctx, &apigateway.CreateUsagePlanKeyInput{UsagePlanId: &plan, KeyId: key.Id, KeyType: aws.String("API_KEY")})
	must(t, "CreateUsagePlanKey", err)
	s.sync(t)
	s.waitStatus(t, api.id, "/prod/items", *key.Value, 200, 5*time.Second) // the first requests of 6

	tokyo, _ := calendar.LoadZone("Asia/Tokyo")
	start, end := calendar.Calendar{Period: calendar.Month, Anchor: 15, Zone: tokyo}.Bounds(time.Now())
	var usage struct {
		Quota struct {
			Used    int
			ResetAt string
		} `json:"quota"`
	}
	res := s.partnerUsage(t, 1, api.id, *key.Value)
	must(t, "partner usage", json.Unmarshal(res, &usage))
	if usage.Quota.ResetAt != end.Format(time.RFC3339) {
		t.Fatalf("partner endpoint resetAt %q, want %s (the 15th in Tokyo)", usage.Quota.ResetAt, end.Format(time.RFC3339))
	}
	for i := usage.Quota.Used; i < 6; i++ {
		if res := s.call(t, i%2, api.id, "/prod/items", *key.Value); res.StatusCode != 200 {
			t.Fatalf("request %d of 6: %d", i+1, res.StatusCode)
		}
	}
	for i := range 2 {
		if res := s.call(t, i, api.id, "/prod/items", *key.Value); res.StatusCode != 429 {
			t.Fatalf("past the quota, gateway %d: %d, want 429", i, res.StatusCode)
		}
	}
	match := map[string]any{"type": plans.EventQuotaThreshold, "keyId": *key.Id}
	waittest.Until(t, "both alerts", 10*time.Second, func() bool { evs, _ := hooks.Events(match); return len(evs) >= 2 })
	// knocking at the limit sends nothing more
	for i := range 6 {
		s.call(t, i%2, api.id, "/prod/items", *key.Value)
	}
	var alerts struct {
		Item []plans.QuotaAlert `json:"item"`
	}
	waittest.Until(t, "GET /alerts shows both delivered", 5*time.Second, func() bool {
		s.adminJSON(t, http.MethodGet, "/alerts?planId="+plan, nil, &alerts)
		return len(alerts.Item) == 2 && alerts.Item[0].Delivery.State == plans.AlertDelivered && alerts.Item[1].Delivery.State == plans.AlertDelivered
	})
	evs, sigErr := hooks.Events(match)
	if sigErr != nil || len(evs) != 2 {
		t.Fatalf("webhooks %v (signature error %v), want 2", evs, sigErr)
	}
	for _, ev := range evs {
		want := map[string]any{"planId": plan, "customerId": "acme", "limit": 6.0,
			"periodStart": start.Format(time.RFC3339), "periodEnd": end.Format(time.RFC3339)}
		for k, v := range want {
			if ev[k] != v {
				t.Fatalf("webhook %v: %s is %v, want %v", ev, k, ev[k], v)
			}
		}
		if th := ev["threshold"]; !(th == 50.0 && ev["used"].(float64) >= 3) && !(th == 100.0 && ev["used"] == 6.0) {
			t.Fatalf("webhook %v: threshold %v at used %v", ev, th, ev["used"])
		}
	}
	if evs[0]["threshold"] == evs[1]["threshold"] || evs[0]["id"] == evs[1]["id"] {
		t.Fatalf("webhooks %v: want one per threshold, each its own id", evs)
	}
}

// partnerUsage reads the partner usage endpoint of apiID with key through
// gateway i.
func (s *stack) partnerUsage(t *testing.T, i int, apiID, key string) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+s.gateways[i].GatewayAddr+"/.well-known/tollgate/usage", nil)
	must(t, "new request", err)
	req.Host = apiID + ".execute-api.localhost"
	req.Header.Set("x-api-key", key)
	res, err := http.DefaultClient.Do(req)
	must(t, "partner usage", err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("partner usage via gateway %d: %d %s", i, res.StatusCode, b)
	}
	return b
}

// The console shows a plan's anchored period and alerts set by tags, on
// its Alerts page each alert the key crossed with its delivery, and on
// the page of a key with its own anchor and zone the plan's quota as that
// key runs it.
func TestConsoleShowsAnchoredQuotaAndAlerts(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser test runs in make test, not in make test-short")
	}
	hooks := webhooktest.MustReceiver(t, testWebhookSecret, 0)
	s := mustStackWith(t, stackOptions{allInOne: true, adminToken: consoleToken, webhookURL: hooks.URL, flushInterval: 100 * time.Millisecond})
	apiID := s.consoleAPI(t)
	ctx, c := context.Background(), s.sdk
	plan, err := c.CreateUsagePlan(ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("tokens"),
		Quota:     &types.QuotaSettings{Limit: 4, Period: types.QuotaPeriodTypeMonth},
		ApiStages: []types.ApiStage{{ApiId: aws.String(apiID), Stage: aws.String("prod")}},
		Tags:      map[string]string{plans.QuotaAnchorTag: "15", plans.QuotaTimeZoneTag: "Asia/Tokyo", plans.AlertsTag: "50,100"}})
	must(t, "CreateUsagePlan", err)
	key, err := c.CreateApiKey(ctx, &apigateway.CreateApiKeyInput{Name: aws.String("acme-1"), Enabled: true, CustomerId: aws.String("acme")})
	must(t, "CreateApiKey", err)
	_, err = c.CreateUsagePlanKey(ctx, &apigateway.CreateUsagePlanKeyInput{UsagePlanId: plan.Id, KeyId: key.Id, KeyType: aws.String("API_KEY")})
	must(t, "CreateUsagePlanKey", err)
	waittest.Until(t, "the key's quota runs out", 10*time.Second, func() bool {
		return s.call(t, 0, apiID, "/prod/items/1", *key.Value).StatusCode == http.StatusTooManyRequests
	})
	waittest.Until(t, "both alerts delivered", 10*time.Second, func() bool {
		evs, _ := hooks.Events(map[string]any{"type": plans.EventQuotaThreshold})
		return len(evs) == 2
	})

	p := browsertest.MustPage(t)
	console := "http://" + s.admin.AdminAddr + "/console/"
	p.Goto(console)
	signIn(t, p)
	p.Role("heading", "APIs")
	p.Goto(console + "#/plans")
	p.Role("heading", "Usage plans")
	if rows := p.Table("Usage plans"); !rowWith(rows, "tokens", *plan.Id, "4 per MONTH from day 15, Asia/Tokyo", "50, 100 %") {
		t.Errorf("usage plans %q: want tokens with its anchored quota and alerts", rows)
	}
	p.Goto(console + "#/alerts")
	p.Role("heading", "Alerts")
	p.Eventually("both alerts, delivered", func() error {
		rows := p.Table("Quota alerts")
		if !rowWith(rows, "tokens", *key.Id, "acme", "100 %", "4 of 4", "delivered") || !rowWith(rows, "tokens", *key.Id, "acme", "50 %", "delivered") {
			return fmt.Errorf("alerts %q", rows)
		}
		return nil
	})
	p.Screenshot("console-alerts")

	// a key on its own calendar: its page shows the plan's quota as the key runs it
	own, err := c.CreateApiKey(ctx, &apigateway.CreateApiKeyInput{Name: aws.String("acme-berlin"), Enabled: true, CustomerId: aws.String("acme"),
		Tags: map[string]string{plans.QuotaAnchorTag: "last", plans.QuotaTimeZoneTag: "Europe/Berlin"}})
	must(t, "CreateApiKey", err)
	_, err = c.CreateUsagePlanKey(ctx, &apigateway.CreateUsagePlanKeyInput{UsagePlanId: plan.Id, KeyId: own.Id, KeyType: aws.String("API_KEY")})
	must(t, "CreateUsagePlanKey", err)
	p.Goto(console + "#/keys/" + *own.Id)
	p.Role("heading", "API key acme-berlin")
	if rows := p.Table("Usage plans of the key"); !rowWith(rows, "tokens", "4 per MONTH from the last day, Europe/Berlin (the key's own calendar)") {
		t.Errorf("usage plans of the key %q: want tokens with the key's own anchor and zone", rows)
	}
	if probs := p.Problems(); len(probs) > 0 {
		t.Errorf("the page reported problems:\n%s", strings.Join(probs, "\n"))
	}
}

// An anchored period is decided on Redis's clock at every edge of the
// stack: with the limiter's clock 30 s before the 15th in Tokyo (months
// from the nodes'), the partner endpoint and the ledger's quota state name
// the period that ends then; a limiter that restarts empty gets the count
// back in that same period (the key stays at its limit); and at the edge,
// on Redis's clock, the key is admitted in the next period.
func TestAnchoredPeriodFollowsRedisClockThroughARestore(t *testing.T) {
	t.Parallel()
	a := mustTokyoStack(t, stackOptions{}, 3)
	s, clock, r, api, keyID, key := a.stack, a.clock, a.redis, a.api, a.keyID, a.key
	ctx := context.Background()

	edge := time.Date(2027, 3, 14, 15, 0, 0, 0, time.UTC) // the 15th of March in Tokyo
	next := time.Date(2027, 4, 14, 15, 0, 0, 0, time.UTC)
	clock.At(t, edge.Add(-30*time.Second))
	s.expectSeq(t, api.id, key, []seq{{200, "2", "3"}, {200, "1", "3"}, {200, "0", "3"}})
	var usage struct {
		Quota struct {
			Used    int
			ResetAt string
		} `json:"quota"`
	}
	must(t, "partner usage", json.Unmarshal(s.partnerUsage(t, 0, api.id, key), &usage))
	if usage.Quota.Used != 3 || usage.Quota.ResetAt != edge.Format(time.RFC3339) {
		t.Fatalf("partner usage %+v, want 3 used until %s", usage.Quota, edge)
	}
	db, err := postgres.Open(ctx, s.admin.Config.DatabaseURL, postgres.Options{})
	must(t, "open", err)
	defer db.Close()
	waittest.Until(t, "the ledger holds the quota state of the period before the edge", 10*time.Second, func() bool {
		qs, err := db.QuotaUsages(ctx, "", "", 10)
		return err == nil && len(qs) == 1 && qs[0].KeyID == keyID && qs[0].Count == 3 &&
			qs[0].PeriodStart.Equal(time.Date(2027, 2, 14, 15, 0, 0, 0, time.UTC))
	})

	r.stop(t) // the limiter restarts empty: the restore writes the period's count back
	r.wipe(t)
	r.start(t)
	waittest.Until(t, "the restored quota answers", 20*time.Second, func() bool {
		if json.Unmarshal(s.partnerUsage(t, 1, api.id, key), &usage) != nil {
			return false
		}
		return usage.Quota.Used == 3 && usage.Quota.ResetAt == edge.Format(time.RFC3339)
	})
	clock.At(t, edge.Add(-2*time.Second))
	admitted := 0 // each node may see the edge a poll apart: count what they admit
	took, ok := waittest.Poll(10*time.Second, func() bool {
		both := true
		for node := range 2 {
			if s.call(t, node, api.id, "/prod/items", key).StatusCode == http.StatusOK {
				admitted++
			} else {
				both = false
			}
		}
		return both
	})
	if !ok {
		t.Fatalf("not admitted by both gateways within 10 s of the edge (%d admitted)", admitted)
	}
	must(t, "partner usage", json.Unmarshal(s.partnerUsage(t, 0, api.id, key), &usage))
	if usage.Quota.ResetAt != next.Format(time.RFC3339) || usage.Quota.Used != admitted {
		t.Fatalf("partner usage after the edge %+v, want %d used in the period until %s", usage.Quota, admitted, next)
	}
	t.Logf("admitted in the next period %v after the limiter's clock was set 2 s before the edge", took)
}

// Issue 19's walk as a new user would take it: an upstream that reports
// the tokens of each answer, a customer with two keys and a 300-token
// monthly budget anchored to the 15th in Asia/Tokyo, alerts at 80 and
// 100 %. The customer is refused exactly when its tokens run out, on both
// gateways, whichever key asks, and each alert arrives once.
func TestCustomerTokenBudgetAnchoredInTokyoAlertsOnce(t *testing.T) {
	t.Parallel()
	hooks := webhooktest.MustReceiver(t, testWebhookSecret, 0)
	s := mustStackWith(t, stackOptions{webhookURL: hooks.URL, adminToken: testAdminToken, flushInterval: 100 * time.Millisecond})
	ctx := context.Background()
	api := s.mustCaseAPI(t)
	plan, err := s.sdk.CreateUsagePlan(ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("llm"), Throttle: throttle(1000, 1000),
		Quota:     quota(100000, types.QuotaPeriodTypeMonth, 0),
		ApiStages: []types.ApiStage{{ApiId: &api.id, Stage: aws.String("prod")}},
		Tags: map[string]string{plans.CostTag: "header:X-Tokens", plans.CustomerQuotaTag: "300",
			plans.QuotaAnchorTag: "15", plans.QuotaTimeZoneTag: "Asia/Tokyo", plans.AlertsTag: "80,100"}})
	must(t, "CreateUsagePlan", err)
	keys := s.mustCustomerKeys(t, *plan.Id, "acme", 2)
	s.sync(t)
	var used struct {
		Used                   int64
		PeriodStart, PeriodEnd string
	}
	customer := func() int64 {
		s.adminJSON(t, http.MethodGet, "/usageplans/"+*plan.Id+"/customers/acme/usage", nil, &used)
		return used.Used
	}
	// ask sends one request of key i through gateway i that the upstream
	// says cost tokens, and waits until the customer's budget shows it
	ask := func(i int, tokens, want int64) int {
		before := customer()
		res := s.call(t, i, api.id, fmt.Sprintf("/prod/items?header=X-Tokens:%d", tokens), keys[i])
		if res.StatusCode == http.StatusOK {
			waittest.Until(t, "the settled cost", 5*time.Second, func() bool { return customer() == before+tokens })
		}
		if got := customer(); got != want {
			t.Fatalf("after %d tokens by key %d: the customer used %d, want %d", tokens, i, got, want)
		}
		return res.StatusCode
	}
	for _, step := range []struct {
		key    int
		tokens int64
		used   int64
	}{{0, 120, 120}, {1, 100, 220}, {0, 30, 250}, {1, 50, 300}} {
		if st := ask(step.key, step.tokens, step.used); st != http.StatusOK {
			t.Fatalf("key %d asking for %d tokens with %d used: %d, want 200", step.key, step.tokens, step.used-step.tokens, st)
		}
	}
	tokyo, _ := calendar.LoadZone("Asia/Tokyo")
	start, end := calendar.Calendar{Period: calendar.Month, Anchor: 15, Zone: tokyo}.Bounds(time.Now())
	if used.PeriodStart != start.Format(time.RFC3339) || used.PeriodEnd != end.Format(time.RFC3339) {
		t.Fatalf("the customer's period [%s, %s), want [%s, %s)", used.PeriodStart, used.PeriodEnd, start, end)
	}
	for i := range 2 {
		if st := ask(i, 1, 300); st != http.StatusTooManyRequests {
			t.Fatalf("key %d with the budget spent: %d, want 429", i, st)
		}
	}
	match := map[string]any{"type": plans.EventQuotaThreshold, "customerId": "acme"}
	waittest.Until(t, "the customer's two alerts", 10*time.Second, func() bool { evs, _ := hooks.Events(match); return len(evs) >= 2 })
	var alerts struct {
		Item []plans.QuotaAlert `json:"item"`
	}
	waittest.Until(t, "both delivered", 5*time.Second, func() bool {
		s.adminJSON(t, http.MethodGet, "/alerts?customerId=acme", nil, &alerts)
		return len(alerts.Item) == 2 && alerts.Item[0].Delivery.State == plans.AlertDelivered && alerts.Item[1].Delivery.State == plans.AlertDelivered
	})
	evs, sigErr := hooks.Events(match)
	if sigErr != nil || len(evs) != 2 {
		t.Fatalf("webhooks %v (signature error %v), want the customer's 80 and 100 once each", evs, sigErr)
	}
	seen := map[float64]bool{}
	for _, ev := range evs {
		th := ev["threshold"].(float64)
		if ev["keyId"] != nil || ev["limit"] != 300.0 || ev["periodStart"] != start.Format(time.RFC3339) || ev["used"].(float64) < th*3 || seen[th] {
			t.Fatalf("webhook %v", ev)
		}
		seen[th] = true
	}
}

// tokyoStack is a stack on a limiter Redis whose clock the test steps,
// with the case API, a plan "tokyo" of a MONTH quota anchored to the 15th
// in Asia/Tokyo, and one key of it, synced to the gateways.
type tokyoStack struct {
	stack      *stack
	clock      *redistest.SteppedClock
	redis      *redisProc
	api        caseAPI
	plan       *apigateway.CreateUsagePlanOutput
	keyID, key string
}

// mustTokyoStack starts a tokyoStack with o (its redisURL and flush
// interval set here) and a quota of limit.
func mustTokyoStack(t *testing.T, o stackOptions, limit int32) *tokyoStack {
	t.Helper()
	a := &tokyoStack{clock: redistest.NewSteppedClock(t, 0)}
	a.redis = mustRedisServerWith(t, a.clock.Env(t))
	o.redisURL, o.flushInterval = a.redis.url(), 100*time.Millisecond
	a.stack = mustStackWith(t, o)
	a.api = a.stack.mustCaseAPI(t)
	var err error
	a.plan, err = a.stack.sdk.CreateUsagePlan(context.Background(), &apigateway.CreateUsagePlanInput{Name: aws.String("tokyo"),
		Throttle: throttle(1000, 1000), Quota: quota(limit, types.QuotaPeriodTypeMonth, 0),
		ApiStages: []types.ApiStage{{ApiId: &a.api.id, Stage: aws.String("prod")}},
		Tags:      map[string]string{plans.QuotaAnchorTag: "15", plans.QuotaTimeZoneTag: "Asia/Tokyo"}})
	must(t, "CreateUsagePlan", err)
	a.keyID, a.key = a.stack.mustKey(t, *a.plan.Id)
	a.stack.sync(t)
	return a
}
