package openapi

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"tollgate/openapi/openapitest"
	"tollgate/plans"
)

func mustImport(t *testing.T, doc []byte) (*plans.ApiDefinition, []string) {
	t.Helper()
	def, warnings, err := Import(doc, ImportOptions{})
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	return def, warnings
}

// method returns the method verb of path in def, failing when absent.
func method(t *testing.T, def *plans.ApiDefinition, path, verb string) *plans.Method {
	t.Helper()
	for _, r := range def.Resources {
		if r.Path == path && r.ResourceMethods[verb] != nil {
			return r.ResourceMethods[verb]
		}
	}
	t.Fatalf("no %s %s in %+v", verb, path, def.Resources)
	return nil
}

func TestImportAWSDocument(t *testing.T) {
	doc, err := os.ReadFile("testdata/petstore-aws.yaml")
	if err != nil {
		t.Fatal(err)
	}
	def, warnings := mustImport(t, doc)
	if def.Name != "petstore" || def.Description != "Pets behind tollgate" || def.ApiKeySource != "HEADER" {
		t.Errorf("api: got %q %q %q", def.Name, def.Description, def.ApiKeySource)
	}
	var paths []string
	for _, r := range def.Resources {
		paths = append(paths, r.Path)
	}
	if want := []string{"/", "/files", "/files/{proxy+}", "/lambda", "/pets", "/pets/{petId}"}; !slices.Equal(paths, want) {
		t.Errorf("resources: got %v, want %v", paths, want)
	}
	get := method(t, def, "/pets", "GET")
	in := get.MethodIntegration
	if !get.APIKeyRequired || in.Type != plans.IntegrationHTTPProxy || in.URI != "http://backend.example:8080/pets" || in.TimeoutInMillis != 5000 ||
		!slices.Equal(in.CacheKeyParameters, []string{"method.request.querystring.limit"}) || in.RequestParameters["integration.request.header.X-Tenant"] != "'acme'" {
		t.Errorf("GET /pets: got %+v with %+v", get, in)
	}
	if mr := get.MethodResponses["200"]; mr == nil || mr.ResponseModels["application/json"] != "Pets" {
		t.Errorf("GET /pets method response: got %+v, want 200 with model Pets", get.MethodResponses)
	}
	opt := method(t, def, "/pets", "OPTIONS")
	if opt.APIKeyRequired || opt.MethodIntegration.Type != plans.IntegrationMock || opt.MethodIntegration.MockStatus() != "200" ||
		opt.MethodIntegration.SelectResponse("200").ResponseParameters["method.response.header.Access-Control-Allow-Methods"] != "'GET,OPTIONS'" {
		t.Errorf("OPTIONS /pets: got %+v", opt.MethodIntegration)
	}
	if pet := method(t, def, "/pets/{petId}", "GET"); !pet.RequestParameters["method.request.path.petId"] {
		t.Errorf("GET /pets/{petId}: got parameters %v, want the path parameter declared", pet.RequestParameters)
	}
	if anyM := method(t, def, "/files/{proxy+}", "ANY"); anyM.MethodIntegration == nil || anyM.APIKeyRequired {
		t.Errorf("ANY /files/{proxy+}: got %+v", anyM)
	}
	if lambda := method(t, def, "/lambda", "POST"); lambda.MethodIntegration != nil {
		t.Errorf("POST /lambda: got integration %+v, want none (aws_proxy is skipped)", lambda.MethodIntegration)
	}
	if gr := def.GatewayResponses; len(gr) != 2 || gr["THROTTLED"].StatusCode != "429" || gr["DEFAULT_4XX"].ResponseParameters == nil {
		t.Errorf("gateway responses: got %+v", gr)
	}
	for _, want := range []string{"x-amazon-apigateway-binary-media-types", "WAF_FILTERED", "credentials", "aws_proxy"} {
		if !slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, want) }) {
			t.Errorf("warnings %q: want one naming %s", warnings, want)
		}
	}
}

