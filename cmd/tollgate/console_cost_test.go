package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"

	"tollgate/internal/browsertest"
	"tollgate/internal/waittest"
	"tollgate/plans"
)

// A plan sold by the tokens an upstream reports (tollgate:cost=json:...)
// with a customer quota, as the console shows it: the plans page and the
// plan's page name the cost, its reservation and the customer quota and
// speak of units and of the Tokyo-anchored period; the Usage page shows a
// key's tokens and its requests side by side, and the customer's budget,
// used against the limit, over both of its keys.
func TestConsoleShowsCostUnitsAndCustomerBudgets(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser test runs in make test, not in make test-short")
	}
	// the upstream answers like an LLM API: its usage.total_tokens is the query's tokens
	llm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c-1","usage":{"total_tokens":%s}}`, r.URL.Query().Get("tokens"))
	}))
	t.Cleanup(llm.Close)
	s := mustStackWith(t, stackOptions{allInOne: true, adminToken: consoleToken})
	ctx, c := context.Background(), s.sdk
	api, err := c.CreateRestApi(ctx, &apigateway.CreateRestApiInput{Name: aws.String("llm")})
	must(t, "CreateRestApi", err)
	res, err := c.GetResources(ctx, &apigateway.GetResourcesInput{RestApiId: api.Id})
	must(t, "GetResources", err)
	chat, err := c.CreateResource(ctx, &apigateway.CreateResourceInput{RestApiId: api.Id, ParentId: res.Items[0].Id, PathPart: aws.String("chat")})
	must(t, "CreateResource", err)
	s.mustMethod(t, *api.Id, *chat.Id, "GET", true, &apigateway.PutIntegrationInput{
		Type: types.IntegrationTypeHttpProxy, IntegrationHttpMethod: aws.String("GET"), Uri: aws.String(llm.URL + "/chat")})
	_, err = c.CreateDeployment(ctx, &apigateway.CreateDeploymentInput{RestApiId: api.Id, StageName: aws.String("prod")})
	must(t, "CreateDeployment", err)
	plan, err := c.CreateUsagePlan(ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("tokens"), Throttle: throttle(1000, 1000),
		Quota:     quota(300, types.QuotaPeriodTypeMonth, 0),
		ApiStages: []types.ApiStage{{ApiId: api.Id, Stage: aws.String("prod")}},
		Tags: map[string]string{plans.CostTag: "json:usage.total_tokens", plans.CostReserveTag: "50", plans.CostIfMissingTag: "0",
			plans.QuotaAnchorTag: "15", plans.QuotaTimeZoneTag: "Asia/Tokyo"}})
	must(t, "CreateUsagePlan", err)
	// the customer quota as tollgate's native field; the cost as tags
	s.mustPatchPlan(t, *plan.Id, "/customerQuota/limit", "1000")
	var keys [2]*apigateway.CreateApiKeyOutput
	for i := range keys {
		keys[i], err = c.CreateApiKey(ctx, &apigateway.CreateApiKeyInput{Name: aws.String(fmt.Sprintf("acme-%d", i+1)), Enabled: true, CustomerId: aws.String("acme")})
		must(t, "CreateApiKey", err)
		_, err = c.CreateUsagePlanKey(ctx, &apigateway.CreateUsagePlanKeyInput{UsagePlanId: plan.Id, KeyId: keys[i].Id, KeyType: aws.String("API_KEY")})
		must(t, "CreateUsagePlanKey", err)
	}
	var budget struct{ Used int64 }
	customerUsed := func() int64 {
		s.adminJSONAs(t, consoleToken, http.MethodGet, "/usageplans/"+*plan.Id+"/customers/acme/usage", nil, &budget)
		return budget.Used
	}
	waittest.Until(t, "the keys reaching the gateway", browsertest.Wait, func() bool {
		return s.call(t, 0, *api.Id, "/prod/chat?tokens=0", *keys[0].Value).StatusCode == http.StatusOK
	})
	// acme-1: 101 + 111 tokens over 2 more requests (3 with the one above, costing 0); acme-2: 88 tokens
	used := int64(0)
	for _, r := range []struct {
		key    int
		tokens int64
	}{{0, 101}, {0, 111}, {1, 88}} {
		if got := s.call(t, 0, *api.Id, fmt.Sprintf("/prod/chat?tokens=%d", r.tokens), *keys[r.key].Value).StatusCode; got != http.StatusOK {
			t.Fatalf("%d tokens by acme-%d: got %d, want 200", r.tokens, r.key+1, got)
		}
		used += r.tokens
		waittest.Until(t, "the settled cost in the customer's budget", browsertest.Wait, func() bool { return customerUsed() == used })
	}

	p := browsertest.MustPage(t)
	console := "http://" + s.admin.AdminAddr + "/console/"
	p.Goto(console)
	signIn(t, p)
	p.Role("heading", "APIs")
	p.Role("link", "Usage plans").Click()
	p.Role("heading", "Usage plans")
	if rows := p.Table("Usage plans"); !rowWith(rows, "tokens", "1000 units/s, burst 1000", "300 units per MONTH from day 15, Asia/Tokyo",
		"settled from JSON usage.total_tokens; reserves 50; without it: 0", "1000 units per customer per MONTH") {
		t.Errorf("usage plans %q: want tokens with its cost and customer quota", rows)
	}

	p.Role("link", "tokens").Click()
	p.Role("heading", "Usage plan tokens")
	rows := p.Table("Cost and customer budget of the plan")
	for _, want := range [][]string{
		{"Cost per request", "settled after the response from JSON usage.total_tokens", "tag tollgate:cost = json:usage.total_tokens"},
		{"Reserved when decided", "50 units", "tag tollgate:cost-reserve = 50"},
		{"A response without the cost", "costs 0", "tag tollgate:cost-if-missing = 0"},
		{"Customer quota", "1000 units per customer per MONTH", "field customerQuota.limit = 1000"},
	} {
		if !rowWith(rows, want...) {
			t.Errorf("cost of the plan %q: no row %q", rows, want)
		}
	}
	form := p.Role("form", "Usage plan settings").Text()
	for _, want := range []string{"Units per second.", "Units at once.", "Units per key per period (from day 15 at midnight Asia/Tokyo)."} {
		if !strings.Contains(form, want) {
			t.Errorf("plan form %q does not say %q", form, want)
		}
	}
	if strings.Contains(form, "Requests per") {
		t.Errorf("plan form %q speaks of requests on a plan with a cost", form)
	}
	p.Screenshot("console-plan-cost")

	p.Goto(console + "#/usage?plan=" + *plan.Id + "&key=" + *keys[0].Id)
	p.Role("heading", "Usage of tokens")
	today := time.Now().UTC().Format("2006-01-02")
	if rows := p.Table("Daily usage"); !rowWith(rows, today, "212", "3") {
		t.Errorf("daily usage %q: want %s with 212 units used over 3 requests", rows, today)
	}
	if head := p.Table("Daily usage")[0]; !rowWith([][]string{head}, "Day (UTC)", "Units used", "Requests", "Units this quota period") {
		t.Errorf("daily usage columns %q", head)
	}
	if fig := p.Role("figure", "Daily usage chart").Text(); !strings.Contains(fig, "API key acme-1 used 212 units over 3 requests") {
		t.Errorf("chart caption %q: want 212 units over 3 requests", fig)
	}
	budgets := p.Table("Customer budgets")
	if !rowWith(budgets, "acme", "acme-1, acme-2", "300", "1000", "700") {
		t.Errorf("customer budgets %q: want acme with both keys, 300 used of 1000, 700 remaining", budgets)
	}
	p.Role("meter", "acme: 300 of 1000 used") // the budget drawn as a meter, named in words
	p.Eventually("the chart draws the units used", func() error {
		if n := usedPixels(p); n < 100 {
			return fmt.Errorf("%d pixels of the Used colour on the chart's canvas", n)
		}
		return nil
	})
	p.Screenshot("console-usage-cost")
}
