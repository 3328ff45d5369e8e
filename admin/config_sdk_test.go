package admin_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"tollgate/plans/postgres/postgrestest"
)

type configChange struct {
	Action, Kind, Name, ID string
	Fields                 map[string]json.RawMessage
}

type configResult struct {
	Changes     []configChange
	Applied     bool
	CreatedKeys []struct{ Name, ID, Value string }
}

// dump reads GET /config as YAML.
func (e *env) dump() string {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.url+"/config", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/yaml")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("GET /config: %d %s", resp.StatusCode, b)
	}
	return string(b)
}

// configCall posts doc to /config/plan or /config/apply (what: "plan",
// "apply"; query e.g. "?prune=true") and returns the answer; a non-200
// fails the test unless want says otherwise.
func (e *env) configCall(what, query, doc string) configResult {
	e.t.Helper()
	code, typ, body := e.raw(http.MethodPost, "/config/"+what+query, doc)
	if code != http.StatusOK {
		e.t.Fatalf("POST /config/%s%s: got %d %s %s", what, query, code, typ, body)
	}
	var out configResult
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// demo builds a small configuration through the AWS API: an API with a
// stage, settings and a rule, a plan with a method throttle, two keys.
func (e *env) demo() (apiID, planID string) {
	t := e.t
	apiID, _ = e.api("shop", "prod")
	call(e.c.UpdateStage(e.ctx, &apigateway.UpdateStageInput{RestApiId: aws.String(apiID), StageName: aws.String("prod"),
		PatchOperations: []types.PatchOperation{op(types.OpReplace, "/*/*/throttling/rateLimit", "50"), op(types.OpReplace, "/*/*/throttling/burstLimit", "20"),
			op(types.OpReplace, "/variables/color", "blue")}})).must(t)
	if code, _, body := e.raw(http.MethodPost, "/restapis/"+apiID+"/stages/prod/ratelimitrules",
		`{"name":"per-ip","resourcePath":"*","httpMethod":"*","keyBy":["ip"],"algorithm":"FIXED_WINDOW","limit":100,"windowSeconds":60,"mode":"ENFORCE"}`); code != http.StatusCreated {
		t.Fatalf("rule: %d %s", code, body)
	}
	plan := call(e.c.CreateUsagePlan(e.ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("gold"),
		Throttle: &types.ThrottleSettings{RateLimit: 10, BurstLimit: 20}, Quota: &types.QuotaSettings{Limit: 1000, Period: types.QuotaPeriodTypeDay},
		ApiStages: []types.ApiStage{{ApiId: aws.String(apiID), Stage: aws.String("prod"),
			Throttle: map[string]types.ThrottleSettings{"/pets/GET": {RateLimit: 5, BurstLimit: 5}}}},
		Tags: map[string]string{"team": "sales"}})).must(t)
	if code, _, body := e.raw(http.MethodPatch, "/usageplans/"+*plan.Id, `{"patchOperations":[
		{"op":"replace","path":"/cost/weight","value":"2"},{"op":"replace","path":"/customerQuota/limit","value":"500"},
		{"op":"replace","path":"/alerts","value":"80,100"},
		{"op":"replace","path":"/apiStages/`+apiID+`:prod/methodCosts/~1pets/GET","value":"3"}]}`); code != http.StatusOK ||
		!strings.Contains(body, `"cost":{"weight":2}`) || !strings.Contains(body, `"customerQuota":{"limit":500}`) ||
		!strings.Contains(body, `"methodCosts":{"/pets/GET":3}`) {
		t.Fatalf("cost fields: %d %s", code, body)
	}
	for _, name := range []string{"alice", "bob"} {
		k := call(e.c.CreateApiKey(e.ctx, &apigateway.CreateApiKeyInput{Name: aws.String(name), Enabled: true, CustomerId: aws.String("c-" + name)})).must(t)
		call(e.c.CreateUsagePlanKey(e.ctx, &apigateway.CreateUsagePlanKeyInput{UsagePlanId: plan.Id, KeyId: k.Id, KeyType: aws.String("API_KEY")})).must(t)
	}
	return apiID, *plan.Id
}

func TestConfigDumpThenPlanShowsNoChangesAndApplyingTwiceChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.demo()
	doc := e.dump()
	if doc != e.dump() {
		t.Fatal("two dumps of the same state differ")
	}
	if strings.Contains(doc, "value:") {
		t.Fatalf("the dump holds a key value field:\n%s", doc)
	}
	if got := e.configCall("plan", "", doc); len(got.Changes) != 0 {
		t.Fatalf("plan of the dump: got %+v, want no change\n%s", got.Changes, doc)
	}
	if got := e.configCall("apply", "?prune=true", doc); len(got.Changes) != 0 || got.Applied {
		t.Fatalf("apply of the dump: got %+v, want nothing applied", got)
	}
}

