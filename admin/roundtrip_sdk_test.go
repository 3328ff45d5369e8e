package admin_test

import (
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"
)

// builder puts methods of one API through the admin routes.
type builder struct {
	e           *env
	apiID       string
	authorizers map[string]string // authorizer name → id, for putMethod
}

// resource creates pathPart under parent and returns its id.
func (b builder) resource(parent, pathPart string) string {
	b.e.t.Helper()
	r := call(b.e.c.CreateResource(b.e.ctx, &apigateway.CreateResourceInput{RestApiId: &b.apiID, ParentId: &parent, PathPart: &pathPart})).must(b.e.t)
	return *r.Id
}

// method puts verb on res with its integration and method and integration
// responses.
func (b builder) method(res, verb string, keyed bool, params map[string]bool, in apigateway.PutIntegrationInput,
	mrs []apigateway.PutMethodResponseInput, irs []apigateway.PutIntegrationResponseInput) {
	t := b.e.t
	t.Helper()
	call(b.e.c.PutMethod(b.e.ctx, &apigateway.PutMethodInput{RestApiId: &b.apiID, ResourceId: &res, HttpMethod: &verb,
		AuthorizationType: aws.String("NONE"), ApiKeyRequired: keyed, RequestParameters: params})).must(t)
	in.RestApiId, in.ResourceId, in.HttpMethod = &b.apiID, &res, &verb
	call(b.e.c.PutIntegration(b.e.ctx, &in)).must(t)
	for _, mr := range mrs {
		mr.RestApiId, mr.ResourceId, mr.HttpMethod = &b.apiID, &res, &verb
		call(b.e.c.PutMethodResponse(b.e.ctx, &mr)).must(t)
	}
	for _, ir := range irs {
		ir.RestApiId, ir.ResourceId, ir.HttpMethod = &b.apiID, &res, &verb
		call(b.e.c.PutIntegrationResponse(b.e.ctx, &ir)).must(t)
	}
}

// buildPetstore builds, through the admin routes, an API using every
// part an export carries, and deploys it to prod.
func buildPetstore(t *testing.T, e *env) string {
	api := call(e.c.CreateRestApi(e.ctx, &apigateway.CreateRestApiInput{Name: aws.String("built"), Description: aws.String("built call by call")})).must(t)
	b := builder{e: e, apiID: *api.Id}
	root := call(e.c.GetResources(e.ctx, &apigateway.GetResourcesInput{RestApiId: api.Id})).must(t).Items[0].Id
	pets := b.resource(*root, "pets")
	pet := b.resource(pets, "{petId}")
	files := b.resource(b.resource(*root, "files"), "{proxy+}")
	b.method(pets, "GET", true, map[string]bool{"method.request.querystring.limit": false, "method.request.header.X-Trace": true},
		apigateway.PutIntegrationInput{Type: types.IntegrationTypeHttpProxy, IntegrationHttpMethod: aws.String("GET"),
			Uri: aws.String("http://backend.example/pets"), TimeoutInMillis: aws.Int32(5000), CacheNamespace: aws.String("pets-ns"),
			CacheKeyParameters: []string{"method.request.querystring.limit"},
			RequestParameters:  map[string]string{"integration.request.header.X-Tenant": "'acme'"}},
		[]apigateway.PutMethodResponseInput{{StatusCode: aws.String("200"),
			ResponseParameters: map[string]bool{"method.response.header.X-Count": false},
			ResponseModels:     map[string]string{"application/json": "Pet_List.v1"}}}, nil)
	b.method(pet, "GET", true, map[string]bool{"method.request.path.petId": true},
		apigateway.PutIntegrationInput{Type: types.IntegrationTypeHttpProxy, IntegrationHttpMethod: aws.String("GET"),
			Uri:               aws.String("http://backend.example/pets/{petId}"),
			RequestParameters: map[string]string{"integration.request.path.petId": "method.request.path.petId"}}, nil, nil)
	b.method(pets, "OPTIONS", false, nil,
		apigateway.PutIntegrationInput{Type: types.IntegrationTypeMock, RequestTemplates: map[string]string{"application/json": `{"statusCode": 200}`}},
		[]apigateway.PutMethodResponseInput{{StatusCode: aws.String("200"),
			ResponseParameters: map[string]bool{"method.response.header.Access-Control-Allow-Origin": false}},
			{StatusCode: aws.String("500")}},
		[]apigateway.PutIntegrationResponseInput{{StatusCode: aws.String("200"),
			ResponseParameters: map[string]string{"method.response.header.Access-Control-Allow-Origin": "'*'"},
			ResponseTemplates:  map[string]string{"application/json": `{"ok":true}`}},
			{StatusCode: aws.String("500"), SelectionPattern: aws.String(`5\d{2}`)}})
	b.method(files, "ANY", false, map[string]bool{"method.request.path.proxy": true},
		apigateway.PutIntegrationInput{Type: types.IntegrationTypeHttpProxy, IntegrationHttpMethod: aws.String("ANY"),
			Uri: aws.String("http://files.example/{proxy}"), RequestParameters: map[string]string{"integration.request.path.proxy": "method.request.path.proxy"}},
		nil, nil)
	call(e.c.PutGatewayResponse(e.ctx, &apigateway.PutGatewayResponseInput{RestApiId: api.Id, ResponseType: types.GatewayResponseTypeDefault4xx,
		ResponseParameters: map[string]string{"gatewayresponse.header.Access-Control-Allow-Origin": "method.request.header.Origin"}})).must(t)
	call(e.c.PutGatewayResponse(e.ctx, &apigateway.PutGatewayResponseInput{RestApiId: api.Id, ResponseType: types.GatewayResponseTypeThrottled,
		StatusCode: aws.String("429"), ResponseTemplates: map[string]string{"application/json": `{"message":$context.error.messageString}`}})).must(t)
	call(e.c.CreateDeployment(e.ctx, &apigateway.CreateDeploymentInput{RestApiId: api.Id, StageName: aws.String("prod")})).must(t)
	return *api.Id
}