func TestImportErrorsNameTheLocation(t *testing.T) {
	base := `{"openapi":"3.0.1","info":{"title":"t","version":"1"},%s}`
	cases := []struct{ name, doc, loc string }{
		{"bad uri", `"paths":{"/pets":{"get":{"responses":{"200":{"description":"ok"}},"x-amazon-apigateway-integration":{"type":"http_proxy","uri":"ftp://x"}}}}`,
			"paths./pets.get.x-amazon-apigateway-integration.uri"},
		{"uri of the wrong type", `"paths":{"/pets":{"get":{"responses":{"200":{"description":"ok"}},"x-amazon-apigateway-integration":{"type":"http_proxy","uri":5}}}}`,
			"paths./pets.get.x-amazon-apigateway-integration.uri"},
		{"timeout", `"paths":{"/pets":{"get":{"responses":{"200":{"description":"ok"}},"x-amazon-apigateway-integration":{"type":"mock","timeoutInMillis":40}}}}`,
			"paths./pets.get.x-amazon-apigateway-integration.timeoutInMillis"},
		{"no type", `"paths":{"/pets":{"get":{"responses":{"200":{"description":"ok"}},"x-amazon-apigateway-integration":{"uri":"http://x"}}}}`,
			"paths./pets.get.x-amazon-apigateway-integration.type"},
		{"bad path part", `"paths":{"/pe ts":{"get":{"responses":{"200":{"description":"ok"}}}}}`, "paths./pe ts"},
		{"child of greedy", `"paths":{"/a/{p+}/b":{"get":{"responses":{"200":{"description":"ok"}}}}}`, "paths./a/{p+}/b"},
		{"cognito", `"paths":{"/pets":{"get":{"responses":{"200":{"description":"ok"}},"security":[{"cog":[]}]}}},"components":{"securitySchemes":{"cog":{"type":"apiKey","name":"Authorization","in":"header","x-amazon-apigateway-authtype":"cognito_user_pools"}}}`,
			"paths./pets.get.security"},
		{"x-api-key scheme with an AWS authorizer type", `"paths":{"/pets":{"get":{"responses":{"200":{"description":"ok"}},"security":[{"k":[]}]}}},"components":{"securitySchemes":{"k":{"type":"apiKey","name":"x-api-key","in":"header","x-amazon-apigateway-authtype":"custom"}}}`,
			"paths./pets.get.security"},
		{"bad gateway response", `"paths":{},"x-amazon-apigateway-gateway-responses":{"THROTTLED":{"statusCode":"999"}}`,
			"x-amazon-apigateway-gateway-responses.THROTTLED.statusCode"},
		{"malformed any-method", `"paths":{"/a":{"x-amazon-apigateway-any-method":{"parameters":5}}}`, "paths./a.x-amazon-apigateway-any-method"},
		{"undefined schema", `"paths":{"/pets":{"get":{"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Nope"}}}}}}}}`, "body"},
		{"ref chain", `"paths":{},"components":{"schemas":{` + chain(MaxRefChain+2) + `}}`, "components.schemas.S0"},
		{"any-method not an object", `"paths":{"/a":{"x-amazon-apigateway-any-method":"GET"}}`, "paths./a.x-amazon-apigateway-any-method"},
		{"no title", `"paths":{}`, ""},
	}
	for _, tc := range cases {
		doc := strings.Replace(base, "%s", tc.doc, 1)
		if tc.name == "no title" {
			doc = `{"openapi":"3.0.1","info":{"title":"","version":"1"},"paths":{}}`
		}
		_, _, err := Import([]byte(doc), ImportOptions{})
		var pe *plans.Error
		if !errorsAsPlans(err, &pe) || pe.Kind != plans.KindInvalid {
			t.Errorf("%s: got %v, want a 400", tc.name, err)
			continue
		}
		if tc.loc != "" && pe.Field != tc.loc {
			t.Errorf("%s: got location %q (%s), want %q", tc.name, pe.Field, pe.Message, tc.loc)
		}
	}
	swagger := `{"swagger":"2.0","info":{"title":"t","version":"1"},"paths":{"/a":{"x-amazon-apigateway-any-method":{"parameters":5}}}}`
	if _, _, err := Import([]byte(swagger), ImportOptions{}); plans.ErrorKind(err) != plans.KindInvalid || !strings.HasPrefix(plans.ErrorMessage(err), "paths./a.x-amazon-apigateway-any-method") {
		t.Errorf("swagger malformed any-method: got %v, want a 400 naming paths./a.x-amazon-apigateway-any-method", err)
	}
	for _, bad := range []string{"", "{", "openapi: 3.1.0\ninfo: {title: x, version: 1}\npaths: {}", "swagger: '1.2'", "[1,2]"} {
		if _, _, err := Import([]byte(bad), ImportOptions{}); plans.ErrorKind(err) != plans.KindInvalid {
			t.Errorf("%q: got %v, want a 400", bad, err)
		}
	}
}

func errorsAsPlans(err error, pe **plans.Error) bool {
	if err == nil {
		return false
	}
	e, ok := err.(*plans.Error)
	*pe = e
	return ok
}

// TestExportRoundTrips imports the AWS document, exports it in every
// format and imports the export again: the same definition.
func TestExportRoundTrips(t *testing.T) {
	doc, err := os.ReadFile("testdata/petstore-aws.yaml")
	if err != nil {
		t.Fatal(err)
	}
	def, _ := mustImport(t, doc)
	for _, opts := range []ExportOptions{
		{Extensions: true, Stage: "prod"},
		{Extensions: true, YAML: true, Stage: "prod"},
		{Extensions: true, Swagger: true},
		{Extensions: true, Swagger: true, YAML: true},
	} {
		out, _, err := Export(def, opts)
		if err != nil {
			t.Fatalf("%+v: Export: %v", opts, err)
		}
		again, warnings := mustImport(t, out)
		if len(warnings) != 0 {
			t.Errorf("%+v: re-import warnings %q, want none", opts, warnings)
		}
		if !reflect.DeepEqual(openapitest.Normal(def), openapitest.Normal(again)) {
			t.Errorf("%+v: round trip changed the API:\n got %s\nwant %s\ndocument:\n%s", opts, openapitest.Normal(again), openapitest.Normal(def), out)
		}
	}
}

// TestPlainExportHasNoAWSFields: without extensions the export is a plain
// API description that kin-openapi validates, keeping the API key scheme.
func TestPlainExportHasNoAWSFields(t *testing.T) {
	doc, err := os.ReadFile("testdata/petstore-aws.yaml")
	if err != nil {
		t.Fatal(err)
	}
	def, _ := mustImport(t, doc)
	for _, opts := range []ExportOptions{{}, {Swagger: true}} {
		out, _, err := Export(def, opts)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(out), "x-amazon-apigateway") || !strings.Contains(string(out), "x-api-key") {
			t.Errorf("%+v: got %s, want no AWS extensions and the x-api-key scheme", opts, out)
		}
		again, _ := mustImport(t, out)
		if m := method(t, again, "/pets", "GET"); !m.APIKeyRequired || m.MethodIntegration != nil {
			t.Errorf("%+v: re-import of the plain export: got %+v, want the key required and no integration", opts, m)
		}
	}
}
