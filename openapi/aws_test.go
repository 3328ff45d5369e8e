package openapi

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"tollgate/plans"
)

// oas3 wraps the members of an OpenAPI 3 document's root.
func oas3(members string) []byte {
	return []byte(`{"openapi":"3.0.1","info":{"title":"t","version":"1"},` + members + `}`)
}

// swagger2 wraps the members of a Swagger 2.0 document's root.
func swagger2(members string) []byte {
	return []byte(`{"swagger":"2.0","info":{"title":"t","version":"1"},` + members + `}`)
}

// chain returns n component schemas S0 … S(n-1), each only a $ref to the
// next, the last an object: a chain of n-1 hops.
func chain(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		if i == n-1 {
			fmt.Fprintf(&b, `"S%d":{"type":"object"}`, i)
			continue
		}
		fmt.Fprintf(&b, `"S%d":{"$ref":"#/components/schemas/S%d"}`, i, i+1)
	}
	return b.String()
}

// wantWarnings fails unless warnings has one warning per want, in order,
// each starting with its want (a location).
func wantWarnings(t *testing.T, name string, warnings []string, want ...string) {
	t.Helper()
	ok := len(warnings) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = strings.HasPrefix(warnings[i], want[i]+": ")
	}
	if !ok {
		t.Errorf("%s: got warnings %q, want them at %q in that order", name, warnings, want)
	}
}

