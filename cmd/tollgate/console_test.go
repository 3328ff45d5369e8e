package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"
	"github.com/chromedp/chromedp/kb"

	"tollgate/gateway"
	"tollgate/internal/browsertest"
	"tollgate/internal/waittest"
	"tollgate/plans"
)

const consoleToken = "console-test-token-0123456789abcdef"

// consoleAPI creates, as an operator would with the AWS CLI, API "shop":
// GET /items/{id} (API key required) and GET /public (no key, cached)
// proxied to the echo upstream, deployed to stage prod with a cache.
func (s *stack) consoleAPI(t *testing.T) string {
	t.Helper()
	ctx, c := context.Background(), s.sdk
	api, err := c.CreateRestApi(ctx, &apigateway.CreateRestApiInput{Name: aws.String("shop"), Description: aws.String("the console test's API")})
	must(t, "CreateRestApi", err)
	res, err := c.GetResources(ctx, &apigateway.GetResourcesInput{RestApiId: api.Id})
	must(t, "GetResources", err)
	for _, r := range []struct {
		parts       []string
		keyRequired bool
	}{{[]string{"items", "{id}"}, true}, {[]string{"public"}, false}, {[]string{"admin"}, false}} {
		parent := res.Items[0].Id
		for _, part := range r.parts {
			child, err := c.CreateResource(ctx, &apigateway.CreateResourceInput{RestApiId: api.Id, ParentId: parent, PathPart: aws.String(part)})
			must(t, "CreateResource "+part, err)
			parent = child.Id
		}
		authType := "NONE"
		if r.parts[0] == "admin" {
			authType = "AWS_IAM" // closed: tollgate cannot check IAM signatures
		}
		_, err = c.PutMethod(ctx, &apigateway.PutMethodInput{RestApiId: api.Id, ResourceId: parent, HttpMethod: aws.String("GET"),
			AuthorizationType: aws.String(authType), ApiKeyRequired: r.keyRequired})
		must(t, "PutMethod", err)
		_, err = c.PutIntegration(ctx, &apigateway.PutIntegrationInput{RestApiId: api.Id, ResourceId: parent, HttpMethod: aws.String("GET"),
			Type: types.IntegrationTypeHttpProxy, IntegrationHttpMethod: aws.String("GET"), Uri: aws.String(s.echoURL + "/things")})
		must(t, "PutIntegration", err)
	}
	_, err = c.CreateDeployment(ctx, &apigateway.CreateDeploymentInput{RestApiId: api.Id, StageName: aws.String("prod")})
	must(t, "CreateDeployment", err)
	_, err = c.UpdateStage(ctx, &apigateway.UpdateStageInput{RestApiId: api.Id, StageName: aws.String("prod"),
		PatchOperations: []types.PatchOperation{
			{Op: types.OpReplace, Path: aws.String("/cacheClusterEnabled"), Value: aws.String("true")},
			{Op: types.OpReplace, Path: aws.String("/~1public/GET/caching/enabled"), Value: aws.String("true")},
		}})
	must(t, "UpdateStage", err)
	return *api.Id
}

// TestConsole walks the operator console in headless Chromium, as an
// operator without a terminal would: sign in (a wrong token is refused in
// words; the right one typed and sent with the keyboard), see the API,
// create a usage plan and an API key (its value shown once), add the key to
// the plan, watch the key's traffic appear in the usage chart and the live
// view, and flush the stage cache after confirming. Every page is
// screenshotted at 1280 px and at phone width into the artifacts directory.
func TestConsole(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser test runs in make test, not in make test-short")
	}
	s := mustStackWith(t, stackOptions{allInOne: true, adminToken: consoleToken})
	apiID := s.consoleAPI(t)
	p := browsertest.MustPage(t)
	p.Goto("http://" + s.admin.AdminAddr + "/console/")

	signIn(t, p)
	p.Role("heading", "APIs")
	if rows := p.Table("APIs"); !rowWith(rows, "shop", apiID, "prod") {
		t.Errorf("APIs table: got %q, want a row for shop (%s) with stage prod", rows, apiID)
	}
	p.Screenshot("console-apis")
	p.Role("link", "shop").Click()
	p.Role("heading", "API shop")
	if rows := p.Table("Resources and methods"); !rowWith(rows, "GET /items/{id}", "none", "yes") || !rowWith(rows, "GET /public", "none", "no") ||
		!rowWith(rows, "GET /admin", "closed AWS_IAM") {
		t.Errorf("methods table: got %q, want GET /items/{id} requiring a key, GET /public not, GET /admin closed by AWS_IAM", rows)
	}
	p.Role("button", "Open GET /admin").Click()
	p.Role("button", "Confirm").Click()
	waitStatus(p, "GET /admin is open once the API is deployed.")
	p.Eventually("GET /admin is listed open", func() error {
		if rows := p.Table("Resources and methods"); !rowWith(rows, "GET /admin", "none") {
			return fmt.Errorf("methods %q", rows)
		}
		return nil
	})
	p.Screenshot("console-api")
	p.Label("Stage").Select("prod")
	p.Role("button", "Deploy").Click()
	p.Eventually("the deployment is reported", func() error {
		if msg := p.Role("status", "").Text(); !strings.HasPrefix(msg, "Deployed: deployment ") || !strings.HasSuffix(msg, " now serves stage prod.") {
			return fmt.Errorf("status %q", msg)
		}
		return nil
	})

	createPlan(t, p)
	value := createKey(t, p)
	addKeyToPlan(t, p, value)

	sendTraffic(t, s, apiID, value)
	checkUsage(t, p)
	flushCache(t, p, s, apiID)
	editStage(t, p, s, apiID)
	editRules(t, p, s, apiID)
	planID := editPlan(t, p, s)
	editKey(t, p, s, planID, apiID, value)
	checkPartners(t, p, s)
	checkAudit(t, p)
	checkDomains(t, p, s, apiID)
	checkPhoneLayout(t, p)

	if probs := p.Problems(); len(probs) > 0 {
		t.Errorf("the page reported problems (exceptions, console errors or CSP violations):\n%s", strings.Join(probs, "\n"))
	}
	t.Logf("console screenshots in %s", browsertest.ArtifactsDir(t))
}

