package admin_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
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