// Documents Amazon API Gateway imports are imported, with a warning
// naming the location where tollgate skips something.
func TestImportTakesWhatAPIGatewayTakes(t *testing.T) {
	anyRef := `"paths":{"/a/{proxy+}":{"x-amazon-apigateway-any-method":{"parameters":[{"name":"proxy","in":"path","required":true,"schema":{"type":"string"}}],
		"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Empty"}}}},"404":{"$ref":"#/components/responses/Missing"}},
		"x-amazon-apigateway-integration":{"type":"http_proxy","httpMethod":"ANY","uri":"http://up/{proxy}"}}}},
		"components":{"schemas":{"Empty":{"type":"object"}},"responses":{"Missing":{"description":"none","headers":{"X-Why":{"schema":{"type":"string"}}}}}}`
	anyRef2 := `"paths":{"/a/{proxy+}":{"x-amazon-apigateway-any-method":{"produces":["application/json"],"parameters":[{"name":"proxy","in":"path","required":true,"type":"string"}],
		"responses":{"200":{"description":"ok","schema":{"$ref":"#/definitions/Empty"}},"404":{"$ref":"#/responses/Missing"}},
		"x-amazon-apigateway-integration":{"type":"http_proxy","httpMethod":"ANY","uri":"http://up/{proxy}"}}}},
		"definitions":{"Empty":{"type":"object"}},"responses":{"Missing":{"description":"none","headers":{"X-Why":{"type":"string"}}}}`
	cors := `"paths":{"/{proxy+}":{"options":{"parameters":[{"name":"proxy","in":"path","required":true,%s}],"responses":{"200":{"description":"ok"}},
		"x-amazon-apigateway-integration":{"type":"mock","requestTemplates":{"application/json":"{\"statusCode\": 200}"},
		"responses":{"default":{"statusCode":"200","responseParameters":{"method.response.header.Access-Control-Allow-Origin":"'*'"}}}}}}}`
	cases := []struct {
		name     string
		doc      []byte
		warnings []string
		check    func(*plans.ApiDefinition) string
	}{
		{"no responses", oas3(`"paths":{"/a":{"get":{"x-amazon-apigateway-integration":{"type":"mock"}}}}`), nil, noResponses("/a", "GET")},
		{"empty responses", oas3(`"paths":{"/a":{"get":{"responses":{},"x-amazon-apigateway-integration":{"type":"mock"}}}}`), nil, noResponses("/a", "GET")},
		{"Swagger 2.0 without responses", swagger2(`"paths":{"/a":{"get":{"x-amazon-apigateway-integration":{"type":"mock"}}}}`), nil, noResponses("/a", "GET")},
		{"any-method without responses", oas3(`"paths":{"/a":{"x-amazon-apigateway-any-method":{}}}`), nil, noResponses("/a", "ANY")},
		{"$ref in an any-method", oas3(anyRef), nil, anyWithModel},
		{"$ref in a Swagger 2.0 any-method", swagger2(anyRef2), nil, anyWithModel},
		{"Swagger 2.0 produces at the root", swagger2(`"produces":["application/xml"],"paths":{"/a":{"get":{"responses":{"200":{"description":"ok","schema":{"$ref":"#/definitions/Empty"}}}},
			"x-amazon-apigateway-any-method":{"responses":{"200":{"description":"ok","schema":{"$ref":"#/definitions/Empty"}}}}}},"definitions":{"Empty":{"type":"object"}}`), nil,
			func(def *plans.ApiDefinition) string {
				for _, verb := range []string{"GET", "ANY"} {
					if m := findMethod(def, "/a", verb); fmt.Sprint(m.MethodResponses["200"].ResponseModels) != "map[application/xml:Empty]" {
						return fmt.Sprintf("%s: got models %v, want Empty on application/xml", verb, m.MethodResponses["200"].ResponseModels)
					}
				}
				return ""
			}},
		{"CORS on {proxy+} declaring proxy", oas3(fmt.Sprintf(cors, `"schema":{"type":"string"}`)), nil, corsOnProxy},
		{"Swagger 2.0 CORS on {proxy+} declaring proxy", swagger2(fmt.Sprintf(cors, `"type":"string"`)), nil, corsOnProxy},
		{"a path parameter the path lacks", oas3(`"paths":{"/a":{"get":{"parameters":[{"name":"q","in":"query","schema":{"type":"string"}},{"name":"id","in":"path","required":true,"schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}}}`),
			[]string{"paths./a.get.parameters[1]"}, func(def *plans.ApiDefinition) string {
				if m := findMethod(def, "/a", "GET"); m == nil || len(m.RequestParameters) != 1 || m.RequestParameters["method.request.path.id"] {
					return fmt.Sprintf("got %+v, want only the query parameter", m)
				}
				return ""
			}},
		{"a mapping written as a YAML boolean", []byte("openapi: 3.0.1\ninfo: {title: t, version: '1'}\npaths:\n  /a:\n    get:\n      x-amazon-apigateway-integration:\n" +
			"        type: http_proxy\n        uri: http://up/a\n        requestParameters:\n          integration.request.header.x: true\n          integration.request.header.y: \"'yes'\"\n"),
			[]string{"paths./a.get.x-amazon-apigateway-integration.requestParameters.integration.request.header.x"}, func(def *plans.ApiDefinition) string {
				if in := findMethod(def, "/a", "GET").MethodIntegration; len(in.RequestParameters) != 1 || in.RequestParameters["integration.request.header.y"] != "'yes'" {
					return fmt.Sprintf("got %v, want only header y", in.RequestParameters)
				}
				return ""
			}},
		{"gateway response mappings tollgate cannot honour", oas3(`"paths":{},"x-amazon-apigateway-gateway-responses":{"DEFAULT_4XX":{"statusCode":"400","responseParameters":{
			"gatewayresponse.header.Access-Control-Allow-Origin":"method.request.header.Origin","gatewayresponse.header.X-All":"method.request.multivalueheader.Origin",
			"gatewayresponse.header.Retry-After":"'9'","gatewayresponse.header.X-Ctx":"context.requestId"}}}`),
			[]string{"x-amazon-apigateway-gateway-responses.DEFAULT_4XX.responseParameters.gatewayresponse.header.X-All",
				"x-amazon-apigateway-gateway-responses.DEFAULT_4XX.responseParameters.gatewayresponse.header.Retry-After",
				"x-amazon-apigateway-gateway-responses.DEFAULT_4XX.responseParameters.gatewayresponse.header.X-Ctx"},
			func(def *plans.ApiDefinition) string {
				if gr := def.GatewayResponses["DEFAULT_4XX"]; len(gr.ResponseParameters) != 1 || gr.StatusCode != "400" {
					return fmt.Sprintf("got %+v, want the Origin mapping kept", gr)
				}
				return ""
			}},
		{"integration parts tollgate cannot honour", oas3(`"paths":{"/a":{"get":{"x-amazon-apigateway-integration":{"type":"mock","cacheKeyParameters":["method.request.multivalueheader.x"],
			"requestParameters":{"integration.request.header.Host":"'evil'","integration.request.header.X-Id":"context.requestId"},
			"responses":{"(?!4)\\d+":{"statusCode":"200"},"default":{"statusCode":"200","responseParameters":{"method.response.header.x-amzn-RequestId":"'x'","method.response.header.X-Ok":"'ok'"}},"5\\d{2}":{"statusCode":200}}}}}}`),
			[]string{"paths./a.get.x-amazon-apigateway-integration.cacheKeyParameters[0]",
				"paths./a.get.x-amazon-apigateway-integration.requestParameters.integration.request.header.Host",
				"paths./a.get.x-amazon-apigateway-integration.requestParameters.integration.request.header.X-Id",
				"paths./a.get.x-amazon-apigateway-integration.responses.(?!4)\\d+",
				"paths./a.get.x-amazon-apigateway-integration.responses.default.responseParameters.method.response.header.x-amzn-RequestId",
				"paths./a.get.x-amazon-apigateway-integration.responses.5\\d{2}.statusCode"},
			func(def *plans.ApiDefinition) string {
				in := findMethod(def, "/a", "GET").MethodIntegration
				if ir := in.IntegrationResponses["200"]; len(in.IntegrationResponses) != 1 || ir.SelectionPattern != "" || len(ir.ResponseParameters) != 1 ||
					len(in.RequestParameters) != 1 || in.RequestParameters["integration.request.header.X-Id"] != "context.requestId" {
					return fmt.Sprintf("got %+v, want the default response with X-Ok and X-Id kept (stored, not evaluated)", in)
				}
				return ""
			}},
		{"templates with what the gateway serves as written", oas3(`"paths":{"/a":{"options":{"x-amazon-apigateway-integration":{"type":"mock","responses":{"default":{"statusCode":"200",
			"responseParameters":{"method.response.header.Access-Control-Allow-Origin":"integration.response.header.Origin"},
			"responseTemplates":{"application/json":"#set($o = $input.params('Origin')){\"o\":\"$o\",\"s\":\"$context.stage\",\"c\":\"$context.authorizer.sub\"}"}}}}}}},
			"x-amazon-apigateway-gateway-responses":{"DEFAULT_5XX":{"responseTemplates":{"application/json":"{\"m\":$context.error.messageString,\"w\":\"$context.wafResponseCode\"}"}}}`),
			[]string{"paths./a.options.x-amazon-apigateway-integration.responses.default.responseParameters.method.response.header.Access-Control-Allow-Origin",
				"paths./a.options.x-amazon-apigateway-integration.responses.default.responseTemplates.application/json",
				"paths./a.options.x-amazon-apigateway-integration.responses.default.responseTemplates.application/json",
				"x-amazon-apigateway-gateway-responses.DEFAULT_5XX.responseTemplates.application/json"}, nil},
		{"a VPC link and a timeout over 29 s", oas3(`"paths":{"/a":{"get":{"x-amazon-apigateway-integration":{"type":"http_proxy","uri":"http://nlb.internal/a","connectionType":"VPC_LINK","connectionId":"abc"}},
			"put":{"x-amazon-apigateway-integration":{"type":"http_proxy","uri":"http://up/a","timeoutInMillis":60000}}}}`),
			[]string{"paths./a.get.x-amazon-apigateway-integration.connectionType", "paths./a.get.x-amazon-apigateway-integration.connectionId",
				"paths./a.put.x-amazon-apigateway-integration.timeoutInMillis"},
			func(def *plans.ApiDefinition) string {
				if findMethod(def, "/a", "GET").MethodIntegration != nil || findMethod(def, "/a", "PUT").MethodIntegration.TimeoutInMillis != plans.MaxTimeoutMillis {
					return "want GET without an integration and PUT's timeout at 29000"
				}
				return ""
			}},
		{"root-level security", oas3(`"security":[{"k":[]}],"paths":{"/a":{"get":{}},"/b":{"get":{"security":[{"k":[]}]}}},
			"components":{"securitySchemes":{"k":{"type":"apiKey","name":"x-api-key","in":"header"}}}`),
			[]string{"security"}, func(def *plans.ApiDefinition) string {
				if findMethod(def, "/a", "GET").APIKeyRequired || !findMethod(def, "/b", "GET").APIKeyRequired {
					return "want only /b, whose operation declares it, to require a key"
				}
				return ""
			}},
		{"root-level security naming a Cognito authorizer", oas3(`"security":[{"c":[]}],"paths":{"/a":{"get":{}}},
			"components":{"securitySchemes":{"c":{"type":"apiKey","name":"Authorization","in":"header","x-amazon-apigateway-authtype":"cognito_user_pools"}}}`),
			[]string{"security"}, nil},
		{"operations secured by authorizers and AWS_IAM, imported closed", swagger2(`"paths":{"/a":{
			"get":{"security":[{"tok":[]}]},
			"post":{"security":[{"pool":["email"]},{"api_key":[]}]},
			"put":{"security":[{"sigv4":[]}]},
			"delete":{"security":[{"req":[],"api_key":[]}]}}},
			"securityDefinitions":{"api_key":{"type":"apiKey","name":"x-api-key","in":"header"},
			"tok":{"type":"apiKey","name":"Authorization","in":"header","x-amazon-apigateway-authtype":"custom",
				"x-amazon-apigateway-authorizer":{"type":"token","authorizerUri":"arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/arn:aws:lambda:us-east-1:1:function:auth/invocations","authorizerResultTtlInSeconds":60}},
			"req":{"type":"apiKey","name":"Unused","in":"header","x-amazon-apigateway-authtype":"custom",
				"x-amazon-apigateway-authorizer":{"type":"request","identitySource":"method.request.header.Auth, method.request.querystring.t","authorizerUri":"arn:aws:lambda:req"}},
			"pool":{"type":"apiKey","name":"Authorization","in":"header","x-amazon-apigateway-authtype":"cognito_user_pools",
				"x-amazon-apigateway-authorizer":{"type":"cognito_user_pools","providerARNs":["arn:aws:cognito-idp:us-east-1:1:userpool/us-east-1_X"]}},
			"sigv4":{"type":"apiKey","name":"Authorization","in":"header","x-amazon-apigateway-authtype":"awsSigv4"},
			"spare":{"type":"apiKey","name":"X-Token","in":"header","x-amazon-apigateway-authorizer":{"type":"TOKEN","authorizerUri":"arn:aws:lambda:spare"}}}`),
			[]string{"paths./a.get.security", "paths./a.post.security", "paths./a.put.security", "paths./a.delete.security"},
			func(def *plans.ApiDefinition) string {
				var names []string
				for _, a := range def.Authorizers {
					names = append(names, a.Name+":"+a.Type+":"+a.IdentitySource)
				}
				if got := strings.Join(names, " "); got != "pool:COGNITO_USER_POOLS: req:REQUEST:method.request.header.Auth, method.request.querystring.t "+
					"spare:TOKEN:method.request.header.X-Token tok:TOKEN:method.request.header.Authorization" {
					return "authorizers " + got
				}
				get, post, put, del := findMethod(def, "/a", "GET"), findMethod(def, "/a", "POST"), findMethod(def, "/a", "PUT"), findMethod(def, "/a", "DELETE")
				switch {
				case get.AuthorizationType != plans.AuthorizationCustom || get.AuthorizerID != "tok" || get.APIKeyRequired:
					return fmt.Sprintf("GET %+v, want CUSTOM tok", get)
				case post.AuthorizationType != plans.AuthorizationCognito || post.AuthorizerID != "pool" || !post.APIKeyRequired ||
					!slices.Equal(post.AuthorizationScopes, []string{"email"}):
					return fmt.Sprintf("POST %+v, want COGNITO_USER_POOLS pool with scope email and a key", post)
				case put.AuthorizationType != plans.AuthorizationIAM || put.AuthorizerID != "":
					return fmt.Sprintf("PUT %+v, want AWS_IAM", put)
				case del.AuthorizationType != plans.AuthorizationCustom || del.AuthorizerID != "req" || !del.APIKeyRequired:
					return fmt.Sprintf("DELETE %+v, want CUSTOM req and a key", del)
				case !get.Closed() || !post.Closed() || !put.Closed() || !del.Closed():
					return "want every method closed"
				}
				return ""
			}},
		{"OAuth 2, HTTP basic and another header's apiKey ignored, as AWS ignores them", oas3(`"paths":{"/a":{
			"get":{"security":[{"oauth":["read"]}],"x-amazon-apigateway-integration":{"type":"mock"}},
			"post":{"security":[{"basic":[]},{"key":[]}],"x-amazon-apigateway-integration":{"type":"mock"}},
			"put":{"security":[{"other":[]}],"x-amazon-apigateway-integration":{"type":"mock"}}}},
			"components":{"securitySchemes":{"oauth":{"type":"oauth2","flows":{"clientCredentials":{"tokenUrl":"https://id.example.com/token","scopes":{"read":"read"}}}},
			"basic":{"type":"http","scheme":"basic"},"other":{"type":"apiKey","name":"X-Other","in":"header"},"key":{"type":"apiKey","name":"x-api-key","in":"header"}}}`),
			[]string{"paths./a.get.security", "paths./a.post.security", "paths./a.put.security"},
			func(def *plans.ApiDefinition) string {
				get, post, put := findMethod(def, "/a", "GET"), findMethod(def, "/a", "POST"), findMethod(def, "/a", "PUT")
				switch {
				case get.Closed() || get.APIKeyRequired || put.Closed() || put.APIKeyRequired:
					return fmt.Sprintf("GET %+v, PUT %+v: want open, no key", get, put)
				case post.Closed() || !post.APIKeyRequired:
					return fmt.Sprintf("POST %+v: want open with a key", post)
				case len(def.Authorizers) != 0:
					return fmt.Sprintf("authorizers %+v, want none", def.Authorizers)
				}
				return ""
			}},
		{"invalid by OpenAPI's rules, read as AWS reads it", oas3(`"paths":{"/a":{"get":{"operationId":"x","responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"type":"nonsense","pattern":"("}}}}}},"post":{"operationId":"x"}}}`),
			nil, noResponses("/a", "POST")},
	}
	for _, tc := range cases {
		def, warnings, err := Import(tc.doc, ImportOptions{})
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		wantWarnings(t, tc.name, warnings, tc.warnings...)
		if tc.check != nil {
			if msg := tc.check(def); msg != "" {
				t.Errorf("%s: %s", tc.name, msg)
			}
		}
	}
}