func TestConfigPlanShowsExactlyTheEditAndApplyMakesIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, planID := e.demo()
	doc := e.dump()
	edited := strings.Replace(doc, "limit: 1000", "limit: 5000", 1)
	if edited == doc {
		t.Fatalf("the dump has no quota limit 1000:\n%s", doc)
	}
	got := e.configCall("plan", "", edited)
	if len(got.Changes) != 1 || got.Changes[0].Action != "update" || got.Changes[0].Kind != "usagePlan" || got.Changes[0].Name != "gold" || len(got.Changes[0].Fields) != 1 || got.Changes[0].Fields["quota"] == nil {
		t.Fatalf("plan: got %+v, want one update of usage plan gold's quota", got.Changes)
	}
	if applied := e.configCall("apply", "", edited); !applied.Applied || len(applied.Changes) != 1 {
		t.Fatalf("apply: got %+v", applied)
	}
	p := call(e.c.GetUsagePlan(e.ctx, &apigateway.GetUsagePlanInput{UsagePlanId: aws.String(planID)})).must(t)
	if p.Quota.Limit != 5000 {
		t.Fatalf("quota after apply: got %d, want 5000", p.Quota.Limit)
	}
	if again := e.configCall("plan", "", edited); len(again.Changes) != 0 {
		t.Fatalf("plan after apply: got %+v, want none", again.Changes)
	}
	entries, _ := e.audit("?resource=/usageplans/" + planID)
	if len(entries) == 0 || entries[0].Source != "config" || entries[0].Operation != "UpdateUsagePlan" || entries[0].Actor != "bootstrap" {
		t.Fatalf("audit of the plan: got %+v, want UpdateUsagePlan by bootstrap through config", entries)
	}
	applied, _ := e.audit("?resource=/config/apply")
	if len(applied) != 1 || mustJSON(applied[0].Change) != `{"changes":["update usagePlan gold"],"prune":false}` {
		t.Fatalf("the apply's own entry: got %+v, want the list of its changes", applied)
	}
}

func TestConfigAppliedToAFreshStackReproducesIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.demo()
	doc := e.dump()
	fresh := newEnv(t)
	got := fresh.configCall("apply", "", doc)
	if !got.Applied || len(got.CreatedKeys) != 2 {
		t.Fatalf("apply on a fresh stack: got %+v, want it applied with 2 keys created", got)
	}
	for _, k := range got.CreatedKeys {
		if k.Value == "" || strings.Contains(fresh.dump(), k.Value) {
			t.Fatalf("created key %+v: want a value, never in the dump", k)
		}
	}
	if again := fresh.configCall("plan", "", doc); len(again.Changes) != 0 {
		t.Fatalf("plan on the fresh stack after apply: got %+v, want none", again.Changes)
	}
	if again := fresh.configCall("plan", "", fresh.dump()); len(again.Changes) != 0 {
		t.Fatalf("plan of the fresh stack's own dump: got %+v", again.Changes)
	}
}

func TestConfigApplyOverForeignChangesPrunesOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, planID := e.demo()
	doc := e.dump()
	// Foreign changes: the plan's throttle edited, a plan and a key added.
	call(e.c.UpdateUsagePlan(e.ctx, &apigateway.UpdateUsagePlanInput{UsagePlanId: aws.String(planID),
		PatchOperations: []types.PatchOperation{op(types.OpReplace, "/throttle/rateLimit", "99")}})).must(t)
	extra := call(e.c.CreateUsagePlan(e.ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("foreign")})).must(t)
	got := e.configCall("plan", "", doc)
	if len(got.Changes) != 1 || got.Changes[0].Name != "gold" || got.Changes[0].Fields["throttle"] == nil {
		t.Fatalf("plan without prune: got %+v, want only gold's throttle back", got.Changes)
	}
	e.configCall("apply", "", doc)
	call(e.c.GetUsagePlan(e.ctx, &apigateway.GetUsagePlanInput{UsagePlanId: extra.Id})).must(t) // still there
	pruning := e.configCall("plan", "?prune=true", doc)
	if len(pruning.Changes) != 1 || pruning.Changes[0].Action != "delete" || pruning.Changes[0].Name != "foreign" {
		t.Fatalf("plan with prune: got %+v, want the foreign plan deleted", pruning.Changes)
	}
	e.configCall("apply", "?prune=true", doc)
	_, err := e.c.GetUsagePlan(e.ctx, &apigateway.GetUsagePlanInput{UsagePlanId: extra.Id})
	wantCode(t, err, "NotFoundException")
	if again := e.configCall("plan", "?prune=true", doc); len(again.Changes) != 0 {
		t.Fatalf("after the pruning apply: got %+v", again.Changes)
	}
}

func TestPruningApplyWhoseReadFailsDeletesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	apiID, _ := e.demo()
	doc := e.dump()
	extra := call(e.c.CreateUsagePlan(e.ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("foreign")})).must(t)
	// A stored stage the store cannot read: the read of the current state fails.
	if _, err := postgrestest.MustConn(t, e.dbURL).Exec(e.ctx, `UPDATE stages SET method_settings = '{"*/*": "broken"}' WHERE api_id = $1`, apiID); err != nil {
		t.Fatal(err)
	}
	code, _, body := e.raw(http.MethodPost, "/config/apply?prune=true", doc)
	if code == http.StatusOK {
		t.Fatalf("pruning apply over an unreadable state: got 200 %s, want it refused", body)
	}
	call(e.c.GetUsagePlan(e.ctx, &apigateway.GetUsagePlanInput{UsagePlanId: extra.Id})).must(t)
}

