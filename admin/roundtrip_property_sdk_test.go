package admin_test

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"
	"go.yaml.in/yaml/v4"

	"tollgate/openapi/openapitest"
	"tollgate/plans"
)

// Random APIs built call by call through the SDK, deployed, exported in
// all four forms and imported again are the same APIs: exactly in OpenAPI
// 3 (every path parameter declared, as an import declares them); in
// Swagger 2.0 up to the models the export warns it cannot carry.
func TestRandomAPIsBuiltCallByCallSurviveExportAndImport(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	seeds := 4
	if testing.Short() {
		seeds = 1
	}
	for seed := range seeds {
		def := openapitest.Definition(rand.New(rand.NewPCG(uint64(seed), 2500)))
		apiID := buildDefinition(t, e, def)
		built := e.definition(apiID)
		if got, want := openapitest.Normal(built), openapitest.Normal(def); got != want {
			t.Fatalf("seed %d: the API as built differs from its calls:\n got %s\nwant %s", seed, got, want)
		}
		for _, exportType := range []string{"oas30", "swagger"} {
			want, lossy := openapitest.DeclarePathParameters(def), []string(nil)
			if exportType == "swagger" {
				want, lossy = openapitest.SwaggerForm(want)
			}
			for _, accept := range []string{"application/json", "application/yaml"} {
				body, _ := e.export(apiID, "prod", exportType, accept)
				if got := exportWarnings(t, body); !slices.Equal(got, lossy) {
					t.Errorf("seed %d, %s %s: export warnings at %q, want %q", seed, exportType, accept, got, lossy)
				}
				again := call(e.c.ImportRestApi(e.ctx, &apigateway.ImportRestApiInput{Body: body})).must(t)
				if got, want := openapitest.Normal(e.definition(*again.Id)), openapitest.Normal(want); got != want {
					t.Fatalf("seed %d, %s %s: import(export(api)) differs:\n got %s\nwant %s\n%s", seed, exportType, accept, got, want, body)
				}
			}
		}
	}
}

// buildDefinition creates def's API through the SDK, one call per
// authorizer, resource, method, integration, method response,
// integration response and gateway response, and deploys it to prod.
func buildDefinition(t *testing.T, e *env, def *plans.ApiDefinition) string {
	t.Helper()
	api := call(e.c.CreateRestApi(e.ctx, &apigateway.CreateRestApiInput{Name: aws.String(def.Name), Description: aws.String(def.Description)})).must(t)
	b := builder{e: e, apiID: *api.Id, authorizers: map[string]string{}}
	for _, a := range def.Authorizers {
		in := &apigateway.CreateAuthorizerInput{RestApiId: api.Id, Name: aws.String(a.Name), Type: types.AuthorizerType(a.Type),
			ProviderARNs: a.ProviderARNs, AuthorizerResultTtlInSeconds: a.AuthorizerResultTTLInSeconds}
		for field, v := range map[**string]string{&in.AuthType: a.AuthType, &in.AuthorizerUri: a.AuthorizerURI,
			&in.AuthorizerCredentials: a.AuthorizerCredentials, &in.IdentitySource: a.IdentitySource,
			&in.IdentityValidationExpression: a.IdentityValidationExpression} {
			if v != "" {
				*field = aws.String(v)
			}
		}
		b.authorizers[a.Name] = *call(e.c.CreateAuthorizer(e.ctx, in)).must(t).Id
	}
	ids := map[string]string{"/": aws.ToString(api.RootResourceId)}
	for _, r := range def.Resources {
		if r.Path != "/" {
			parent := r.Path[:max(strings.LastIndexByte(r.Path, '/'), 1)]
			ids[r.Path] = b.resource(ids[parent], r.PathPart)
		}
		for verb, m := range r.ResourceMethods {
			b.putMethod(ids[r.Path], verb, m)
		}
	}
	for _, gr := range def.GatewayResponses {
		in := &apigateway.PutGatewayResponseInput{RestApiId: api.Id, ResponseType: types.GatewayResponseType(gr.ResponseType),
			ResponseParameters: gr.ResponseParameters, ResponseTemplates: gr.ResponseTemplates}
		if gr.StatusCode != "" {
			in.StatusCode = aws.String(gr.StatusCode)
		}
		call(e.c.PutGatewayResponse(e.ctx, in)).must(t)
	}
	call(e.c.CreateDeployment(e.ctx, &apigateway.CreateDeploymentInput{RestApiId: api.Id, StageName: aws.String("prod")})).must(t)
	return *api.Id
}

