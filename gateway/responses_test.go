package gateway

import (
	"net/http"
	"testing"

	"tollgate/plans"
)

// corsMock is the OPTIONS method AWS's console writes for CORS: a MOCK
// whose request template selects the 200 integration response, with
// static Access-Control-Allow-* headers.
func corsMock() *plans.Method {
	return &plans.Method{AuthorizationType: "NONE", MethodIntegration: &plans.Integration{
		Type: plans.IntegrationMock, TimeoutInMillis: plans.DefaultTimeoutMillis,
		RequestTemplates: map[string]string{"application/json": `{"statusCode": 200}`},
		IntegrationResponses: map[string]*plans.IntegrationResponse{"200": {
			StatusCode: "200",
			ResponseParameters: map[string]string{
				"method.response.header.Access-Control-Allow-Origin":  "'https://app.example'",
				"method.response.header.Access-Control-Allow-Headers": "'Content-Type,x-api-key'",
				"method.response.header.Access-Control-Allow-Methods": "'GET,OPTIONS'",
				"method.response.header.X-From-Stage":                 "stageVariables.colour",
			},
			ResponseTemplates: map[string]string{"application/json": `{"ok":true}`},
		}},
	}}
}

func TestMockAnswersItsIntegrationResponse(t *testing.T) {
	t.Parallel()
	teapot := mock(false)
	teapot.MethodIntegration.RequestTemplates = map[string]string{"application/json": `{"statusCode": 418}`}
	teapot.MethodIntegration.IntegrationResponses = map[string]*plans.IntegrationResponse{
		"200": {StatusCode: "200"},
		"418": {StatusCode: "418", SelectionPattern: "4\\d\\d", ResponseTemplates: map[string]string{"application/json": "short and stout"}},
	}
	unmatched := mock(false)
	unmatched.MethodIntegration.IntegrationResponses = map[string]*plans.IntegrationResponse{
		"500": {StatusCode: "500", SelectionPattern: "5\\d\\d"},
	}
	tg := mustGateway(t, snapshot(plans.Stage{Variables: map[string]string{"colour": "blue"}},
		res{"/pets", methods(corsMock(), "OPTIONS")},
		res{"/plain", methods(mock(false), "GET")},
		res{"/teapot", methods(teapot, "GET")},
		res{"/unmatched", methods(unmatched, "GET")},
	), nil)

	got := tg.do(t, "OPTIONS", "/prod/pets", "Origin", "https://app.example", "Access-Control-Request-Method", "GET")
	if got.status != http.StatusOK || got.body != `{"ok":true}` {
		t.Errorf("OPTIONS: got %d %q, want 200 {\"ok\":true}", got.status, got.body)
	}
	for name, want := range map[string]string{
		"Access-Control-Allow-Origin":  "https://app.example",
		"Access-Control-Allow-Headers": "Content-Type,x-api-key",
		"Access-Control-Allow-Methods": "GET,OPTIONS",
		"X-From-Stage":                 "blue",
		"Content-Type":                 "application/json",
	} {
		if h := got.header.Get(name); h != want {
			t.Errorf("OPTIONS %s: got %q, want %q", name, h, want)
		}
	}
	if got := tg.do(t, "GET", "/prod/plain"); got.status != 200 || got.body != "{}" {
		t.Errorf("MOCK without integration responses: got %d %q, want 200 {}", got.status, got.body)
	}
	if got := tg.do(t, "GET", "/prod/teapot"); got.status != 418 || got.body != "short and stout" {
		t.Errorf("MOCK selecting 418: got %d %q, want 418 %q", got.status, got.body, "short and stout")
	}
	wantError(t, tg.do(t, "GET", "/prod/unmatched"), 500, "Internal server error", "InternalServerErrorException")
}