func TestConfigApplyIsAllOrNothingAndNamesTheItem(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.demo()
	doc := e.dump()
	bad := strings.Replace(doc, "limit: 1000", "limit: 2000", 1)
	bad = strings.Replace(bad, "usagePlans:\n", "usagePlans:\n  - name: zz-broken\n    quota:\n      period: FORTNIGHT\n      limit: 5\n", 1)
	code, _, body := e.raw(http.MethodPost, "/config/apply", bad)
	if code != http.StatusBadRequest || !strings.Contains(body, "usagePlans[zz-broken]") {
		t.Fatalf("apply of a bad plan: got %d %s, want 400 naming usagePlans[zz-broken]", code, body)
	}
	if got := e.configCall("plan", "", doc); len(got.Changes) != 0 {
		t.Fatalf("after the failed apply: got %+v, want nothing changed", got.Changes)
	}
}

func TestOperatorAppliesAConfigButNotAnAccountChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.demo()
	doc := e.dump()
	op := e.mustCredential("deployer", "operator", "token")["token"]
	edited := strings.Replace(doc, "limit: 1000", "limit: 3000", 1)
	if code, _, body := e.rawAs(op, http.MethodPost, "/config/apply", edited); code != http.StatusOK {
		t.Fatalf("operator apply: got %d %s", code, body)
	}
	account := strings.Replace(edited, "rateLimit: 10000", "rateLimit: 7", 1)
	code, typ, body := e.rawAs(op, http.MethodPost, "/config/apply", account)
	if code != http.StatusForbidden || typ != "AccessDeniedException" || !strings.Contains(body, "UpdateAccount") {
		t.Fatalf("operator apply of an account change: got %d %s %s, want 403 naming UpdateAccount", code, typ, body)
	}
	viewer := e.mustCredential("auditor", "viewer", "token")["token"]
	if code, _, body := e.rawAs(viewer, http.MethodPost, "/config/plan", account); code != http.StatusOK {
		t.Fatalf("viewer plan: got %d %s, want 200", code, body)
	}
	if code, typ, _ := e.rawAs(viewer, http.MethodPost, "/config/apply", edited); code != http.StatusForbidden || typ != "AccessDeniedException" {
		t.Fatalf("viewer apply: got %d %s, want 403", code, typ)
	}
}

// The dump (GET /config) is valid under the schema published in
// docs/config.schema.json.
func TestConfigDumpMatchesThePublishedSchema(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.demo()
	c := jsonschema.NewCompiler()
	sch, err := c.Compile("../docs/config.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	_, _, body := e.raw(http.MethodGet, "/config", "")
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(doc); err != nil {
		t.Fatalf("GET /config does not match docs/config.schema.json: %v\n%s", err, body)
	}
}

func TestConfigCarriesDomainNamesAndTheirMappings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.demo()
	if code, _, body := e.raw(http.MethodPost, "/domainnames", `{"domainName":"api.example.com","regionalCertificateName":"shop-cert","regionalCertificateArn":"arn:aws:acm:us-east-1:123456789012:certificate/shop","tags":{"env":"prod"}}`); code != http.StatusCreated {
		t.Fatalf("create domain: %d %s", code, body)
	}
	apis := call(e.c.GetRestApis(e.ctx, &apigateway.GetRestApisInput{})).must(t)
	if code, _, body := e.raw(http.MethodPost, "/domainnames/api.example.com/basepathmappings", `{"basePath":"shop","restApiId":"`+*apis.Items[0].Id+`","stage":"prod"}`); code != http.StatusCreated {
		t.Fatalf("create mapping: %d %s", code, body)
	}
	doc := e.dump()
	if !strings.Contains(doc, "domainName: api.example.com") || !strings.Contains(doc, "basePath: shop") {
		t.Fatalf("the dump lacks the domain or its mapping:\n%s", doc)
	}
	if got := e.configCall("plan", "?prune=true", doc); len(got.Changes) != 0 {
		t.Fatalf("plan of the dump: got %+v", got.Changes)
	}
	edited := strings.Replace(doc, "basePath: shop", "basePath: store", 1)
	got := e.configCall("plan", "", edited)
	if len(got.Changes) != 1 || got.Changes[0].Kind != "domainName" || got.Changes[0].Fields["basePathMappings"] == nil {
		t.Fatalf("plan of a moved mapping: got %+v", got.Changes)
	}
	e.configCall("apply", "", edited)
	if code, _, body := e.raw(http.MethodGet, "/domainnames/api.example.com/basepathmappings/store", ""); code != http.StatusOK {
		t.Fatalf("mapping after apply: %d %s", code, body)
	}
	fresh := newEnv(t)
	fresh.configCall("apply", "", edited)
	if again := fresh.configCall("plan", "?prune=true", edited); len(again.Changes) != 0 {
		t.Fatalf("fresh stack after apply: got %+v", again.Changes)
	}
}