// signIn tries a wrong token (refused, in words), then signs in with the
// keyboard only, and checks where the token is kept.
func signIn(t *testing.T, p *browsertest.Page) {
	t.Helper()
	p.Label("Admin token").Fill("not-the-token-0123456789abcdefghijkl")
	p.Role("button", "Sign in").Click()
	p.Eventually("a refused token is explained", func() error {
		if msg := p.Role("alert", "").Text(); !strings.Contains(msg, "The admin token was refused") {
			return fmt.Errorf("alert %q", msg)
		}
		return nil
	})
	p.Screenshot("console-sign-in")
	field := p.Label("Admin token")
	field.Fill("")
	field.Focus()
	p.Press(consoleToken)
	if got := field.Value(); got != consoleToken {
		t.Fatalf("typed token: got %q", got)
	}
	p.Press(kb.Enter)
	p.Role("link", "Usage plans")
	stored := browsertest.Eval[[]string](p, `[sessionStorage.getItem("tollgate.adminToken"), String(localStorage.length), document.cookie, location.href]`)
	if stored[0] != consoleToken || stored[1] != "0" || stored[2] != "" || strings.Contains(stored[3], consoleToken) {
		t.Errorf("token storage: sessionStorage %q, localStorage items %s, cookie %q, URL %q; want the token in sessionStorage only",
			stored[0], stored[1], stored[2], stored[3])
	}
}

// createPlan creates usage plan gold (quota 3 per DAY) on shop/prod
// through the form, reaching "Usage plans" by keyboard.
func createPlan(t *testing.T, p *browsertest.Page) {
	t.Helper()
	p.Role("link", "Usage plans").Focus()
	p.Press(kb.Enter)
	p.Role("heading", "Usage plans")
	p.Role("link", "Create usage plan").Click()
	p.Label("Name").Fill("gold")
	p.Label("Rate limit").Fill("100")
	p.Label("Burst limit").Fill("50")
	p.Label("Quota limit").Fill("3")
	p.Label("Quota period").Select("DAY")
	p.Label("Quota offset").Fill("1") // a DAY quota has offset 0 only: the API refuses it, in words
	p.Label("shop / prod").Click()
	p.Role("button", "Create").Click()
	p.Eventually("the refusal is explained", func() error {
		msg := p.Role("alert", "").Text()
		if !strings.Contains(msg, "quota offset for period DAY must be between 0 and 0") || !strings.Contains(msg, "(HTTP 400 BadRequestException)") {
			return fmt.Errorf("alert %q", msg)
		}
		return nil
	})
	p.Label("Quota offset").Fill("0")
	p.Role("button", "Create").Click()
	p.Role("heading", "Usage plan gold")
	if rows := p.Table("API stages of the plan"); !rowWith(rows, "shop / prod") {
		t.Errorf("plan stages: got %q, want shop / prod", rows)
	}
	p.Screenshot("console-plan")
}

// createKey creates API key partner-1 and returns its value, shown once.
func createKey(t *testing.T, p *browsertest.Page) string {
	t.Helper()
	p.Role("link", "API keys").Click()
	p.Role("heading", "API keys")
	p.Role("link", "Create API key").Click()
	p.Label("Name").Fill("partner-1")
	p.Role("button", "Create").Click()
	value := p.Label("API key value").Value()
	if f := (plans.KeyFormat{}); !f.Generated(value) || f.BadChecksum(value) {
		t.Fatalf("API key value: got %q, want a generated value (prefix tg, checksum)", value)
	}
	p.Role("button", "Copy")
	p.Screenshot("console-key-created")
	return value
}

