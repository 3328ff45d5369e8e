package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"

	"tollgate/admin"
	"tollgate/plans/postgres/postgrestest"
)

func TestMalformedInputIsBadRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	apiID, _ := e.api("pets", "prod")
	manyOps := `{"patchOperations":[` + strings.Repeat(`{"op":"replace","path":"/name","value":"x"},`, 100) + `{"op":"replace","path":"/name","value":"x"}]}`
	cases := []struct {
		name, method, path, body string
		wantStatus               int
		wantType, wantInMessage  string
	}{
		{"malformed JSON", "POST", "/restapis", `{"name": `, 400, "BadRequestException", "malformed JSON"},
		{"trailing data", "POST", "/restapis", `{"name":"a"} {}`, 400, "BadRequestException", "malformed JSON"},
		{"name of the wrong type", "POST", "/restapis", `{"name": 5}`, 400, "BadRequestException", "name"},
		{"missing name", "POST", "/restapis", `{}`, 400, "BadRequestException", "name"},
		{"burst with a fraction", "POST", "/usageplans", `{"name":"p","throttle":{"burstLimit":1.5,"rateLimit":1}}`, 400, "BadRequestException", "throttle.burstLimit"},
		{"burst beyond int32", "POST", "/usageplans", `{"name":"p","throttle":{"burstLimit":3000000000,"rateLimit":1}}`, 400, "BadRequestException", "throttle.burstLimit"},
		{"rate as a string", "POST", "/usageplans", `{"name":"p","throttle":{"burstLimit":1,"rateLimit":"1"}}`, 400, "BadRequestException", "throttle.rateLimit"},
		{"quota without limit", "POST", "/usageplans", `{"name":"p","quota":{"period":"DAY"}}`, 400, "BadRequestException", "quota.limit"},
		{"quota offset out of range", "POST", "/usageplans", `{"name":"p","quota":{"limit":5,"period":"MONTH","offset":28}}`, 400, "BadRequestException", "quota.offset"},
		{"negative rate", "POST", "/usageplans", `{"name":"p","throttle":{"burstLimit":1,"rateLimit":-1}}`, 400, "BadRequestException", "rateLimit"},
		{"patch value not a string", "PATCH", "/restapis/" + apiID, `{"patchOperations":[{"op":"replace","path":"/name","value":5}]}`, 400, "BadRequestException", "value"},
		{"unknown patch op", "PATCH", "/restapis/" + apiID, `{"patchOperations":[{"op":"move","path":"/name","from":"/description"}]}`, 400, "BadRequestException", "move"},
		{"unknown patch path", "PATCH", "/restapis/" + apiID + "/stages/prod", `{"patchOperations":[{"op":"replace","path":"/accessLogSettings/format","value":"x"}]}`, 400, "BadRequestException", "/accessLogSettings/format"},
		{"more than 100 patch operations", "PATCH", "/restapis/" + apiID, manyOps, 400, "BadRequestException", "100"},
		{"unsupported integration type", "PUT", "/restapis/" + apiID + "/resources/x/methods/GET/integration", `{"type":"HTTP","uri":"http://x"}`, 400, "BadRequestException", "HTTP"},
		{"unknown http method", "PUT", "/restapis/" + apiID + "/resources/x/methods/FETCH", `{}`, 400, "BadRequestException", "FETCH"},
		{"operation outside the subset", "GET", "/restapis/" + apiID + "/models", ``, 400, "BadRequestException", "/restapis/" + apiID + "/models"},
		{"usage without Options.Usage is outside the subset", "GET", "/usageplans/abc/usage?startDate=2026-01-01&endDate=2026-01-02", ``, 400, "BadRequestException", "GetUsage"},
		{"method outside the subset", "POST", "/restapis/" + apiID, `{}`, 400, "BadRequestException", "POST"},
		{"put of a document that is not OpenAPI", "PUT", "/restapis/" + apiID + "?mode=overwrite", `{}`, 400, "BadRequestException", "OpenAPI 3.0"},
		{"import of a document without info", "POST", "/restapis?mode=import", `openapi: 3.0.0`, 400, "BadRequestException", "info"},
		{"chosen value of the generated shape without its checksum", "POST", "/apikeys", `{"name":"k","value":"tg` + strings.Repeat("a", 42) + `"}`, 400, "BadRequestException", "checksum"},
		{"bad includeValues", "GET", "/apikeys?includeValues=maybe", ``, 400, "BadRequestException", "includeValues"},
		{"unknown api", "GET", "/restapis/zzzzzzzzzz", ``, 404, "NotFoundException", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, errType, body := e.raw(tc.method, tc.path, tc.body)
			if status != tc.wantStatus || errType != tc.wantType {
				t.Fatalf("got %d %s %s, want %d %s", status, errType, body, tc.wantStatus, tc.wantType)
			}
			var msg struct{ Message string }
			if err := json.Unmarshal([]byte(body), &msg); err != nil || msg.Message == "" {
				t.Fatalf("got body %q, want {\"message\": ...}", body)
			}
			if !strings.Contains(msg.Message, tc.wantInMessage) {
				t.Fatalf("got message %q, want it to name %q", msg.Message, tc.wantInMessage)
			}
		})
	}
}

func TestBodyLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	big := `{"name":"` + strings.Repeat("a", admin.MaxBodyBytes) + `"}`
	status, errType, body := e.raw("POST", "/restapis", big)
	if status != 400 || errType != "BadRequestException" || !strings.Contains(body, "6 MiB") {
		t.Fatalf("got %d %s %s, want 400 BadRequestException naming 6 MiB", status, errType, body)
	}
}

func TestSuccessCodes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	status, _, body := e.raw("POST", "/restapis", `{"name":"x"}`)
	if status != http.StatusCreated {
		t.Fatalf("got create status %d, want 201", status)
	}
	var api struct {
		ID          string `json:"id"`
		CreatedDate int64  `json:"createdDate"`
	}
	if err := json.Unmarshal([]byte(body), &api); err != nil || api.CreatedDate < 1_700_000_000 {
		t.Fatalf("got body %s, want createdDate as epoch seconds", body)
	}
	cases := []struct {
		method, path, body string
		want               int
	}{
		{"GET", "/restapis/" + api.ID, "", http.StatusOK},
		{"PATCH", "/restapis/" + api.ID, `{"patchOperations":[]}`, http.StatusOK},
		{"DELETE", "/restapis/" + api.ID, "", http.StatusAccepted},
	}
	for _, tc := range cases {
		status, _, body := e.raw(tc.method, tc.path, tc.body)
		if status != tc.want {
			t.Fatalf("%s %s: got %d %s, want %d", tc.method, tc.path, status, body, tc.want)
		}
		if tc.want == http.StatusAccepted && body != "" {
			t.Fatalf("got delete body %q, want empty", body)
		}
	}
}

func TestPublishFailureDoesNotFailTheWrite(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.pub.failWith(errors.New("redis down"))
	a := call(e.c.CreateRestApi(e.ctx, &apigateway.CreateRestApiInput{Name: aws.String("pets")})).must(t)
	call(e.c.GetRestApi(e.ctx, &apigateway.GetRestApiInput{RestApiId: a.Id})).must(t)
	if n := e.pub.count(); n != 1 {
		t.Fatalf("got %d publish attempts, want 1", n)
	}
}

func TestPublicEndpoints(t *testing.T) {
	t.Parallel()
	ready := errors.New("postgres down")
	srv := httptest.NewServer(admin.New(admin.Options{
		Store:       postgrestest.MustDB(t),
		Credentials: admin.Credentials{BearerToken: token},
		Ready:       func(context.Context) error { return ready },
		Metrics:     http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "tollgate_config_version 1") }),
		Web:         fstest.MapFS{"index.html": {Data: []byte("<h1>console</h1>")}},
	}))
	t.Cleanup(srv.Close)
	cases := []struct {
		path, wantIn string
		want         int
	}{
		{"/healthz", "ok", 200},
		{"/readyz", "postgres down", 503},
		{"/metrics", "tollgate_config_version", 200},
		{"/console/", "console", 200},
		{"/account", "Missing Authentication Token", 403},
		{"/nothing/here", "Missing Authentication Token", 403},
	}
	for _, tc := range cases {
		resp, err := http.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		b := readAll(resp)
		if resp.StatusCode != tc.want || !strings.Contains(b, tc.wantIn) {
			t.Fatalf("%s: got %d %q, want %d containing %q", tc.path, resp.StatusCode, b, tc.want, tc.wantIn)
		}
	}
}

func readAll(resp *http.Response) string {
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