func findMethod(def *plans.ApiDefinition, path, verb string) *plans.Method {
	for _, r := range def.Resources {
		if r.Path == path {
			return r.ResourceMethods[verb]
		}
	}
	return nil
}

func noResponses(path, verb string) func(*plans.ApiDefinition) string {
	return func(def *plans.ApiDefinition) string {
		if m := findMethod(def, path, verb); m == nil || len(m.MethodResponses) != 0 {
			return fmt.Sprintf("%s %s: got %+v, want the method without method responses", verb, path, m)
		}
		return ""
	}
}

func anyWithModel(def *plans.ApiDefinition) string {
	m := findMethod(def, "/a/{proxy+}", "ANY")
	if m == nil || m.MethodResponses["200"].ResponseModels["application/json"] != "Empty" ||
		m.MethodResponses["404"] == nil || len(m.MethodResponses["404"].ResponseParameters) != 1 || !m.RequestParameters["method.request.path.proxy"] {
		return fmt.Sprintf("got %+v, want model Empty on 200, the referenced 404 with X-Why and the proxy parameter", m)
	}
	return ""
}

func corsOnProxy(def *plans.ApiDefinition) string {
	m := findMethod(def, "/{proxy+}", "OPTIONS")
	if m == nil || !m.RequestParameters["method.request.path.proxy"] || len(m.RequestParameters) != 1 ||
		m.MethodIntegration.SelectResponse("200").ResponseParameters["method.response.header.Access-Control-Allow-Origin"] != "'*'" {
		return fmt.Sprintf("got %+v, want the MOCK with its proxy parameter", m)
	}
	return ""
}