// addKeyToPlan opens the new key (its value no longer shown) and adds it
// to plan gold.
func addKeyToPlan(t *testing.T, p *browsertest.Page, value string) {
	t.Helper()
	p.Role("link", "Open the key").Click()
	p.Role("heading", "API key partner-1")
	p.Label("Usage plan").Select("gold")
	p.Role("button", "Add to plan").Click()
	if rows := p.Table("Usage plans of the key"); !rowWith(rows, "gold", "3 per DAY") {
		t.Errorf("key's plans: got %q, want gold", rows)
	}
	if html := browsertest.Eval[string](p, `document.documentElement.outerHTML + JSON.stringify(sessionStorage)`); strings.Contains(html, value) {
		t.Error("the key's value is still in the page after leaving the creation view")
	}
	p.Screenshot("console-key")
}

// sendTraffic calls GET /items/{id} with the key until the gateway knows
// it, then spends the quota of 3 and is refused twice for quota.
func sendTraffic(t *testing.T, s *stack, apiID, value string) {
	t.Helper()
	waittest.Until(t, "the key added in the console reaching the gateway", browsertest.Wait, func() bool {
		return s.call(t, 0, apiID, "/prod/items/0", value).StatusCode == http.StatusOK
	})
	for i, want := range []int{200, 200, 429, 429} {
		if got := s.call(t, 0, apiID, fmt.Sprintf("/prod/items/%d", i+1), value).StatusCode; got != want {
			t.Fatalf("request %d: got %d, want %d", i+2, got, want)
		}
	}
	// the partner usage endpoint is on no stage: the live view lists no row for it
	if got := s.call(t, 0, apiID, gateway.UsagePath, value).StatusCode; got != http.StatusOK {
		t.Fatalf("partner usage endpoint: got %d, want 200", got)
	}
}

// checkUsage reads the key's usage chart (3 used today, 0 remaining) and
// the live view (3 admitted, 2 refused for quota on shop / prod).
func checkUsage(t *testing.T, p *browsertest.Page) {
	t.Helper()
	p.Role("link", "Usage").Click()
	p.Role("heading", "Usage")
	p.Label("Usage plan").Select("gold")
	p.Eventually("the key list follows the plan", func() error {
		n := browsertest.Eval[int](p, `[...document.querySelectorAll("select[name=key] option")].filter((o) => o.text.startsWith("partner-1")).length`)
		if n != 1 {
			return fmt.Errorf("%d partner-1 options", n)
		}
		return nil
	})
	keyOption := browsertest.Eval[string](p, `[...document.querySelectorAll("select[name=key] option")].find((o) => o.text.startsWith("partner-1")).text`)
	p.Label("API key").Select(keyOption)
	p.Role("button", "Show usage").Click()
	today := time.Now().UTC().Format("2006-01-02")
	p.Eventually("today's usage row", func() error {
		rows := p.Table("Daily usage")
		if !rowWith(rows, today, "3", "0") {
			return fmt.Errorf("daily usage %q, want %s used 3 remaining 0", rows, today)
		}
		return nil
	})
	if fig := p.Role("figure", "Daily usage chart").Text(); !strings.Contains(fig, "API key partner-1 used 3 requests") {
		t.Errorf("chart caption: got %q, want it to say partner-1 used 3 requests", fig)
	}
	p.Eventually("the chart draws the used bars", func() error {
		if n := usedPixels(p); n < 100 {
			return fmt.Errorf("%d pixels of the Used colour on the chart's canvas", n)
		}
		return nil
	})
	p.Eventually("the live view counts the stage's requests", func() error {
		rows := p.Table("Requests per stage on this node")
		if !rowWith(rows, "shop / prod", "3", "0", "2") {
			return fmt.Errorf("live view %q, want shop / prod admitted 3, throttled 0, quota refused 2", rows)
		}
		for _, row := range rows {
			if len(row) > 0 && (strings.Contains(row[0], "well-known") || strings.HasSuffix(strings.TrimSpace(row[0]), "/")) {
				t.Errorf("live view lists the partner usage endpoint as a stage: %q", row)
			}
		}
		return nil
	})
	p.Eventually("the live view's rates and chart after a second reading", func() error {
		rows := p.Table("Requests per stage on this node")
		if rowWith(rows, "…") || !browsertest.Eval[bool](p, `!!document.querySelector("figure[aria-label='Live requests per second'] canvas")`) {
			return fmt.Errorf("live view %q without rates or chart", rows)
		}
		return nil
	})
	p.Screenshot("console-usage")
}

