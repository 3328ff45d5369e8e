package admin_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"

	"tollgate/plans"
)

// keyJSON is the part of an ApiKey answer these tests read.
type keyJSON struct {
	ID        string            `json:"id"`
	Value     string            `json:"value"`
	ExpiresAt string            `json:"expiresAt"`
	Tags      map[string]string `json:"tags"`
}

func decodeKey(t *testing.T, body string) keyJSON {
	t.Helper()
	var k keyJSON
	if err := json.Unmarshal([]byte(body), &k); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return k
}

// A key's expiry is its tag tollgate:expires-at: set by expiresAt at
// creation, by PATCH /expiresAt, or by tagging with the AWS tools; read
// back as expiresAt in UTC; a bad value is 400 naming the field or tag.
func TestKeyExpiryByFieldPatchAndTag(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	status, _, body := e.raw("POST", "/apikeys", `{"name":"k","enabled":true,"expiresAt":"2027-01-31T13:00:00+01:00"}`)
	k := decodeKey(t, body)
	if status != 201 || k.ExpiresAt != "2027-01-31T12:00:00Z" || k.Tags["tollgate:expires-at"] != "2027-01-31T12:00:00Z" {
		t.Fatalf("create: got %d %s, want 201 with expiresAt and the tag 2027-01-31T12:00:00Z", status, body)
	}
	patch := func(ops string) (int, string) {
		status, _, body := e.raw("PATCH", "/apikeys/"+k.ID, `{"patchOperations":[`+ops+`]}`)
		return status, body
	}
	if status, body := patch(`{"op":"replace","path":"/expiresAt","value":"2027-02-01T00:00:00.25Z"}`); status != 200 || decodeKey(t, body).ExpiresAt != "2027-02-01T00:00:00.25Z" {
		t.Fatalf("patch: got %d %s, want expiresAt 2027-02-01T00:00:00.25Z", status, body)
	}
	if status, body := patch(`{"op":"replace","path":"/expiresAt","value":"tomorrow"}`); status != 400 || !strings.Contains(body, "expiresAt") {
		t.Fatalf("bad patch: got %d %s, want 400 naming expiresAt", status, body)
	}
	if status, body := patch(`{"op":"remove","path":"/expiresAt"}`); status != 200 || decodeKey(t, body).ExpiresAt != "" {
		t.Fatalf("remove: got %d %s, want no expiresAt", status, body)
	}
	arn := "arn:aws:apigateway:us-east-1::/apikeys/" + k.ID
	_, err := e.c.TagResource(e.ctx, &apigateway.TagResourceInput{ResourceArn: aws.String(arn),
		Tags: map[string]string{"tollgate:expires-at": "2027-13-01"}})
	wantBadRequest(t, err, "tollgate:expires-at")
	call(e.c.TagResource(e.ctx, &apigateway.TagResourceInput{ResourceArn: aws.String(arn),
		Tags: map[string]string{"tollgate:expires-at": "2027-03-01T00:00:00Z"}})).must(t)
	_, _, body = e.raw("GET", "/apikeys/"+url.PathEscape(k.ID), "")
	if got := decodeKey(t, body).ExpiresAt; got != "2027-03-01T00:00:00Z" {
		t.Fatalf("after tagging: expiresAt %q, want 2027-03-01T00:00:00Z", got)
	}
	if status, _, body := e.raw("POST", "/apikeys", `{"name":"k2","expiresAt":"soon"}`); status != 400 || !strings.Contains(body, "expiresAt") {
		t.Fatalf("create with a bad expiresAt: got %d %s, want 400 naming expiresAt", status, body)
	}
	_, err = e.c.CreateApiKey(e.ctx, &apigateway.CreateApiKeyInput{Name: aws.String("k3"), Tags: map[string]string{"tollgate:expires-at": "x"}})
	wantBadRequest(t, err, "tollgate:expires-at")
}

// rotation is the answer of POST /apikeys/{id}/rotate.
type rotation struct {
	ID                     string `json:"id"`
	Value                  string `json:"value"`
	PreviousValueExpiresAt string `json:"previousValueExpiresAt"`
}

func (e *env) rotate(id, body string) (int, rotation, string) {
	e.t.Helper()
	status, _, raw := e.raw("POST", "/apikeys/"+id+"/rotate", body)
	var r rotation
	if status == 200 {
		if err := json.Unmarshal([]byte(raw), &r); err != nil {
			e.t.Fatalf("decode %s: %v", raw, err)
		}
	}
	return status, r, raw
}