// corsSnapshot serves /keyed (key required) with DEFAULT_4XX and THROTTLED
// gateway responses carrying CORS headers, and a plan that admits one
// request.
func corsSnapshot() *plans.Snapshot {
	snap := snapshot(plans.Stage{}, res{"/keyed", methods(mock(true), "GET")})
	st := snap.Apis[testAPI].Stages[testStage]
	st.GatewayResponses = map[string]plans.GatewayResponse{
		plans.ResponseDefault4XX: {ResponseType: plans.ResponseDefault4XX, ResponseParameters: map[string]string{
			"gatewayresponse.header.Access-Control-Allow-Origin": "method.request.header.Origin",
		}},
		plans.ResponseThrottled: {ResponseType: plans.ResponseThrottled, StatusCode: "429", ResponseParameters: map[string]string{
			"gatewayresponse.header.Access-Control-Allow-Origin": "'*'",
		}, ResponseTemplates: map[string]string{"application/json": `{"error":$context.error.messageString,"type":"$context.error.responseType"}`}},
	}
	addPlan(snap, plans.UsagePlan{ID: "plan01", Throttle: &plans.Throttle{RateLimit: 0.01, BurstLimit: 1}})
	return snap
}

func TestGatewayResponsesApplyToTheGatewaysOwnErrors(t *testing.T) {
	t.Parallel()
	tg := mustGateway(t, corsSnapshot(), nil)
	addTestKeys(tg.keys)
	origin := "https://app.example"

	forbidden := tg.do(t, "GET", "/prod/keyed", "Origin", origin)
	wantError(t, forbidden, 403, "Forbidden", "ForbiddenException")
	if h := forbidden.header.Get("Access-Control-Allow-Origin"); h != origin {
		t.Errorf("403 Access-Control-Allow-Origin: got %q, want %q (DEFAULT_4XX echoing Origin)", h, origin)
	}
	notFound := tg.do(t, "GET", "/prod/nope", "Origin", origin)
	if notFound.status != 404 || notFound.header.Get("Access-Control-Allow-Origin") != origin {
		t.Errorf("404: got %d with Access-Control-Allow-Origin %q, want 404 with %q", notFound.status, notFound.header.Get("Access-Control-Allow-Origin"), origin)
	}
	if got := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey, "Origin", origin); got.status != 200 {
		t.Fatalf("first keyed request: got %d, want 200", got.status)
	}
	throttled := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey, "Origin", origin)
	if throttled.status != 429 {
		t.Fatalf("second keyed request: got %d, want 429", throttled.status)
	}
	if want := `{"error":"Too Many Requests","type":"THROTTLED"}`; throttled.body != want {
		t.Errorf("429 body: got %s, want %s", throttled.body, want)
	}
	if h := throttled.header.Get("Access-Control-Allow-Origin"); h != "*" {
		t.Errorf("429 Access-Control-Allow-Origin: got %q, want *", h)
	}
	if throttled.header.Get("Retry-After") == "" || throttled.header.Get("x-amzn-ErrorType") != "TooManyRequestsException" {
		t.Errorf("429 lost the gateway's own headers: %v", throttled.header)
	}
}

func TestGatewayResponseStatusOverride(t *testing.T) {
	t.Parallel()
	snap := snapshot(plans.Stage{}, res{"/pets", methods(mock(false), "GET")})
	snap.Apis[testAPI].Stages[testStage].GatewayResponses = map[string]plans.GatewayResponse{
		plans.ResponseMissingAuthenticationToken: {ResponseType: plans.ResponseMissingAuthenticationToken, StatusCode: "404"},
	}
	tg := mustGateway(t, snap, nil)
	got := tg.do(t, "POST", "/prod/pets")
	wantError(t, got, 404, "Method Not Allowed", "MethodNotAllowedException")
	// An unknown stage has no gateway responses: the gateway's own answer.
	wantError(t, tg.do(t, "GET", "/test/pets"), 404, "Not Found", "NotFoundException")
}