// usedPixels counts the pixels of the daily chart's canvas drawn in the
// "Used" series colour (#0b5cad).
func usedPixels(p *browsertest.Page) int {
	return browsertest.Eval[int](p, `(() => {
		const c = document.querySelector("figure[aria-label='Daily usage chart'] canvas");
		if (!c) return 0;
		const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
		let n = 0;
		for (let i = 0; i < d.length; i += 4) {
			if (Math.abs(d[i] - 11) < 24 && Math.abs(d[i + 1] - 92) < 24 && Math.abs(d[i + 2] - 173) < 24 && d[i + 3] > 200) n++;
		}
		return n;
	})()`)
}

// flushCache fills the cache of GET /public, flushes the stage cache in the
// console after confirming, and sees the next request miss.
func flushCache(t *testing.T, p *browsertest.Page, s *stack, apiID string) {
	t.Helper()
	for _, want := range []string{"Miss", "Hit"} {
		if got := s.call(t, 0, apiID, "/prod/public", "").Header.Get("X-Cache"); got != want {
			t.Fatalf("GET /public before the flush: X-Cache %q, want %q", got, want)
		}
	}
	p.Role("link", "APIs").Click()
	p.Role("heading", "APIs") // else "prod" may be found on the page being replaced
	p.Role("link", "prod").Click()
	p.Role("heading", "Stage prod")
	p.Screenshot("console-stage")
	p.Role("button", "Flush cache").Click()
	p.Role("dialog", "Flush the cache of stage prod?")
	p.Press(kb.Escape) // cancels: nothing is flushed
	p.Eventually("Escape closes the dialog", func() error {
		if n := browsertest.Eval[int](p, `document.querySelectorAll("dialog").length`); n != 0 {
			return fmt.Errorf("%d dialogs", n)
		}
		return nil
	})
	if got := s.call(t, 0, apiID, "/prod/public", "").Header.Get("X-Cache"); got != "Hit" {
		t.Errorf("GET /public after cancelling the flush: X-Cache %q, want Hit", got)
	}
	p.Role("button", "Flush cache").Click()
	p.Role("dialog", "Flush the cache of stage prod?")
	p.Screenshot("console-flush-confirm")
	p.Role("button", "Confirm").Click()
	waitStatus(p, "The cache of stage prod was flushed.")
	if got := s.call(t, 0, apiID, "/prod/public", "").Header.Get("X-Cache"); got != "Miss" {
		t.Errorf("GET /public after the flush: X-Cache %q, want Miss", got)
	}
}

// editStage saves the stage throttle, then GET /items/{id}'s own throttle
// and cache key parameter, and reads them back with the AWS SDK.
func editStage(t *testing.T, p *browsertest.Page, s *stack, apiID string) {
	t.Helper()
	ctx := context.Background()
	p.Label("Rate limit").Fill("20")
	p.Label("Burst limit").Fill("40")
	p.Role("button", "Save").Click()
	waitStatus(p, "Stage settings saved.")
	p.Role("link", "Edit GET /items/{id}").Click()
	p.Role("heading", "GET /items/{id} on stage prod")
	p.Label("Rate limit").Fill("5")
	p.Label("Burst limit").Fill("10")
	p.Label("Cache key parameters").Fill("method.request.querystring.q")
	p.Role("button", "Save").Click()
	waitStatus(p, "Settings of GET /items/{id} saved.")
	st, err := s.sdk.GetStage(ctx, &apigateway.GetStageInput{RestApiId: aws.String(apiID), StageName: aws.String("prod")})
	must(t, "GetStage", err)
	all, method := st.MethodSettings["*/*"], st.MethodSettings["~1items~1{id}/GET"]
	if all.ThrottlingRateLimit != 20 || all.ThrottlingBurstLimit != 40 || method.ThrottlingRateLimit != 5 || method.ThrottlingBurstLimit != 10 {
		t.Errorf("stage throttles after Save: */* %v/%d, GET /items/{id} %v/%d; want 20/40 and 5/10",
			all.ThrottlingRateLimit, all.ThrottlingBurstLimit, method.ThrottlingRateLimit, method.ThrottlingBurstLimit)
	}
	res, err := s.sdk.GetResources(ctx, &apigateway.GetResourcesInput{RestApiId: aws.String(apiID), Embed: []string{"methods"}})
	must(t, "GetResources", err)
	for _, r := range res.Items {
		if aws.ToString(r.Path) == "/items/{id}" {
			if got := r.ResourceMethods["GET"].MethodIntegration.CacheKeyParameters; len(got) != 1 || got[0] != "method.request.querystring.q" {
				t.Errorf("cache key parameters after Save: got %q, want [method.request.querystring.q]", got)
			}
		}
	}
}

