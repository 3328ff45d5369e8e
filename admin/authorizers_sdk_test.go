package admin_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"
)

// securedDoc has a GET secured by a Lambda TOKEN authorizer and a POST by
// AWS_IAM, as API Gateway exports them.
const securedDoc = `openapi: 3.0.1
info: {title: secured, version: '1'}
paths:
  /pets:
    get:
      security: [{lambda: []}]
      x-amazon-apigateway-integration: {type: mock, requestTemplates: {application/json: '{"statusCode": 200}'}}
    post:
      security: [{sigv4: []}]
      x-amazon-apigateway-integration: {type: mock, requestTemplates: {application/json: '{"statusCode": 200}'}}
components:
  securitySchemes:
    lambda:
      type: apiKey
      name: Authorization
      in: header
      x-amazon-apigateway-authtype: custom
      x-amazon-apigateway-authorizer:
        type: token
        authorizerUri: arn:aws:apigateway:eu-west-1:lambda:path/2015-03-31/functions/arn:aws:lambda:eu-west-1:123456789012:function:auth/invocations
        authorizerResultTtlInSeconds: 60
    sigv4:
      type: apiKey
      name: Authorization
      in: header
      x-amazon-apigateway-authtype: awsSigv4
`

// A document with authorizers imports as AWS imports it, each secured
// method closed with a warning naming it; the authorizers are AWS's
// resources (get, update, delete while unused), and update-method to
// authorizationType NONE opens a method.
func TestImportedAuthorizersAreKeptAndTheirMethodsClosed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.c.ImportRestApi(e.ctx, &apigateway.ImportRestApiInput{Body: []byte(securedDoc), FailOnWarnings: true})
	wantBadRequest(t, err, "failonwarnings")
	api := call(e.c.ImportRestApi(e.ctx, &apigateway.ImportRestApiInput{Body: []byte(securedDoc)})).must(t)
	if len(api.Warnings) != 2 || !strings.HasPrefix(api.Warnings[0], "paths./pets.get.security: ") ||
		!strings.Contains(api.Warnings[0], "closed") || !strings.HasPrefix(api.Warnings[1], "paths./pets.post.security: ") {
		t.Fatalf("warnings %q, want the two secured methods named, closed", api.Warnings)
	}
	as := call(e.c.GetAuthorizers(e.ctx, &apigateway.GetAuthorizersInput{RestApiId: api.Id})).must(t)
	if len(as.Items) != 1 {
		t.Fatalf("authorizers %+v, want one", as.Items)
	}
	a := as.Items[0]
	if aws.ToString(a.Name) != "lambda" || a.Type != types.AuthorizerTypeToken || aws.ToString(a.IdentitySource) != "method.request.header.Authorization" ||
		aws.ToInt32(a.AuthorizerResultTtlInSeconds) != 60 || aws.ToString(a.AuthType) != "custom" {
		t.Errorf("authorizer %+v", a)
	}
	rs := call(e.c.GetResources(e.ctx, &apigateway.GetResourcesInput{RestApiId: api.Id, Embed: []string{"methods"}})).must(t)
	var pets string
	for _, r := range rs.Items {
		if aws.ToString(r.Path) == "/pets" {
			pets = aws.ToString(r.Id)
		}
	}
	get := call(e.c.GetMethod(e.ctx, &apigateway.GetMethodInput{RestApiId: api.Id, ResourceId: &pets, HttpMethod: aws.String("GET")})).must(t)
	if aws.ToString(get.AuthorizationType) != "CUSTOM" || aws.ToString(get.AuthorizerId) != aws.ToString(a.Id) {
		t.Errorf("GET: authorizationType %q authorizerId %q, want CUSTOM %s", aws.ToString(get.AuthorizationType), aws.ToString(get.AuthorizerId), aws.ToString(a.Id))
	}
	post := call(e.c.GetMethod(e.ctx, &apigateway.GetMethodInput{RestApiId: api.Id, ResourceId: &pets, HttpMethod: aws.String("POST")})).must(t)
	if aws.ToString(post.AuthorizationType) != "AWS_IAM" {
		t.Errorf("POST: authorizationType %q, want AWS_IAM", aws.ToString(post.AuthorizationType))
	}

	_, err = e.c.DeleteAuthorizer(e.ctx, &apigateway.DeleteAuthorizerInput{RestApiId: api.Id, AuthorizerId: a.Id})
	wantCode(t, err, "ConflictException")
	upd := call(e.c.UpdateAuthorizer(e.ctx, &apigateway.UpdateAuthorizerInput{RestApiId: api.Id, AuthorizerId: a.Id,
		PatchOperations: []types.PatchOperation{op(types.OpReplace, "/authorizerResultTtlInSeconds", "0"),
			op(types.OpReplace, "/identityValidationExpression", "^Bearer .+$")}})).must(t)
	if aws.ToInt32(upd.AuthorizerResultTtlInSeconds) != 0 || aws.ToString(upd.IdentityValidationExpression) != "^Bearer .+$" {
		t.Errorf("updated %+v", upd)
	}
	_, err = e.c.UpdateMethod(e.ctx, &apigateway.UpdateMethodInput{RestApiId: api.Id, ResourceId: &pets, HttpMethod: aws.String("GET"),
		PatchOperations: []types.PatchOperation{op(types.OpReplace, "/authorizerId", "nope00")}})
	wantBadRequest(t, err, "authorizer")
	opened := call(e.c.UpdateMethod(e.ctx, &apigateway.UpdateMethodInput{RestApiId: api.Id, ResourceId: &pets, HttpMethod: aws.String("GET"),
		PatchOperations: []types.PatchOperation{op(types.OpReplace, "/authorizationType", "NONE")}})).must(t)
	if aws.ToString(opened.AuthorizationType) != "NONE" || opened.AuthorizerId != nil {
		t.Errorf("opened GET: %q %q, want NONE without an authorizer", aws.ToString(opened.AuthorizationType), aws.ToString(opened.AuthorizerId))
	}
	call(e.c.DeleteAuthorizer(e.ctx, &apigateway.DeleteAuthorizerInput{RestApiId: api.Id, AuthorizerId: a.Id})).must(t)
	_, err = e.c.GetAuthorizer(e.ctx, &apigateway.GetAuthorizerInput{RestApiId: api.Id, AuthorizerId: a.Id})
	wantCode(t, err, "NotFoundException")

	// A user pool authorizer made call by call secures a method with scopes.
	pool := call(e.c.CreateAuthorizer(e.ctx, &apigateway.CreateAuthorizerInput{RestApiId: api.Id, Name: aws.String("pool"),
		Type: types.AuthorizerTypeCognitoUserPools, ProviderARNs: []string{"arn:aws:cognito-idp:eu-west-1:123456789012:userpool/eu-west-1_X"},
		IdentitySource: aws.String("method.request.header.Authorization")})).must(t)
	_, err = e.c.CreateAuthorizer(e.ctx, &apigateway.CreateAuthorizerInput{RestApiId: api.Id, Name: aws.String("pool"),
		Type: types.AuthorizerTypeCognitoUserPools, ProviderARNs: []string{"arn:x"}})
	wantCode(t, err, "ConflictException")
	m := call(e.c.UpdateMethod(e.ctx, &apigateway.UpdateMethodInput{RestApiId: api.Id, ResourceId: &pets, HttpMethod: aws.String("POST"),
		PatchOperations: []types.PatchOperation{op(types.OpReplace, "/authorizationType", "COGNITO_USER_POOLS"),
			op(types.OpReplace, "/authorizerId", aws.ToString(pool.Id)), op(types.OpAdd, "/authorizationScopes", "email")}})).must(t)
	if aws.ToString(m.AuthorizerId) != aws.ToString(pool.Id) || !slices.Equal(m.AuthorizationScopes, []string{"email"}) {
		t.Errorf("POST %+v, want the pool with scope email", m)
	}
}