// Warnings come in the order of their locations in the document, not in
// the order the importer happens to visit them.
func TestImportWarningsAreInDocumentOrder(t *testing.T) {
	doc := []byte(`openapi: 3.0.1
info: {title: t, version: '1'}
x-amazon-apigateway-binary-media-types: [image/png]
paths:
  /zebra:
    get:
      x-amazon-apigateway-request-validator: all
      x-amazon-apigateway-integration: {type: mock, credentials: x, tlsConfig: {}}
  /apple:
    trace: {responses: {'200': {description: ok}}}
    post:
      parameters: [{name: c, in: cookie}]
x-amazon-apigateway-gateway-responses:
  WAF_FILTERED: {statusCode: '403'}
security: [{k: []}]
components:
  securitySchemes: {k: {type: apiKey, name: x-api-key, in: header}}
`)
	_, warnings, err := Import(doc, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantWarnings(t, "document order", warnings,
		"x-amazon-apigateway-binary-media-types",
		"paths./zebra.get.x-amazon-apigateway-request-validator",
		"paths./zebra.get.x-amazon-apigateway-integration.credentials",
		"paths./zebra.get.x-amazon-apigateway-integration.tlsConfig",
		"paths./apple",
		"paths./apple.post.parameters[0]",
		"x-amazon-apigateway-gateway-responses.WAF_FILTERED",
		"security")
}

// The basepath option places the paths as API Gateway's does, for a
// Swagger 2.0 basePath and for an OpenAPI 3 server's basePath variable or
// URL path.
func TestImportBasePath(t *testing.T) {
	paths := `"paths":{"/e":{"get":{}},"/f":{"get":{}}}`
	docs := map[string][]byte{
		"Swagger 2.0 basePath":     swagger2(`"basePath":"/a/b/c",` + paths),
		"server variable basePath": oas3(`"servers":[{"url":"https://x.example/{stage}","variables":{"stage":{"default":"z"}}},{"url":"https://{h}/{basePath}","variables":{"h":{"default":"x"},"basePath":{"default":"/a/b/c"}}}],` + paths),
		"server URL path":          oas3(`"servers":[{"url":"https://{host}/a/b/c","variables":{"host":{"default":"x.example"}}}],` + paths),
	}
	want := map[string][]string{
		"":              {"/", "/e", "/f"},
		BasePathIgnore:  {"/", "/e", "/f"},
		BasePathPrepend: {"/", "/a", "/a/b", "/a/b/c", "/a/b/c/e", "/a/b/c/f"},
		BasePathSplit:   {"/", "/b", "/b/c", "/b/c/e", "/b/c/f"},
	}
	for name, doc := range docs {
		for mode, paths := range want {
			def, _, err := Import(doc, ImportOptions{BasePath: mode})
			if err != nil {
				t.Errorf("%s, basepath %q: %v", name, mode, err)
				continue
			}
			var got []string
			for _, r := range def.Resources {
				got = append(got, r.Path)
			}
			if !slices.Equal(got, paths) {
				t.Errorf("%s, basepath %q: got %v, want %v", name, mode, got, paths)
			}
			if mode != "" && findMethod(def, paths[len(paths)-1], "GET") == nil {
				t.Errorf("%s, basepath %q: no GET on %s", name, mode, paths[len(paths)-1])
			}
		}
	}
	if _, _, err := Import(oas3(paths), ImportOptions{BasePath: "strip"}); plans.ErrorKind(err) != plans.KindInvalid || !strings.Contains(plans.ErrorMessage(err), "basepath") {
		t.Errorf("basepath strip: got %v, want a 400 naming basepath", err)
	}
	_, _, err := Import(swagger2(`"basePath":"/v1/a b",`+paths), ImportOptions{BasePath: BasePathPrepend})
	if pe := (*plans.Error)(nil); !errorsAsPlans(err, &pe) || pe.Field != "basePath" {
		t.Errorf("a base path part that cannot be a resource: got %v, want a 400 naming basePath", err)
	}
}

// A chain of components that are only $refs costs linear time to check
// and is refused beyond MaxRefChain hops, naming where it starts.
func TestImportRefChainLimit(t *testing.T) {
	if _, _, err := Import(oas3(`"paths":{},"components":{"schemas":{`+chain(MaxRefChain+1)+`}}`), ImportOptions{}); err != nil {
		t.Errorf("a chain of %d hops: %v", MaxRefChain, err)
	}
	for _, doc := range [][]byte{
		oas3(`"paths":{},"components":{"schemas":{` + chain(5000) + `}}`),
		swagger2(`"paths":{},"definitions":{` + strings.ReplaceAll(chain(MaxRefChain+2), "components/schemas", "definitions") + `}`),
	} {
		_, _, err := Import(doc, ImportOptions{})
		if plans.ErrorKind(err) != plans.KindInvalid || !strings.Contains(plans.ErrorMessage(err), fmt.Sprintf("at most %d", MaxRefChain)) ||
			!strings.Contains(plans.ErrorMessage(err), ".S0:") {
			t.Errorf("got %v, want a 400 naming the chain's start S0 and the limit", err)
		}
	}
}