// editRules creates a rate-limit rule on stage prod (a refusal first,
// explained in words), changes its mode, limit and then its algorithm,
// reads each change back from the admin API, and deletes it.
func editRules(t *testing.T, p *browsertest.Page, s *stack, apiID string) {
	t.Helper()
	p.Role("link", "APIs").Click()
	p.Role("heading", "APIs") // else "prod" may be found on the page being replaced
	p.Role("link", "prod").Click()
	p.Role("heading", "Stage prod")
	if txt := p.Role("region", "Rate-limit rules").Text(); txt != "This stage has no rate-limit rules." {
		t.Errorf("rules before any: got %q", txt)
	}
	p.Role("link", "Create rule").Click()
	p.Role("heading", "Create rule on stage prod")
	p.Label("Name").Fill("per-ip")
	p.Label("Resource path").Select("/public")
	p.Label("HTTP method").Select("GET")
	p.Label("Key by").Fill("ip, header:X-Tenant")
	p.Label("Algorithm").Select("SLIDING_WINDOW")
	p.Label("Limit").Fill("10")
	p.Role("button", "Create").Click()
	p.Eventually("the missing window is explained", func() error {
		if msg := p.Role("alert", "").Text(); !strings.Contains(msg, "windowSeconds is required") {
			return fmt.Errorf("alert %q", msg)
		}
		return nil
	})
	p.Label("Window (seconds)").Fill("60")
	p.Role("button", "Create").Click()
	p.Role("heading", "Stage prod")
	waitStatus(p, "Rule per-ip created.")
	if rows := p.Table("Rate-limit rules"); !rowWith(rows, "per-ip", "GET /public", "ip, header:x-tenant", "SLIDING_WINDOW: 10 per 60 s", "enforce") {
		t.Errorf("rules table: got %q", rows)
	}
	p.Screenshot("console-rules")
	p.Role("link", "Edit rule per-ip").Click()
	p.Role("heading", "Rule per-ip")
	p.Label("Mode").Select("Shadow (only report)")
	p.Label("Limit").Fill("20")
	p.Role("button", "Save").Click()
	waitStatus(p, "Rule per-ip saved.")
	if r := s.adminRule(t, apiID, "per-ip"); r.Mode != "SHADOW" || r.Limit == nil || *r.Limit != 20 || *r.WindowSeconds != 60 {
		t.Errorf("rule after Save: got %+v, want SHADOW with limit 20 per 60 s", r)
	}
	p.Label("Algorithm").Select("CONCURRENCY")
	p.Label("Limit").Fill("3")
	p.Role("button", "Save").Click()
	waitStatus(p, "Rule per-ip saved.")
	if r := s.adminRule(t, apiID, "per-ip"); r.Algorithm != "CONCURRENCY" || *r.Limit != 3 || r.WindowSeconds != nil {
		t.Errorf("rule after the algorithm change: got %+v, want CONCURRENCY 3 without a window", r)
	}
	p.Screenshot("console-rule")
	p.Role("button", "Delete rule").Click()
	p.Role("button", "Confirm").Click()
	p.Role("heading", "Stage prod")
	waitStatus(p, "Rule per-ip deleted.")
	if txt := p.Role("region", "Rate-limit rules").Text(); txt != "This stage has no rate-limit rules." {
		t.Errorf("rules after Delete: got %q", txt)
	}
}

// adminRule reads the rule named name of stage prod from the admin API.
func (s *stack) adminRule(t *testing.T, apiID, name string) plans.RateLimitRule {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+s.admin.AdminAddr+"/restapis/"+apiID+"/stages/prod/ratelimitrules", nil)
	must(t, "new request", err)
	req.Header.Set("Authorization", "Bearer "+consoleToken)
	res, err := http.DefaultClient.Do(req)
	must(t, "GetRateLimitRules", err)
	defer res.Body.Close()
	var list struct{ Item []plans.RateLimitRule }
	must(t, "decode rules", json.NewDecoder(res.Body).Decode(&list))
	for _, r := range list.Item {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("stage prod has no rule %s: %+v", name, list.Item)
	return plans.RateLimitRule{}
}

