package admin_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"tollgate/admin"
	"tollgate/plans/postgres/postgrestest"
)

// fuzzRoutes are the admin routes whose request bodies FuzzRequestBodies
// feeds; {api}, {res}, {plan}, {key} and {rule} are filled with existing
// ids.
var fuzzRoutes = []struct{ method, path string }{
	{"POST", "/restapis"},
	{"PATCH", "/restapis/{api}"},
	{"POST", "/restapis/{api}/resources/{res}"},
	{"PUT", "/restapis/{api}/resources/{res}/methods/GET"},
	{"PUT", "/restapis/{api}/resources/{res}/methods/GET/integration"},
	{"PATCH", "/restapis/{api}/resources/{res}/methods/GET"},
	{"PUT", "/restapis/{api}/resources/{res}/methods/GET/responses/200"},
	{"PUT", "/restapis/{api}/resources/{res}/methods/GET/integration/responses/200"},
	{"PUT", "/restapis/{api}/gatewayresponses/DEFAULT_4XX"},
	{"POST", "/restapis/{api}/deployments"},
	{"POST", "/restapis/{api}/stages"},
	{"PATCH", "/restapis/{api}/stages/prod"},
	{"POST", "/usageplans"},
	{"PATCH", "/usageplans/{plan}"},
	{"POST", "/usageplans/{plan}/keys"},
	{"PATCH", "/usageplans/{plan}/keys/{key}/usage"},
	{"POST", "/apikeys"},
	{"PATCH", "/apikeys/{key}"},
	{"POST", "/apikeys?mode=import&format=csv"},
	{"PATCH", "/account"},
	{"POST", "/restapis/{api}/stages/prod/ratelimitrules"},
	{"PATCH", "/restapis/{api}/stages/prod/ratelimitrules/{rule}"},
}

// FuzzRequestBodies sends arbitrary bodies to every writing admin route,
// against a real database: the answer is never a 5xx (bad input is 400,
// naming the field), and every refusal has a JSON message.
func FuzzRequestBodies(f *testing.F) {
	for _, seed := range []string{
		``, `{}`, `null`, `[]`, `{"name":`, `{"name":"a","description":5}`,
		`{"patchOperations":[{"op":"replace","path":"/name","value":"b"}]}`,
		`{"patchOperations":[{"op":"replace","path":"/*/*/throttling/burstLimit","value":"-1"}]}`,
		`{"patchOperations":[{"op":"replace","path":"/quota/limit","value":"99999999999"}]}`,
		`{"patchOperations":[{"op":"add","path":"/apiStages","value":"nope:prod"}]}`,
		`{"patchOperations":[{"op":"replace","path":"/throttleSettings/rateLimit","value":"NaN"}]}`,
		`{"patchOperations":[{"op":"replace","path":"/remaining","value":"-5"}]}`,
		`{"name":"p","throttle":{"rateLimit":1e309,"burstLimit":1},"quota":{"limit":1,"period":"YEAR"}}`,
		`{"name":"p","apiStages":[{"apiId":"x","stage":"prod","throttle":{"/a/GET":{"rateLimit":1,"burstLimit":0}}}]}`,
		`{"keyId":"zzz","keyType":"API_KEY"}`, `{"type":"HTTP_PROXY","uri":"ftp://x"}`,
		`{"pathPart":"{a+}"}`, `{"stageName":"a b","deploymentId":"x"}`,
		`{"name":"k","value":"short"}`, "Key,Name\nabc,def\n", "\x00\xff",
		`{"selectionPattern":"(","responseParameters":{"method.response.header.X":"'a'"}}`,
		`{"statusCode":"999","responseParameters":{"gatewayresponse.header.A":"'*'"},"responseTemplates":{"application/json":"{}"}}`,
		`{"name":"r","keyBy":["ip","header:X"],"algorithm":"LEAKY_BUCKET","rateLimit":1,"burstLimit":2,"maxDelayMillis":100}`,
		`{"patchOperations":[{"op":"replace","path":"/algorithm","value":"SLIDING_WINDOW"},{"op":"add","path":"/windowSeconds","value":"9"}]}`,
		`{"patchOperations":[{"op":"replace","path":"/keyBy","value":"query:a,,header:"}]}`,
	} {
		for i := range fuzzRoutes {
			f.Add(uint8(i), seed)
		}
	}
	h, ids := fuzzAdmin(f)
	f.Fuzz(func(t *testing.T, route uint8, body string) {
		r := fuzzRoutes[int(route)%len(fuzzRoutes)]
		path := strings.NewReplacer("{api}", ids["api"], "{res}", ids["res"], "{plan}", ids["plan"], "{key}", ids["key"], "{rule}", ids["rule"]).Replace(r.path)
		status, out := serve(h, r.method, path, body)
		if status >= 500 {
			t.Fatalf("%s %s with body %q: got %d %s, want < 500", r.method, path, body, status, out)
		}
		if status >= 400 {
			var msg struct{ Message string }
			if err := json.Unmarshal([]byte(out), &msg); err != nil || msg.Message == "" {
				t.Fatalf("%s %s with body %q: got %d %q, want a JSON message", r.method, path, body, status, out)
			}
		}
	})
}

// fuzzAdmin returns an admin handler on a fresh database holding an API
// (root resource, stage prod), a usage plan and an API key; ids names them.
func fuzzAdmin(f *testing.F) (http.Handler, map[string]string) {
	f.Helper()
	h := admin.New(admin.Options{
		Store:       postgrestest.MustDB(f),
		Publisher:   &recorder{},
		Credentials: admin.Credentials{BearerToken: token},
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	ids := map[string]string{}
	create := func(name, method, path, body, field string) {
		status, out := serve(h, method, path, body)
		var v map[string]any
		if status >= 300 || json.Unmarshal([]byte(out), &v) != nil {
			f.Fatalf("setup %s %s: got %d %s", method, path, status, out)
		}
		if field != "" {
			ids[name], _ = v[field].(string)
		}
	}
	create("api", "POST", "/restapis", `{"name":"fuzz"}`, "id")
	_, out := serve(h, "GET", "/restapis/"+ids["api"]+"/resources", ``)
	var res struct{ Item []struct{ ID string } }
	_ = json.Unmarshal([]byte(out), &res)
	ids["res"] = res.Item[0].ID
	create("", "PUT", "/restapis/"+ids["api"]+"/resources/"+ids["res"]+"/methods/GET", `{"authorizationType":"NONE","apiKeyRequired":true}`, "")
	create("", "PUT", "/restapis/"+ids["api"]+"/resources/"+ids["res"]+"/methods/GET/integration", `{"type":"MOCK"}`, "")
	create("", "POST", "/restapis/"+ids["api"]+"/deployments", `{"stageName":"prod"}`, "")
	create("plan", "POST", "/usageplans", `{"name":"p","quota":{"limit":5,"period":"DAY"},"apiStages":[{"apiId":"`+ids["api"]+`","stage":"prod"}]}`, "id")
	create("key", "POST", "/apikeys", `{"name":"k","enabled":true}`, "id")
	create("", "POST", "/usageplans/"+ids["plan"]+"/keys", `{"keyId":"`+ids["key"]+`","keyType":"API_KEY"}`, "")
	create("rule", "POST", "/restapis/"+ids["api"]+"/stages/prod/ratelimitrules", `{"name":"r","algorithm":"CONCURRENCY","limit":2}`, "id")
	return h, ids
}

// serve runs one request through h and returns its status and body.
func serve(h http.Handler, method, path, body string) (int, string) {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}
