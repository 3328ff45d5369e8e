package admin_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"

	"tollgate/admin"
	"tollgate/internal/waittest"
	"tollgate/plans/postgres/postgrestest"
)

// mustCredential creates a credential with the bootstrap token and
// returns the answer.
func (e *env) mustCredential(name, role, kind string) map[string]string {
	e.t.Helper()
	code, _, body := e.raw(http.MethodPost, "/credentials", `{"name":"`+name+`","role":"`+role+`","kind":"`+kind+`"}`)
	if code != http.StatusCreated {
		e.t.Fatalf("create credential: got %d %s, want 201", code, body)
	}
	out := map[string]string{}
	var raw map[string]any
	if err := json.Unmarshal([]byte(body), &raw); err != nil {
		e.t.Fatal(err)
	}
	for k, v := range raw {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

func TestSigV4CredentialSignsWithItsRoleAndIsStoredSealed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.mustCredential("deployer", "operator", "sigv4")
	if c["accessKeyId"] == "" || c["secretAccessKey"] == "" || c["token"] != "" {
		t.Fatalf("got %v, want accessKeyId and secretAccessKey only", c)
	}
	op := e.sdk(c["accessKeyId"], c["secretAccessKey"])
	call(op.CreateRestApi(e.ctx, &apigateway.CreateRestApiInput{Name: aws.String("by-operator")})).must(t)
	_, err := op.UpdateAccount(e.ctx, &apigateway.UpdateAccountInput{PatchOperations: []types.PatchOperation{
		{Op: types.OpReplace, Path: aws.String("/throttleSettings/rateLimit"), Value: aws.String("5")}}})
	ae := wantCode(t, err, "AccessDeniedException")
	if !strings.Contains(ae.ErrorMessage(), "UpdateAccount") {
		t.Fatalf("refusal %q does not name UpdateAccount", ae.ErrorMessage())
	}
	var stored string
	if err := postgrestest.MustConn(t, e.dbURL).QueryRow(e.ctx, `SELECT secret FROM admin_credentials WHERE id = $1`, c["id"]).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stored, c["secretAccessKey"]) || !strings.HasPrefix(stored, "tgseal1:") {
		t.Fatalf("stored secret %q is not sealed", stored)
	}
	_, _, list := e.raw(http.MethodGet, "/credentials", "")
	if strings.Contains(list, c["secretAccessKey"]) || !strings.Contains(list, c["accessKeyId"]) {
		t.Fatalf("GET /credentials = %s: want the access key id and no secret", list)
	}
}

func TestRotatedCredentialRefusesItsOldSecret(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.mustCredential("ci", "viewer", "token")
	if code, _, body := e.rawAs(c["token"], http.MethodGet, "/restapis", ""); code != http.StatusOK {
		t.Fatalf("viewer GET /restapis: got %d %s", code, body)
	}
	code, _, body := e.raw(http.MethodPost, "/credentials/"+c["id"]+"/rotate", "")
	if code != http.StatusOK {
		t.Fatalf("rotate: got %d %s", code, body)
	}
	var rotated struct{ Token, Role string }
	_ = json.Unmarshal([]byte(body), &rotated)
	if rotated.Token == "" || rotated.Token == c["token"] || rotated.Role != "viewer" {
		t.Fatalf("rotate answered %s: want a new token and the same role", body)
	}
	if code, typ, _ := e.rawAs(c["token"], http.MethodGet, "/restapis", ""); code != http.StatusForbidden || typ != "UnrecognizedClientException" {
		t.Fatalf("old token after rotation: got %d %s, want 403 UnrecognizedClientException", code, typ)
	}
	if code, _, _ := e.rawAs(rotated.Token, http.MethodGet, "/restapis", ""); code != http.StatusOK {
		t.Fatalf("new token: got %d, want 200", code)
	}
}

// A credential deleted through one admin node is refused by another
// (which had just accepted it) within 5 s.
func TestDeletedCredentialIsRefusedByEveryNodeWithin5s(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := httptest.NewServer(admin.New(admin.Options{Store: e.db, CredentialStore: e.db,
		Credentials: admin.Credentials{BearerToken: token}, Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))}))
	t.Cleanup(other.Close)
	c := e.mustCredential("temp", "admin", "token")
	get := func(base string) int {
		req, _ := http.NewRequest(http.MethodGet, base+"/restapis", nil)
		req.Header.Set("Authorization", "Bearer "+c["token"])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := get(other.URL); got != http.StatusOK {
		t.Fatalf("other node before delete: got %d, want 200", got)
	}
	if code, _, body := e.raw(http.MethodDelete, "/credentials/"+c["id"], ""); code != http.StatusAccepted {
		t.Fatalf("delete: got %d %s", code, body)
	}
	deleted := time.Now()
	if got := get(e.url); got != http.StatusForbidden {
		t.Fatalf("deleting node right after: got %d, want 403", got)
	}
	if _, ok := waittest.Poll(5*time.Second, func() bool { return get(other.URL) == http.StatusForbidden }); !ok {
		t.Fatalf("other node still accepts the deleted credential after %v", time.Since(deleted))
	}
}

func TestKeysCredentialManagesKeysAndNothingElse(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.mustCredential("key-desk", "keys", "token")
	k := c["token"]
	code, _, body := e.rawAs(k, http.MethodPost, "/apikeys", `{"name":"partner","enabled":true}`)
	if code != http.StatusCreated {
		t.Fatalf("keys role create key: got %d %s", code, body)
	}
	var key struct{ ID string }
	_ = json.Unmarshal([]byte(body), &key)
	if code, _, body := e.rawAs(k, http.MethodPatch, "/apikeys/"+key.ID, `{"patchOperations":[{"op":"replace","path":"/enabled","value":"false"}]}`); code != http.StatusOK {
		t.Fatalf("keys role disable key: got %d %s", code, body)
	}
	for _, tc := range []struct{ method, path, body, op string }{
		{http.MethodPost, "/restapis", `{"name":"x"}`, "CreateRestApi"},
		{http.MethodPost, "/usageplans", `{"name":"x"}`, "CreateUsagePlan"},
		{http.MethodPatch, "/account", `{"patchOperations":[]}`, "UpdateAccount"},
		{http.MethodGet, "/restapis", "", "GetRestApis"},
		{http.MethodPost, "/credentials", `{"name":"x","role":"admin","kind":"token"}`, "CreateCredential"},
	} {
		code, typ, body := e.rawAs(k, tc.method, tc.path, tc.body)
		if code != http.StatusForbidden || typ != "AccessDeniedException" || !strings.Contains(body, tc.op) {
			t.Errorf("keys role %s %s: got %d %s %s, want 403 AccessDeniedException naming %s", tc.method, tc.path, code, typ, body, tc.op)
		}
	}
}

func TestCredentialInputIsValidated(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct{ body, field string }{
		{`{"name":"a","role":"root","kind":"token"}`, "role"},
		{`{"name":"a","role":"admin","kind":"password"}`, "kind"},
		{`{"role":"admin","kind":"token"}`, "name"},
	} {
		code, typ, body := e.raw(http.MethodPost, "/credentials", tc.body)
		if code != http.StatusBadRequest || !strings.Contains(body, tc.field) {
			t.Errorf("POST /credentials %s: got %d %s %s, want 400 naming %s", tc.body, code, typ, body, tc.field)
		}
	}
	e.mustCredential("dup", "viewer", "token")
	if code, _, body := e.raw(http.MethodPost, "/credentials", `{"name":"dup","role":"viewer","kind":"token"}`); code != http.StatusConflict {
		t.Errorf("duplicate name: got %d %s, want 409", code, body)
	}
}