func TestResponseMappingsLeaveTheGatewaysOwnHeaders(t *testing.T) {
	t.Parallel()
	owned := mock(true)
	owned.MethodIntegration.IntegrationResponses = map[string]*plans.IntegrationResponse{"200": {StatusCode: "200",
		ResponseParameters: map[string]string{
			"method.response.header.x-amzn-RequestId":      "'fake'",
			"method.response.header.X-RateLimit-Remaining": "'999'",
			"method.response.header.ratelimit":             "'fake'",
			"method.response.header.Content-Length":        "'1'",
			"method.response.header.X-Ok":                  "'yes'",
		}}}
	snap := snapshot(plans.Stage{}, res{"/keyed", methods(owned, "GET")})
	snap.Apis[testAPI].Stages[testStage].GatewayResponses = map[string]plans.GatewayResponse{
		plans.ResponseThrottled: {ResponseType: plans.ResponseThrottled, ResponseParameters: map[string]string{
			"gatewayresponse.header.Retry-After":                 "'999'",
			"gatewayresponse.header.x-amzn-ErrorType":            "'Mine'",
			"gatewayresponse.header.X-RateLimit-Limit":           "'1000'",
			"gatewayresponse.header.Connection":                  "'upgrade'",
			"gatewayresponse.header.Access-Control-Allow-Origin": "'*'",
		}},
	}
	addPlan(snap, plans.UsagePlan{ID: "plan01", Throttle: &plans.Throttle{RateLimit: 0.01, BurstLimit: 1}})
	tg := mustGateway(t, snap, nil)
	addTestKeys(tg.keys)

	ok := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey)
	if ok.status != 200 || ok.header.Get("X-Ok") != "yes" || ok.body != "" {
		t.Fatalf("MOCK: got %d %q, X-Ok %q; want 200, an empty body, X-Ok yes", ok.status, ok.body, ok.header.Get("X-Ok"))
	}
	for _, name := range []string{"x-amzn-RequestId", "X-RateLimit-Remaining", "RateLimit"} {
		if v := ok.header.Values(name); len(v) != 1 || v[0] == "fake" || v[0] == "999" {
			t.Errorf("MOCK %s: got %q, want the gateway's one value", name, v)
		}
	}
	throttled := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey)
	if throttled.status != 429 || throttled.header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("second request: got %d with Access-Control-Allow-Origin %q, want 429 with *", throttled.status, throttled.header.Get("Access-Control-Allow-Origin"))
	}
	for name, notWant := range map[string]string{"Retry-After": "999", "x-amzn-ErrorType": "Mine", "X-RateLimit-Limit": "1000"} {
		if v := throttled.header.Values(name); len(v) != 1 || v[0] == notWant {
			t.Errorf("429 %s: got %q, want the gateway's one value", name, v)
		}
	}
	if c := throttled.header.Get("Connection"); c == "upgrade" {
		t.Errorf("429 Connection: got %q, want the server's own", c)
	}
}

// The headers the gateway writes are the ones response mappings may not
// set (plans.GatewayOwnedHeader): this keeps the two lists together.
func TestGatewayOwnedHeadersCoverWhatTheGatewayWrites(t *testing.T) {
	t.Parallel()
	for _, name := range append([]string{HeaderRetryAfter, headerErrorType, headerRequestID, headerContentLen}, ownedHeaders...) {
		if !plans.GatewayOwnedHeader(name) {
			t.Errorf("plans.GatewayOwnedHeader(%q) is false: a response mapping could replace the gateway's %s", name, name)
		}
	}
}