// editPlan raises plan gold's throttle and sets a per-method throttle,
// reads them back with the AWS SDK and returns the plan's id.
func editPlan(t *testing.T, p *browsertest.Page, s *stack) string {
	t.Helper()
	p.Role("link", "Usage plans").Click()
	p.Role("link", "gold").Click()
	p.Role("heading", "Usage plan gold")
	p.Label("Rate limit").Fill("200")
	p.Role("button", "Save").Click()
	waitStatus(p, "Usage plan gold saved.")
	p.Role("link", "Method throttles of shop / prod").Click()
	p.Label("GET /items/{id} requests per second").Fill("7")
	p.Label("GET /items/{id} burst").Fill("14")
	p.Role("button", "Save").Click()
	waitStatus(p, "Method throttles saved.")
	plans, err := s.sdk.GetUsagePlans(context.Background(), &apigateway.GetUsagePlansInput{})
	must(t, "GetUsagePlans", err)
	if len(plans.Items) != 1 {
		t.Fatalf("usage plans: got %d, want 1", len(plans.Items))
	}
	plan := plans.Items[0]
	if plan.Throttle.RateLimit != 200 || plan.Throttle.BurstLimit != 50 {
		t.Errorf("plan throttle after Save: %v/%d, want 200/50", plan.Throttle.RateLimit, plan.Throttle.BurstLimit)
	}
	if mt := plan.ApiStages[0].Throttle["/items/{id}/GET"]; mt.RateLimit != 7 || mt.BurstLimit != 14 {
		t.Errorf("per-method throttle after Save: %v/%d, want 7/14", mt.RateLimit, mt.BurstLimit)
	}
	return aws.ToString(plan.Id)
}

