package gateway

import (
	"net/http"
	"testing"

	"tollgate/plans"
)

// A method secured by an authorizer or AWS_IAM, which tollgate cannot
// perform, refuses every call as AWS refuses an unauthorized one, before
// the key check and whatever the call carries; opening it lets calls in.
func TestMethodsSecuredByAnAuthorizerAreClosed(t *testing.T) {
	t.Parallel()
	secured := func(authType string, keyed bool) *plans.Method {
		m := mock(keyed)
		m.AuthorizationType = authType
		if authType == plans.AuthorizationCustom || authType == plans.AuthorizationCognito {
			m.AuthorizerID = "abc123"
		}
		return m
	}
	snap := snapshot(plans.Stage{},
		res{"/lambda", methods(secured(plans.AuthorizationCustom, true), "GET")},
		res{"/pool", methods(secured(plans.AuthorizationCognito, false), "GET")},
		res{"/iam", methods(secured(plans.AuthorizationIAM, false), "GET")},
		res{"/open", methods(secured(plans.AuthorizationNone, false), "GET")},
	)
	snap.Apis[testAPI].Stages[testStage].GatewayResponses = map[string]plans.GatewayResponse{
		plans.ResponseUnauthorized: {ResponseType: plans.ResponseUnauthorized,
			ResponseTemplates: map[string]string{"application/json": `{"message":$context.error.messageString,"type":"$context.error.responseType"}`}},
	}
	tg := mustGateway(t, snap, nil)

	got := tg.do(t, "GET", "/prod/lambda", "Authorization", "Bearer token-a-lambda-would-accept")
	if got.status != http.StatusUnauthorized || got.body != `{"message":"Unauthorized","type":"UNAUTHORIZED"}` {
		t.Errorf("Lambda authorizer: got %d %s, want 401 through the UNAUTHORIZED gateway response", got.status, got.body)
	}
	got = tg.do(t, "GET", "/prod/pool")
	if got.status != http.StatusUnauthorized {
		t.Errorf("Cognito authorizer: got %d %s, want 401", got.status, got.body)
	}
	wantError(t, tg.do(t, "GET", "/prod/iam"), http.StatusForbidden, "Missing Authentication Token", "MissingAuthenticationTokenException")
	wantError(t, tg.do(t, "GET", "/prod/iam", "Authorization", "AWS4-HMAC-SHA256 Credential=AKID/20261202/eu-west-1/execute-api/aws4_request"),
		http.StatusForbidden, "Forbidden", "AccessDeniedException")
	if got := tg.do(t, "GET", "/prod/open"); got.status != http.StatusOK {
		t.Errorf("authorizationType NONE: got %d %s, want 200", got.status, got.body)
	}
}