// The $context and $stageVariables variables the gateway knows are
// substituted in a MOCK integration response's template and a gateway
// response's; an unknown one is served as written. A MOCK's header may
// come from the request.
func TestTemplatesSubstituteContextAndStageVariables(t *testing.T) {
	t.Parallel()
	echo := mock(false)
	echo.MethodIntegration.IntegrationResponses = map[string]*plans.IntegrationResponse{"200": {StatusCode: "200",
		ResponseParameters: map[string]string{"method.response.header.Access-Control-Allow-Origin": "method.request.header.Origin",
			"method.response.header.X-Unsent": "context.requestId"},
		ResponseTemplates: map[string]string{"application/json": `{"api":"$context.apiId","stage":"${context.stage}","resource":"$context.resourcePath",` +
			`"path":"$context.path","method":"$context.httpMethod","id":"$context.requestId","env":"$stageVariables.env","none":"$stageVariables.none",` +
			`"domain":"$context.domainName","prefix":"$context.domainPrefix","ua":"$context.identity.userAgent","other":"$context.authorizer.x",` +
			`"error":"$context.error.message"}`}}}
	snap := snapshot(plans.Stage{Variables: map[string]string{"env": "blue"}}, res{"/pets/{id}", methods(echo, "GET")})
	snap.Apis[testAPI].Stages[testStage].GatewayResponses = map[string]plans.GatewayResponse{
		plans.ResponseResourceNotFound: {ResponseType: plans.ResponseResourceNotFound, ResponseTemplates: map[string]string{"application/json": `{"message":$context.error.messageString,` +
			`"type":"$context.error.responseType","stage":"$context.stage","path":"$context.path","env":"${stageVariables.env}","ip":"$context.identity.sourceIp","id":"$context.requestId"}`}},
	}
	tg := mustGateway(t, snap, nil)

	got := tg.do(t, "GET", "/prod/pets/7", "Origin", "https://app.example", "User-Agent", "ua/1")
	want := `{"api":"` + testAPI + `","stage":"prod","resource":"/pets/{id}","path":"/prod/pets/7","method":"GET","id":"` + got.header.Get("x-amzn-RequestId") +
		`","env":"blue","none":"","domain":"` + testHost + `","prefix":"` + testAPI + `","ua":"ua/1","other":"$context.authorizer.x","error":"$context.error.message"}`
	if got.status != 200 || got.body != want {
		t.Errorf("MOCK: got %d %s\nwant 200 %s", got.status, got.body, want)
	}
	if h := got.header.Get("Access-Control-Allow-Origin"); h != "https://app.example" || got.header.Get("X-Unsent") != "" {
		t.Errorf("MOCK headers: got %v, want Access-Control-Allow-Origin from Origin and no X-Unsent", got.header)
	}
	missing := tg.do(t, "GET", "/prod/nowhere")
	want = `{"message":"Not Found","type":"RESOURCE_NOT_FOUND","stage":"prod","path":"/prod/nowhere","env":"blue","ip":"127.0.0.1","id":"` + missing.header.Get("x-amzn-RequestId") + `"}`
	if missing.status != 404 || missing.body != want {
		t.Errorf("gateway response: got %d %s\nwant 404 %s", missing.status, missing.body, want)
	}
}

// An unreachable upstream answers 502 (INTEGRATION_FAILURE), where AWS's
// default for that type is 504; a gateway response for the type gives
// AWS's status (docs/behaviour.md, Integrations).
func TestIntegrationFailureAnswers502OrItsGatewayResponse(t *testing.T) {
	t.Parallel()
	down := res{"/down", methods(proxy(false, "http://127.0.0.1:1/x"), "GET")}
	wantError(t, mustGateway(t, snapshot(plans.Stage{}, down), nil).do(t, "GET", "/prod/down"), 502, "Bad Gateway", "BadGatewayException")
	snap := snapshot(plans.Stage{}, down)
	snap.Apis[testAPI].Stages[testStage].GatewayResponses = map[string]plans.GatewayResponse{
		plans.ResponseIntegrationFailure: {ResponseType: plans.ResponseIntegrationFailure, StatusCode: "504"},
	}
	wantError(t, mustGateway(t, snap, nil).do(t, "GET", "/prod/down"), 504, "Bad Gateway", "BadGatewayException")
}
