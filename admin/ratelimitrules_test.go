package admin_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"

	"tollgate/plans"
)

// rule decodes a rule answer.
func rule(t *testing.T, body string) plans.RateLimitRule {
	t.Helper()
	var r plans.RateLimitRule
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("rule body %q: %v", body, err)
	}
	return r
}

// wantStatus fails unless status is want.
func wantStatus(t *testing.T, what string, status, want int, body string) {
	t.Helper()
	if status != want {
		t.Fatalf("%s: got %d %s, want %d", what, status, body, want)
	}
}

func TestRateLimitRuleResource(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	apiID, _ := e.api("pets", "prod")
	rules := "/restapis/" + apiID + "/stages/prod/ratelimitrules"
	published := e.pub.count()

	status, _, body := e.raw("POST", rules, `{"name":"per-ip","resourcePath":"/pets","httpMethod":"GET","keyBy":["ip","header:X-Tenant"],
		"algorithm":"LEAKY_BUCKET","rateLimit":5,"burstLimit":10,"maxDelayMillis":250}`)
	wantStatus(t, "create", status, http.StatusCreated, body)
	created := rule(t, body)
	if created.ID == "" || created.Mode != plans.ModeEnforce || !slices.Equal(created.KeyBy, []string{"ip", "header:x-tenant"}) || *created.MaxDelayMillis != 250 {
		t.Errorf("create: got %s, want an id, mode ENFORCE and keyBy normalised", body)
	}
	if e.pub.count() != published+1 {
		t.Errorf("create: published %d times, want once", e.pub.count()-published)
	}
	status, _, body = e.raw("POST", rules, `{"name":"all","algorithm":"CONCURRENCY","limit":3,"mode":"SHADOW"}`)
	wantStatus(t, "second create", status, http.StatusCreated, body)

	status, _, body = e.raw("GET", rules+"?limit=1", "")
	wantStatus(t, "list", status, http.StatusOK, body)
	var page struct {
		Item     []plans.RateLimitRule `json:"item"`
		Position string                `json:"position"`
	}
	must(t, json.Unmarshal([]byte(body), &page))
	if len(page.Item) != 1 || page.Position == "" {
		t.Fatalf("list limit=1: got %s, want one item and a position", body)
	}
	status, _, body = e.raw("GET", rules+"?position="+url.QueryEscape(page.Position), "")
	wantStatus(t, "second page", status, http.StatusOK, body)
	if strings.Contains(body, `"position"`) || !strings.Contains(body, `"item":[{`) {
		t.Errorf("second page: got %s, want the last item without a position", body)
	}

	one := rules + "/" + created.ID
	status, _, body = e.raw("PATCH", one, `{"patchOperations":[
		{"op":"replace","path":"/algorithm","value":"TOKEN_BUCKET"},
		{"op":"replace","path":"/rateLimit","value":"2.5"},
		{"op":"remove","path":"/keyBy","value":"header:X-Tenant"},
		{"op":"add","path":"/keyBy","value":"query:region"},
		{"op":"replace","path":"/mode","value":"SHADOW"},
		{"op":"replace","path":"/name","value":"renamed"}]}`)
	wantStatus(t, "patch", status, http.StatusOK, body)
	patched := rule(t, body)
	if patched.Algorithm != plans.TokenBucket || *patched.RateLimit != 2.5 || *patched.BurstLimit != 10 || patched.MaxDelayMillis != nil ||
		!slices.Equal(patched.KeyBy, []string{"ip", "query:region"}) || patched.Mode != plans.ModeShadow || patched.Name != "renamed" {
		t.Errorf("patch: got %s", body)
	}
	status, _, body = e.raw("PATCH", one, `{"patchOperations":[{"op":"replace","path":"/keyBy","value":"apiKey, header:A"}]}`)
	wantStatus(t, "replace keyBy", status, http.StatusOK, body)
	if got := rule(t, body).KeyBy; !slices.Equal(got, []string{"apiKey", "header:a"}) {
		t.Errorf("replace /keyBy: got %v", got)
	}
	status, _, body = e.raw("GET", one, "")
	wantStatus(t, "get", status, http.StatusOK, body)
	if rule(t, body).Name != "renamed" {
		t.Errorf("get: got %s", body)
	}

	status, _, body = e.raw("DELETE", one, "")
	wantStatus(t, "delete", status, http.StatusAccepted, body)
	status, errType, _ := e.raw("GET", one, "")
	if status != http.StatusNotFound || errType != "NotFoundException" {
		t.Errorf("get after delete: got %d %s, want 404 NotFoundException", status, errType)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestRateLimitRuleErrorsNameTheField(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	apiID, _ := e.api("pets", "prod")
	rules := "/restapis/" + apiID + "/stages/prod/ratelimitrules"
	status, _, body := e.raw("POST", rules, `{"name":"ok","algorithm":"FIXED_WINDOW","limit":5,"windowSeconds":60}`)
	wantStatus(t, "create", status, http.StatusCreated, body)
	one := rules + "/" + rule(t, body).ID
	cases := []struct {
		name, method, path, body string
		status                   int
		inMessage                string
	}{
		{"no name", "POST", rules, `{"algorithm":"CONCURRENCY","limit":1}`, 400, "name"},
		{"unknown algorithm", "POST", rules, `{"name":"a","algorithm":"GCRA"}`, 400, "algorithm"},
		{"missing parameter", "POST", rules, `{"name":"a","algorithm":"SLIDING_WINDOW","limit":1}`, 400, "windowSeconds"},
		{"foreign parameter", "POST", rules, `{"name":"a","algorithm":"CONCURRENCY","limit":1,"maxDelayMillis":5}`, 400, "maxDelayMillis"},
		{"fraction", "POST", rules, `{"name":"a","algorithm":"CONCURRENCY","limit":1.5}`, 400, "limit"},
		{"keyBy", "POST", rules, `{"name":"a","keyBy":["cookie:s"],"algorithm":"CONCURRENCY","limit":1}`, 400, "keyBy"},
		{"unknown resource", "POST", rules, `{"name":"a","resourcePath":"/nope","algorithm":"CONCURRENCY","limit":1}`, 400, "resourcePath"},
		{"duplicate name", "POST", rules, `{"name":"ok","algorithm":"CONCURRENCY","limit":1}`, 409, "name"},
		{"unknown stage", "POST", "/restapis/" + apiID + "/stages/beta/ratelimitrules", `{"name":"a","algorithm":"CONCURRENCY","limit":1}`, 404, "Stage"},
		{"unknown rule", "GET", rules + "/zzzzzz", ``, 404, "Rate Limit Rule"},
		{"unknown patch path", "PATCH", one, `{"patchOperations":[{"op":"replace","path":"/rate","value":"1"}]}`, 400, "/rate"},
		{"patch value", "PATCH", one, `{"patchOperations":[{"op":"replace","path":"/limit","value":"x"}]}`, 400, "/limit"},
		{"patch mode", "PATCH", one, `{"patchOperations":[{"op":"replace","path":"/mode","value":"DRY"}]}`, 400, "/mode"},
		{"patch leaves a parameter out", "PATCH", one, `{"patchOperations":[{"op":"remove","path":"/limit"}]}`, 400, "limit"},
		{"remove a keyBy it lacks", "PATCH", one, `{"patchOperations":[{"op":"remove","path":"/keyBy","value":"ip"}]}`, 400, "ip"},
		{"list limit", "GET", rules + "?limit=0", ``, 400, "limit"},
	}
	for _, tc := range cases {
		status, _, body := e.raw(tc.method, tc.path, tc.body)
		var msg struct{ Message string }
		_ = json.Unmarshal([]byte(body), &msg)
		if status != tc.status || !strings.Contains(msg.Message, tc.inMessage) {
			t.Errorf("%s: got %d %s, want %d naming %q", tc.name, status, body, tc.status, tc.inMessage)
		}
	}
}

func TestExportCarriesTheStageRulesAndImportRestoresThem(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	apiID, _ := e.api("pets", "prod")
	rules := "/restapis/" + apiID + "/stages/prod/ratelimitrules"
	status, _, body := e.raw("POST", rules, `{"name":"per-ip","resourcePath":"/pets","keyBy":["ip"],"algorithm":"SLIDING_WINDOW","limit":10,"windowSeconds":60}`)
	wantStatus(t, "create", status, http.StatusCreated, body)

	status, _, plain := e.raw("GET", "/restapis/"+apiID+"/stages/prod/exports/oas30", "")
	wantStatus(t, "export", status, http.StatusOK, plain)
	if strings.Contains(plain, plans.RulesExtension) {
		t.Errorf("an export without extensions carries the rules")
	}
	status, _, doc := e.raw("GET", "/restapis/"+apiID+"/stages/prod/exports/oas30?extensions=apigateway", "")
	wantStatus(t, "export", status, http.StatusOK, doc)
	if !strings.Contains(doc, plans.RulesExtension) || !strings.Contains(doc, `"per-ip"`) {
		t.Fatalf("export: got %s, want the rule under %s", doc, plans.RulesExtension)
	}

	imported := call(e.c.ImportRestApi(e.ctx, &apigateway.ImportRestApiInput{Body: []byte(doc)})).must(t)
	call(e.c.CreateDeployment(e.ctx, &apigateway.CreateDeploymentInput{RestApiId: imported.Id, StageName: aws.String("prod")})).must(t)
	status, _, body = e.raw("GET", "/restapis/"+*imported.Id+"/stages/prod/ratelimitrules", "")
	if status != http.StatusOK || !strings.Contains(body, `"name":"per-ip"`) {
		t.Errorf("rules of the imported API's prod: got %d %s, want per-ip", status, body)
	}

	status, _, body = e.raw("POST", rules, `{"name":"extra","algorithm":"CONCURRENCY","limit":1}`)
	wantStatus(t, "create extra", status, http.StatusCreated, body)
	call(e.c.PutRestApi(e.ctx, &apigateway.PutRestApiInput{RestApiId: aws.String(apiID), Mode: "overwrite", Body: []byte(doc)})).must(t)
	status, _, body = e.raw("GET", rules, "")
	if status != http.StatusOK || strings.Contains(body, `"extra"`) || !strings.Contains(body, `"per-ip"`) {
		t.Errorf("after an overwrite with the export: got %d %s, want per-ip only", status, body)
	}
}

func TestPlanQuotaCountsTagIsValidated(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	plan := call(e.c.CreateUsagePlan(e.ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("p")})).must(t)
	arn := "arn:aws:apigateway:us-east-1::/usageplans/" + *plan.Id
	_, err := e.c.TagResource(e.ctx, &apigateway.TagResourceInput{ResourceArn: aws.String(arn), Tags: map[string]string{"tollgate:quota-counts": "2xx"}})
	wantBadRequest(t, err, "tollgate:quota-counts")
	call(e.c.TagResource(e.ctx, &apigateway.TagResourceInput{ResourceArn: aws.String(arn), Tags: map[string]string{"tollgate:quota-counts": "non-5xx"}})).must(t)
	got := call(e.c.GetUsagePlan(e.ctx, &apigateway.GetUsagePlanInput{UsagePlanId: plan.Id})).must(t)
	if got.Tags["tollgate:quota-counts"] != "non-5xx" {
		t.Errorf("got tags %v, want tollgate:quota-counts=non-5xx", got.Tags)
	}
}

func TestPlanModeTagIsValidated(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	plan := call(e.c.CreateUsagePlan(e.ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("p")})).must(t)
	arn := "arn:aws:apigateway:us-east-1::/usageplans/" + *plan.Id
	_, err := e.c.TagResource(e.ctx, &apigateway.TagResourceInput{ResourceArn: aws.String(arn), Tags: map[string]string{"tollgate:mode": "dry-run"}})
	wantBadRequest(t, err, "tollgate:mode")
	call(e.c.TagResource(e.ctx, &apigateway.TagResourceInput{ResourceArn: aws.String(arn), Tags: map[string]string{"tollgate:mode": "shadow"}})).must(t)
	got := call(e.c.GetUsagePlan(e.ctx, &apigateway.GetUsagePlanInput{UsagePlanId: plan.Id})).must(t)
	if got.Tags["tollgate:mode"] != "shadow" {
		t.Errorf("got tags %v, want tollgate:mode=shadow", got.Tags)
	}
}
