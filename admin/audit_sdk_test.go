package admin_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"

	"tollgate/admin"
)

type auditEntry struct {
	Time, Actor, Source, Operation, Resource string
	Change                                   map[string]any
}

// audit reads GET /audit with query q (as the bootstrap token).
func (e *env) audit(q string) ([]auditEntry, string) {
	e.t.Helper()
	code, _, body := e.raw(http.MethodGet, "/audit"+q, "")
	if code != http.StatusOK {
		e.t.Fatalf("GET /audit%s: got %d %s", q, code, body)
	}
	var page struct {
		Item     []auditEntry
		Position string
	}
	if err := json.Unmarshal([]byte(body), &page); err != nil {
		e.t.Fatal(err)
	}
	return page.Item, page.Position
}

func find(entries []auditEntry, op string) (auditEntry, bool) {
	for _, x := range entries {
		if x.Operation == op {
			return x, true
		}
	}
	return auditEntry{}, false
}

func TestEveryChangeIsAuditedWithActorSourceAndResource(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	apiID, _ := e.api("shop", "prod") // SigV4 as the bootstrap access key, region us-east-1
	ops := e.mustCredential("ops", "operator", "sigv4")
	plan := call(e.sdk(ops["accessKeyId"], ops["secretAccessKey"]).CreateUsagePlan(e.ctx, &apigateway.CreateUsagePlanInput{
		Name: aws.String("gold"), ApiStages: []types.ApiStage{{ApiId: aws.String(apiID), Stage: aws.String("prod")}}})).must(t)
	req, _ := http.NewRequest(http.MethodPatch, e.url+"/usageplans/"+*plan.Id, strings.NewReader(`{"patchOperations":[{"op":"replace","path":"/description","value":"by console"}]}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set(admin.SourceHeader, "console")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("console PATCH: %v %v", resp, err)
	}
	resp.Body.Close()
	if code, _, _ := e.raw(http.MethodDelete, "/restapis/"+apiID+"/stages/prod/cache/data", ""); code != http.StatusAccepted {
		t.Fatalf("flush: got %d", code)
	}

	entries, _ := e.audit("")
	for _, tc := range []struct{ op, actor, source, resource string }{
		{"CreateRestApi", akid, "api", "arn:aws:apigateway:us-east-1::/restapis/" + apiID},
		{"CreateDeployment", akid, "api", "arn:aws:apigateway:us-east-1::/restapis/" + apiID + "/deployments/"},
		{"CreateUsagePlan", "ops", "api", "arn:aws:apigateway:eu-west-1::/usageplans/" + *plan.Id},
		{"UpdateUsagePlan", "bootstrap", "console", "arn:aws:apigateway:us-east-1::/usageplans/" + *plan.Id},
		{"FlushStageCache", "bootstrap", "api", "arn:aws:apigateway:us-east-1::/restapis/" + apiID + "/stages/prod/cache/data"},
		{"CreateCredential", "bootstrap", "api", "arn:aws:apigateway:us-east-1::/credentials/" + ops["id"]},
	} {
		got, ok := find(entries, tc.op)
		if !ok {
			t.Errorf("no audit entry for %s in %+v", tc.op, entries)
			continue
		}
		if got.Actor != tc.actor || got.Source != tc.source || !strings.HasPrefix(got.Resource, tc.resource) || got.Time == "" {
			t.Errorf("%s: got %+v, want actor %s, source %s, resource %s…", tc.op, got, tc.actor, tc.source, tc.resource)
		}
	}
	if got, _ := find(entries, "UpdateUsagePlan"); !strings.Contains(mustJSON(got.Change), `"by console"`) {
		t.Errorf("UpdateUsagePlan change %v lacks its patch operations", got.Change)
	}
	if _, ok := find(entries, "GetRestApis"); ok {
		t.Error("a read was audited")
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestAuditNeverHoldsKeyValuesOrSecrets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	value := "AuditSecretKeyValue0123456789abcdef"
	code, _, body := e.raw(http.MethodPost, "/apikeys", `{"name":"partner","enabled":true,"value":"`+value+`"}`)
	if code != http.StatusCreated {
		t.Fatalf("create key: %d %s", code, body)
	}
	csvValue := "CsvImportedKeyValue0123456789abcdef"
	code, _, body = e.raw(http.MethodPost, "/apikeys?mode=import&format=csv", "name,key,enabled\nimported,"+csvValue+",true\n")
	if code != http.StatusCreated {
		t.Fatalf("import keys: %d %s", code, body)
	}
	cred := e.mustCredential("robot", "keys", "token")
	sig := e.mustCredential("robot-sig", "viewer", "sigv4")
	entries, _ := e.audit("")
	all := mustJSON(entries)
	for _, secret := range []string{value, csvValue, cred["token"], sig["secretAccessKey"]} {
		if strings.Contains(all, secret) {
			t.Errorf("the audit log holds a secret %q: %s", secret, all)
		}
	}
	created, _ := find(entries, "CreateApiKey")
	if created.Change["body"].(map[string]any)["value"] != admin.Redacted {
		t.Errorf("CreateApiKey change %v: want value redacted", created.Change)
	}
	imp, ok := find(entries, "ImportApiKeys")
	if !ok || imp.Source != "import" {
		t.Errorf("ImportApiKeys entry %+v: want one, source import", imp)
	}
}

func TestFailedChangeLeavesNoAuditEntry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	value := "DuplicateKeyValue0123456789abcdef"
	e.raw(http.MethodPost, "/apikeys", `{"name":"a","value":"`+value+`"}`)
	if code, _, _ := e.raw(http.MethodPost, "/apikeys", `{"name":"b","value":"`+value+`"}`); code != http.StatusConflict {
		t.Fatalf("duplicate key: got %d, want 409", code)
	}
	e.raw(http.MethodPost, "/usageplans", `{"name":"p","quota":{"period":"DAY"}}`) // 400: no limit
	entries, _ := e.audit("")
	if len(entries) != 1 || entries[0].Operation != "CreateApiKey" {
		t.Fatalf("got %+v, want the one CreateApiKey that succeeded", entries)
	}
}

func TestAuditFiltersPagesAndExports(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var planIDs []string
	for i := range 5 {
		p := call(e.c.CreateUsagePlan(e.ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("p" + string(rune('a'+i)))})).must(t)
		planIDs = append(planIDs, *p.Id)
	}
	call(e.c.UpdateUsagePlan(e.ctx, &apigateway.UpdateUsagePlanInput{UsagePlanId: aws.String(planIDs[0]),
		PatchOperations: []types.PatchOperation{op(types.OpReplace, "/description", "x")}})).must(t)
	e.mustCredential("someone", "viewer", "token")

	byPlan, _ := e.audit("?resource=" + url.QueryEscape("arn:aws:apigateway:eu-central-1::/usageplans/"+planIDs[0]))
	if len(byPlan) != 2 || byPlan[0].Operation != "UpdateUsagePlan" || byPlan[1].Operation != "CreateUsagePlan" {
		t.Errorf("resource filter: got %+v, want UpdateUsagePlan then CreateUsagePlan", byPlan)
	}
	if byActor, _ := e.audit("?actor=bootstrap"); len(byActor) != 1 || byActor[0].Operation != "CreateCredential" {
		t.Errorf("actor filter: got %+v, want the CreateCredential", byActor)
	}
	var paged []auditEntry
	pos := ""
	for {
		q := "?limit=2"
		if pos != "" {
			q += "&position=" + url.QueryEscape(pos)
		}
		items, next := e.audit(q)
		paged = append(paged, items...)
		if pos = next; pos == "" {
			break
		}
	}
	if len(paged) != 7 || paged[0].Operation != "CreateCredential" || paged[6].Operation != "CreateUsagePlan" {
		t.Errorf("paging: got %d entries %+v, want 7 newest first", len(paged), paged)
	}
	if future, _ := e.audit("?from=2999-01-01T00:00:00Z"); len(future) != 0 {
		t.Errorf("from in the future: got %d entries", len(future))
	}
	if code, _, body := e.raw(http.MethodGet, "/audit?from=yesterday", ""); code != http.StatusBadRequest || !strings.Contains(body, "from") {
		t.Errorf("bad from: got %d %s, want 400 naming from", code, body)
	}
	code, _, body := e.raw(http.MethodGet, "/audit/export?actor="+akid, "")
	if lines := strings.Split(strings.TrimSpace(body), "\n"); code != http.StatusOK || len(lines) != 6 {
		t.Errorf("export: got %d with %d lines, want 200 with 6", code, len(lines))
	}
}

// TestTagChangesAreAuditedOnTheTaggedResource: TagResource and
// UntagResource are entries of the tagged key or plan (its ARN, with the
// ARN's region), so the resource filter of either finds them.
func TestTagChangesAreAuditedOnTheTaggedResource(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	plan := call(e.c.CreateUsagePlan(e.ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("gold")})).must(t)
	key := call(e.c.CreateApiKey(e.ctx, &apigateway.CreateApiKeyInput{Name: aws.String("partner")})).must(t)
	for _, arn := range []string{
		"arn:aws:apigateway:eu-west-1::/usageplans/" + *plan.Id,
		"arn:aws:apigateway:eu-west-1::/apikeys/" + *key.Id,
	} {
		call(e.c.TagResource(e.ctx, &apigateway.TagResourceInput{ResourceArn: aws.String(arn), Tags: map[string]string{"team": "billing"}})).must(t)
		call(e.c.UntagResource(e.ctx, &apigateway.UntagResourceInput{ResourceArn: aws.String(arn), TagKeys: []string{"team"}})).must(t)
		got, _ := e.audit("?resource=" + url.QueryEscape(arn))
		if len(got) < 3 || got[0].Operation != "UntagResource" || got[1].Operation != "TagResource" {
			t.Fatalf("%s: got %+v, want UntagResource, TagResource, then its creation", arn, got)
		}
		for _, x := range got[:2] {
			if x.Resource != arn {
				t.Errorf("%s: resource %q, want the tagged resource's ARN %s", x.Operation, x.Resource, arn)
			}
		}
	}
	if got, _ := e.audit("?resource=/tags"); len(got) != 0 {
		t.Errorf("entries of /tags: got %+v, want none", got)
	}
}