// putMethod puts m (its integration and responses included) on resource res.
func (b builder) putMethod(res, verb string, m *plans.Method) {
	t, id := b.e.t, &b.apiID
	put := &apigateway.PutMethodInput{RestApiId: id, ResourceId: &res, HttpMethod: &verb, AuthorizationType: aws.String(m.AuthorizationType),
		AuthorizationScopes: m.AuthorizationScopes, ApiKeyRequired: m.APIKeyRequired, RequestParameters: m.RequestParameters}
	if m.AuthorizerID != "" {
		put.AuthorizerId = aws.String(b.authorizers[m.AuthorizerID])
	}
	call(b.e.c.PutMethod(b.e.ctx, put)).must(t)
	for _, mr := range m.MethodResponses {
		call(b.e.c.PutMethodResponse(b.e.ctx, &apigateway.PutMethodResponseInput{RestApiId: id, ResourceId: &res, HttpMethod: &verb,
			StatusCode: aws.String(mr.StatusCode), ResponseParameters: mr.ResponseParameters, ResponseModels: mr.ResponseModels})).must(t)
	}
	in := m.MethodIntegration
	if in == nil {
		return
	}
	putIn := &apigateway.PutIntegrationInput{RestApiId: id, ResourceId: &res, HttpMethod: &verb, Type: types.IntegrationType(in.Type),
		TimeoutInMillis: aws.Int32(in.TimeoutInMillis), CacheKeyParameters: in.CacheKeyParameters, RequestParameters: in.RequestParameters,
		RequestTemplates: in.RequestTemplates, ConnectionType: types.ConnectionType(in.ConnectionType)}
	for field, v := range map[**string]string{&putIn.IntegrationHttpMethod: in.HTTPMethod, &putIn.Uri: in.URI,
		&putIn.CacheNamespace: in.CacheNamespace, &putIn.PassthroughBehavior: in.PassthroughBehavior} {
		if v != "" {
			*field = aws.String(v)
		}
	}
	call(b.e.c.PutIntegration(b.e.ctx, putIn)).must(t)
	for _, ir := range in.IntegrationResponses {
		put := &apigateway.PutIntegrationResponseInput{RestApiId: id, ResourceId: &res, HttpMethod: &verb, StatusCode: aws.String(ir.StatusCode),
			ResponseParameters: ir.ResponseParameters, ResponseTemplates: ir.ResponseTemplates, ContentHandling: types.ContentHandlingStrategy(ir.ContentHandling)}
		if ir.SelectionPattern != "" {
			put.SelectionPattern = aws.String(ir.SelectionPattern)
		}
		call(b.e.c.PutIntegrationResponse(b.e.ctx, put)).must(t)
	}
}

// definition reads an API back as a definition: name, description,
// authorizers, resources with methods (GetResources, embed=methods; each
// naming its authorizer by name, as a definition does) and the gateway
// responses put on it.
func (e *env) definition(apiID string) *plans.ApiDefinition {
	e.t.Helper()
	var api plans.RestApi
	e.getJSON("/restapis/"+apiID, &api)
	def := &plans.ApiDefinition{Name: api.Name, Description: api.Description, ApiKeySource: api.ApiKeySource}
	var rs struct{ Item []plans.Resource }
	e.getJSON("/restapis/"+apiID+"/resources?embed=methods&limit=500", &rs)
	var as struct{ Item []plans.Authorizer }
	e.getJSON("/restapis/"+apiID+"/authorizers", &as)
	def.Resources = plans.NameAuthorizers(rs.Item, as.Item)
	if len(as.Item) > 0 {
		def.Authorizers = as.Item
	}
	var grs struct{ Item []plans.GatewayResponse }
	e.getJSON("/restapis/"+apiID+"/gatewayresponses?limit=500", &grs)
	for _, gr := range grs.Item {
		if !gr.DefaultResponse {
			if def.GatewayResponses == nil {
				def.GatewayResponses = map[string]plans.GatewayResponse{}
			}
			def.GatewayResponses[gr.ResponseType] = gr
		}
	}
	return def
}

// getJSON GETs path from the admin and decodes its 200 answer into v.
func (e *env) getJSON(path string, v any) {
	e.t.Helper()
	status, _, body := e.raw("GET", path, "")
	if status != 200 {
		e.t.Fatalf("GET %s: %d %s", path, status, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		e.t.Fatalf("GET %s: %v", path, err)
	}
}

// exportWarnings returns the locations of the warnings an export lists in
// x-tollgate-export-warnings (either form: YAML is a superset of JSON
// here, and JSON is read first).
func exportWarnings(t *testing.T, body []byte) []string {
	t.Helper()
	var doc struct {
		Warnings []string `json:"x-tollgate-export-warnings" yaml:"x-tollgate-export-warnings"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		if err := yaml.Unmarshal(body, &doc); err != nil {
			t.Fatalf("export: %v", err)
		}
	}
	var at []string
	for _, w := range doc.Warnings {
		at = append(at, strings.SplitN(w, ": ", 2)[0])
	}
	return at
}