// editKey filters the key list, disables partner-1 from it and deletes it
// after confirming; the plan is left without keys.
func editKey(t *testing.T, p *browsertest.Page, s *stack, planID, apiID, value string) {
	t.Helper()
	ctx := context.Background()
	p.Role("link", "API keys").Click()
	p.Label("Filter").Fill("nobody")
	p.Role("button", "Apply filter").Click()
	p.Eventually("the filter leaves no key", func() error {
		if txt := p.Role("region", "API keys").Text(); txt != "No API key matches the filter." {
			return fmt.Errorf("list %q", txt)
		}
		return nil
	})
	p.Label("Filter").Fill("partner")
	p.Role("button", "Apply filter").Click()
	p.Role("button", "Disable partner-1").Click()
	p.Role("button", "Enable partner-1")
	keys, err := s.sdk.GetApiKeys(ctx, &apigateway.GetApiKeysInput{})
	must(t, "GetApiKeys", err)
	if len(keys.Items) != 1 || keys.Items[0].Enabled {
		t.Fatalf("keys after Disable: got %+v, want partner-1 disabled", keys.Items)
	}
	p.Screenshot("console-keys")
	p.Role("link", "partner-1").Click()

	// Enabled again with an expiry, which the page shows; then a rotation
	// with a 10-minute overlap.
	p.Label("Expires at").Fill("2030-01-31T00:00:00Z")
	p.Label("Enabled").Click()
	p.Role("button", "Save").Click()
	waitStatus(p, "API key partner-1 saved.")
	p.Eventually("the key page shows the expiry", func() error {
		if txt := p.Role("main", "").Text(); !strings.Contains(txt, "expires 2030-01-31 00:00 UTC") {
			return fmt.Errorf("page %q", txt)
		}
		return nil
	})
	keys, err = s.sdk.GetApiKeys(ctx, &apigateway.GetApiKeysInput{})
	must(t, "GetApiKeys", err)
	if got := keys.Items[0].Tags[plans.ExpiresAtTag]; got != "2030-01-31T00:00:00Z" || !keys.Items[0].Enabled {
		t.Errorf("after Save: expiry tag %q, enabled %v; want 2030-01-31T00:00:00Z, enabled", got, keys.Items[0].Enabled)
	}
	p.Label("The old value keeps working for").Select("10 minutes")
	p.Role("button", "Rotate").Click()
	p.Role("heading", "New value of API key partner-1")
	rotated := p.Label("API key value").Value()
	if rotated == "" || rotated == value {
		t.Fatalf("rotated value %q, want a new one", rotated)
	}
	p.Screenshot("console-key-rotated")
	// Both values are the key's until the overlap ends: its quota is used
	// up, so each answers 429 (a refused value would be 403).
	deadline := time.Now().Add(browsertest.Wait)
	for s.call(t, 0, apiID, "/prod/items/9", rotated).StatusCode != http.StatusTooManyRequests {
		if time.Now().After(deadline) {
			t.Fatalf("the rotated value does not reach the gateway after %v", browsertest.Wait)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := s.call(t, 0, apiID, "/prod/items/9", value).StatusCode; got != http.StatusTooManyRequests {
		t.Errorf("the previous value during the overlap: got %d, want 429 (the key's, over quota)", got)
	}
	p.Role("link", "API keys").Click()
	p.Role("heading", "API keys")
	p.Role("link", "partner-1").Click()
	p.Role("button", "Delete API key").Click()
	p.Role("button", "Confirm").Click()
	p.Role("heading", "API keys")
	waitStatus(p, "API key partner-1 deleted.")
	pk, err := s.sdk.GetUsagePlanKeys(ctx, &apigateway.GetUsagePlanKeysInput{UsagePlanId: aws.String(planID)})
	must(t, "GetUsagePlanKeys", err)
	if len(pk.Items) != 0 {
		t.Errorf("plan keys after deleting the key: got %d, want 0", len(pk.Items))
	}
}

// checkPartners invites a partner on the Partners page (the link shown
// once), accepts the invite in the portal, and revokes a pending invite
// and the account there.
func checkPartners(t *testing.T, p *browsertest.Page, s *stack) {
	t.Helper()
	invite := func(email string) string {
		p.Role("link", "Partners").Click()
		p.Role("heading", "Partners")
		p.Label("Email").Fill(email)
		p.Label("Customer ID").Fill("partner-co")
		p.Label("gold").Click()
		p.Role("button", "Invite").Click()
		p.Role("heading", "Invite for "+email)
		return p.Label("Invite link").Value()
	}
	link := invite("ann@partner.example")
	if want := "http://" + s.admin.AdminAddr + "/portal/invite/"; !strings.HasPrefix(link, want) {
		t.Fatalf("invite link %q, want it under %s", link, want)
	}
	p.Screenshot("console-partner-invited")
	p.Goto(link)
	p.Role("heading", "Accept your invitation")
	p.Label("Password").Fill("correct horse battery staple")
	p.Role("button", "Create account").Click()
	p.Role("heading", "APIs")
	p.Goto("http://" + s.admin.AdminAddr + "/console/#/partners")
	invite("bob@partner.example")
	p.Role("button", "Back to partners").Click()
	p.Eventually("the account and the pending invite are listed", func() error {
		accounts, invites := p.Table("Partner accounts"), p.Table("Pending invites")
		if !rowWith(accounts, "ann@partner.example", "partner-co", "gold") || !rowWith(invites, "bob@partner.example", "partner-co", "gold") {
			return fmt.Errorf("accounts %q, invites %q", accounts, invites)
		}
		return nil
	})
	p.Screenshot("console-partners")
	p.Role("button", "Revoke invite bob@partner.example").Click()
	p.Role("button", "Confirm").Click()
	waitStatus(p, "The invite of bob@partner.example is revoked.")
	p.Role("button", "Revoke account ann@partner.example").Click()
	p.Role("button", "Confirm").Click()
	waitStatus(p, "The portal account of ann@partner.example is revoked.")
	var accounts, invites struct{ Item []any }
	s.adminJSONAs(t, consoleToken, "GET", "/portal/accounts", nil, &accounts)
	s.adminJSONAs(t, consoleToken, "GET", "/portal/invites", nil, &invites)
	if len(accounts.Item) != 0 || len(invites.Item) != 0 {
		t.Errorf("after revoking: accounts %v, invites %v, want none", accounts.Item, invites.Item)
	}
}

// waitStatus waits for the status region to say want.
func waitStatus(p *browsertest.Page, want string) {
	p.Eventually("status "+want, func() error {
		if got := p.Role("status", "").Text(); got != want {
			return fmt.Errorf("status %q", got)
		}
		return nil
	})
}

// checkPhoneLayout shows each section at 390 px: nothing is wider than the
// screen (wide tables scroll inside their own region).
func checkPhoneLayout(t *testing.T, p *browsertest.Page) {
	t.Helper()
	p.Viewport(390, 844)
	defer p.Viewport(1280, 900)
	for _, section := range []struct{ link, heading, shot string }{
		{"APIs", "APIs", "console-apis-phone"}, {"Usage plans", "Usage plans", "console-plans-phone"},
		{"API keys", "API keys", "console-keys-phone"}, {"Usage", "Usage", "console-usage-phone"},
		{"Audit", "Audit", "console-audit-phone"}, {"Domain names", "Domain names", "console-domains-phone"},
		{"Partners", "Partners", "console-partners-phone"}} {
		p.Role("link", section.link).Click()
		p.Role("heading", section.heading)
		if w := browsertest.Eval[[]int](p, `[document.documentElement.scrollWidth, window.innerWidth]`); w[0] > w[1] {
			t.Errorf("%s at phone width: page is %d px wide in a %d px window", section.link, w[0], w[1])
		}
		p.Screenshot(section.shot)
	}
}

// checkAudit opens the audit page: the changes made above are there with
// who made them and through which door (the SDK's signed calls: api; the
// console's: console), and filtering by actor keeps only that actor's.
func checkAudit(t *testing.T, p *browsertest.Page) {
	t.Helper()
	p.Role("link", "Audit").Click()
	p.Role("heading", "Audit")
	p.Eventually("the audit log lists the console's and the SDK's changes", func() error {
		rows := p.Table("Audit log")
		if !rowWith(rows, "bootstrap", "console", "CreateApiKey") || !rowWith(rows, "bootstrap", "console", "CreateUsagePlan") {
			return fmt.Errorf("no console rows for CreateApiKey and CreateUsagePlan by bootstrap in %q", rows)
		}
		if !rowWith(rows, testAccessKey, "api", "CreateRestApi") {
			return fmt.Errorf("no api row for CreateRestApi by %s in %q", testAccessKey, rows)
		}
		return nil
	})
	p.Screenshot("console-audit")
	p.Label("Actor").Fill(testAccessKey)
	p.Role("button", "Apply filter").Click()
	p.Eventually("the filter keeps one actor", func() error {
		rows := p.Table("Audit log")
		for _, row := range rows[1:] {
			if len(row) > 1 && row[1] != testAccessKey {
				return fmt.Errorf("row %q is not by %s", row, testAccessKey)
			}
		}
		if !rowWith(rows, testAccessKey, "api", "CreateRestApi") {
			return fmt.Errorf("filtered rows %q lack CreateRestApi", rows)
		}
		return nil
	})
}

// rowWith reports whether some row holds every one of cells (in order,
// not necessarily adjacent).
func rowWith(rows [][]string, cells ...string) bool {
	for _, row := range rows {
		i := 0
		for _, c := range row {
			if i < len(cells) && c == cells[i] {
				i++
			}
		}
		if i == len(cells) {
			return true
		}
	}
	return false
}

// After UpdateUsage sets /remaining of a key that made one request in a
// 10000-a-month plan, the usage chart's line of the month's requests stays
// at one request: the quota's count after the adjustment is a marker of
// its own, and the table and the caption name the adjustment as one.
func TestConsoleUsageShowsAQuotaAdjustmentApartFromRequests(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser test runs in make test, not in make test-short")
	}
	s := mustStackWith(t, stackOptions{allInOne: true, adminToken: consoleToken})
	apiID := s.consoleAPI(t)
	ctx, c := context.Background(), s.sdk
	plan, err := c.CreateUsagePlan(ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("monthly"),
		Quota:     &types.QuotaSettings{Limit: 10000, Period: types.QuotaPeriodTypeMonth},
		ApiStages: []types.ApiStage{{ApiId: aws.String(apiID), Stage: aws.String("prod")}}})
	must(t, "CreateUsagePlan", err)
	key, err := c.CreateApiKey(ctx, &apigateway.CreateApiKeyInput{Name: aws.String("partner-m"), Enabled: true})
	must(t, "CreateApiKey", err)
	_, err = c.CreateUsagePlanKey(ctx, &apigateway.CreateUsagePlanKeyInput{UsagePlanId: plan.Id, KeyId: key.Id, KeyType: aws.String("API_KEY")})
	must(t, "CreateUsagePlanKey", err)
	waittest.Until(t, "the key reaching the gateway", browsertest.Wait, func() bool {
		return s.call(t, 0, apiID, "/prod/items/1", *key.Value).StatusCode == http.StatusOK
	})
	_, err = c.UpdateUsage(ctx, &apigateway.UpdateUsageInput{UsagePlanId: plan.Id, KeyId: key.Id,
		PatchOperations: []types.PatchOperation{{Op: types.OpReplace, Path: aws.String("/remaining"), Value: aws.String("500")}}})
	must(t, "UpdateUsage", err)

	p := browsertest.MustPage(t)
	console := "http://" + s.admin.AdminAddr + "/console/"
	p.Goto(console)
	signIn(t, p)
	p.Role("heading", "APIs")
	p.Goto(console + "#/usage?plan=" + *plan.Id + "&key=" + *key.Id)
	p.Role("heading", "Usage of monthly")
	today := time.Now().UTC().Format("2006-01-02")
	p.Eventually("today's row: 1 request this quota period, adjusted by +9499, 500 remaining", func() error {
		rows := p.Table("Daily usage")
		if !rowWith(rows, today, "1", "1", "+9499", "500") {
			return fmt.Errorf("daily usage %q", rows)
		}
		return nil
	})
	if head := p.Table("Daily usage")[0]; !rowWith([][]string{head}, "Day (UTC)", "Used", "Requests this quota period", "Adjusted by UpdateUsage", "Remaining at the end of the day") {
		t.Errorf("columns %q", head)
	}
	fig := p.Role("figure", "Daily usage chart").Text()
	if !strings.Contains(fig, "UpdateUsage adjusted the quota period of "+today+" by +9499: the quota counts 9500 where the key made 1 request.") {
		t.Errorf("chart caption %q does not name the adjustment", fig)
	}
	for _, label := range []string{"Requests this quota period", "Counted by the quota after UpdateUsage"} {
		if !strings.Contains(fig, label) {
			t.Errorf("chart legend %q has no series %q", fig, label)
		}
	}
	p.Screenshot("console-usage-adjusted")
}