// gatewayShape is the gateway responses put on an API, as JSON.
func gatewayShape(t *testing.T, e *env, apiID string) string {
	t.Helper()
	grs := call(e.c.GetGatewayResponses(e.ctx, &apigateway.GetGatewayResponsesInput{RestApiId: &apiID})).must(t)
	put := map[types.GatewayResponseType]types.GatewayResponse{}
	for _, g := range grs.Items {
		if !g.DefaultResponse {
			put[g.ResponseType] = g
		}
	}
	b, _ := json.Marshal(put)
	return string(b)
}

func TestAnAPIBuiltCallByCallExportsAndImportsAsItself(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	apiID := buildPetstore(t, e)
	want, wantGR := apiShape(t, e, apiID), gatewayShape(t, e, apiID)
	for _, exportType := range []string{"oas30", "swagger"} {
		for _, accept := range []string{"application/json", "application/yaml"} {
			body, _ := e.export(apiID, "prod", exportType, accept)
			again, err := e.c.ImportRestApi(e.ctx, &apigateway.ImportRestApiInput{Body: body, FailOnWarnings: true})
			if err != nil {
				t.Errorf("%s %s: import(export(api)): %v\n%s", exportType, accept, err, body)
				continue
			}
			if got := apiShape(t, e, *again.Id); got != want {
				t.Errorf("%s %s: import(export(api)) differs:\n got %s\nwant %s\n%s", exportType, accept, got, want, body)
			}
			if got := gatewayShape(t, e, *again.Id); got != wantGR {
				t.Errorf("%s %s: gateway responses differ:\n got %s\nwant %s", exportType, accept, got, wantGR)
			}
			if aws.ToString(again.Name) != "built" || aws.ToString(again.Description) != "built call by call" {
				t.Errorf("%s %s: got name %q description %q", exportType, accept, aws.ToString(again.Name), aws.ToString(again.Description))
			}
		}
	}
}

// What an export could not carry back is refused when it is written.
func TestWritesAnExportCouldNotCarryAreRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	apiID, petsID := e.api("pets", "")
	id, res, get := aws.String(apiID), aws.String(petsID), aws.String("GET")
	_, err := e.c.PutMethodResponse(e.ctx, &apigateway.PutMethodResponseInput{RestApiId: id, ResourceId: res, HttpMethod: get, StatusCode: aws.String("200"),
		ResponseModels: map[string]string{"application/json": "My Model"}})
	wantBadRequest(t, err, "My Model")
	_, err = e.c.PutMethod(e.ctx, &apigateway.PutMethodInput{RestApiId: id, ResourceId: res, HttpMethod: aws.String("POST"),
		AuthorizationType: aws.String("NONE"), RequestParameters: map[string]bool{"method.request.path.nope": true}})
	wantBadRequest(t, err, "method.request.path.nope")
	_, err = e.c.UpdateMethod(e.ctx, &apigateway.UpdateMethodInput{RestApiId: id, ResourceId: res, HttpMethod: get,
		PatchOperations: []types.PatchOperation{op(types.OpAdd, "/requestParameters/method.request.path.nope", "true")}})
	wantBadRequest(t, err, "method.request.path.nope")
	call(e.c.PutIntegrationResponse(e.ctx, &apigateway.PutIntegrationResponseInput{RestApiId: id, ResourceId: res, HttpMethod: get,
		StatusCode: aws.String("400"), SelectionPattern: aws.String("4\\d{2}")})).must(t)
	_, err = e.c.PutIntegrationResponse(e.ctx, &apigateway.PutIntegrationResponseInput{RestApiId: id, ResourceId: res, HttpMethod: get,
		StatusCode: aws.String("404"), SelectionPattern: aws.String("4\\d{2}")})
	wantBadRequest(t, err, "selectionPattern")

	// A path change keeps every method's path parameters in the path.
	pet := call(e.c.CreateResource(e.ctx, &apigateway.CreateResourceInput{RestApiId: id, ParentId: res, PathPart: aws.String("{petId}")})).must(t)
	call(e.c.PutMethod(e.ctx, &apigateway.PutMethodInput{RestApiId: id, ResourceId: pet.Id, HttpMethod: get,
		AuthorizationType: aws.String("NONE"), RequestParameters: map[string]bool{"method.request.path.petId": true}})).must(t)
	_, err = e.c.UpdateResource(e.ctx, &apigateway.UpdateResourceInput{RestApiId: id, ResourceId: pet.Id,
		PatchOperations: []types.PatchOperation{op(types.OpReplace, "/pathPart", "{id}")}})
	wantBadRequest(t, err, "method.request.path.petId")
	_, err = e.c.UpdateResource(e.ctx, &apigateway.UpdateResourceInput{RestApiId: id, ResourceId: res,
		PatchOperations: []types.PatchOperation{op(types.OpReplace, "/pathPart", "animals")}})
	if err != nil {
		t.Fatalf("renaming /pets, which no path parameter names: %v", err)
	}
}