// Rotation answers a new generated value once, keeps the key's id,
// customer, tags and plans, and says when the previous value ends; the
// same token answers the same without writing anything; bad input is 400
// naming the field.
func TestRotateApiKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	apiID, _ := e.api("pets", "prod")
	plan := call(e.c.CreateUsagePlan(e.ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("p"),
		ApiStages: []types.ApiStage{{ApiId: &apiID, Stage: aws.String("prod")}}})).must(t)
	key := call(e.c.CreateApiKey(e.ctx, &apigateway.CreateApiKeyInput{Name: aws.String("k"), Enabled: true,
		CustomerId: aws.String("cust-1"), Tags: map[string]string{"team": "a"}})).must(t)
	call(e.c.CreateUsagePlanKey(e.ctx, &apigateway.CreateUsagePlanKeyInput{UsagePlanId: plan.Id, KeyId: key.Id, KeyType: aws.String("API_KEY")})).must(t)

	before := e.pub.count()
	start := time.Now()
	status, r, raw := e.rotate(*key.Id, `{"overlapSeconds":600,"idempotencyToken":"tok-1"}`)
	if status != 200 || r.ID != *key.Id || r.Value == *key.Value || !(plans.KeyFormat{}).Generated(r.Value) {
		t.Fatalf("rotate: got %d %s, want 200 with the key's id and a new generated value", status, raw)
	}
	end, err := time.Parse(time.RFC3339, r.PreviousValueExpiresAt)
	if err != nil || !strings.HasSuffix(r.PreviousValueExpiresAt, "Z") || end.Before(start.Add(599*time.Second)) || end.After(time.Now().Add(600*time.Second)) {
		t.Fatalf("previousValueExpiresAt %q: want RFC 3339 UTC about 600 s from now", r.PreviousValueExpiresAt)
	}
	if e.pub.count() != before+1 {
		t.Errorf("publishes: got %d, want %d", e.pub.count(), before+1)
	}
	if status, again, _ := e.rotate(*key.Id, `{"overlapSeconds":5,"idempotencyToken":"tok-1"}`); status != 200 || again != r {
		t.Fatalf("same token: got %d %+v, want the same answer %+v", status, again, r)
	}
	if e.pub.count() != before+1 {
		t.Errorf("a replay published: got %d publishes, want %d", e.pub.count(), before+1)
	}
	if _, other, _ := e.rotate(*key.Id, `{"idempotencyToken":"tok-2"}`); other.Value == r.Value || other.PreviousValueExpiresAt > r.PreviousValueExpiresAt {
		t.Fatalf("another token: got %+v, want a new value whose previous one ends now", other)
	}
	got := call(e.c.GetApiKey(e.ctx, &apigateway.GetApiKeyInput{ApiKey: key.Id})).must(t)
	if *got.CustomerId != "cust-1" || got.Tags["team"] != "a" || got.Value != nil {
		t.Errorf("after rotation: got %+v, want the same customer and tags, no value", got)
	}
	keys := call(e.c.GetUsagePlanKeys(e.ctx, &apigateway.GetUsagePlanKeysInput{UsagePlanId: plan.Id})).must(t)
	if len(keys.Items) != 1 || *keys.Items[0].Id != *key.Id {
		t.Errorf("after rotation: plan keys %+v, want the key still in its plan", keys.Items)
	}
	for _, c := range []struct{ body, field string }{
		{`{"overlapSeconds":-1}`, "overlapSeconds"},
		{`{"overlapSeconds":1.5}`, "overlapSeconds"},
		{`{"overlapSeconds":2592001}`, "overlapSeconds"},
		{`{"idempotencyToken":"` + strings.Repeat("t", 129) + `"}`, "idempotencyToken"},
		{`{"idempotencyToken":"a\nb"}`, "idempotencyToken"},
	} {
		if status, _, raw := e.rotate(*key.Id, c.body); status != 400 || !strings.Contains(raw, c.field) {
			t.Errorf("%s: got %d %s, want 400 naming %s", c.body, status, raw, c.field)
		}
	}
	if status, _, _ := e.rotate("nosuchkey0", `{}`); status != 404 {
		t.Errorf("unknown key: got %d, want 404", status)
	}
	_, _, audit := e.raw("GET", "/audit?resource=/apikeys/"+*key.Id, "")
	if n := strings.Count(audit, `"source":"rotation"`); n != 3 || strings.Contains(audit, "tok-1") || strings.Contains(audit, r.Value) {
		t.Errorf("audit %s: want 3 entries with source rotation (a replay too), no token, no value", audit)
	}
}
