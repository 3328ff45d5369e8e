// Package openapitest draws random API definitions for the property tests
// of the OpenAPI import and export: every part an export carries (ANY
// methods, request parameters, method responses with models on several
// media types, greedy paths, HTTP_PROXY and MOCK integrations with every
// field tollgate keeps, CORS MOCKs on {proxy+}, gateway responses, Lambda
// and Cognito authorizers and the methods they or AWS_IAM secure), with
// values chosen to be awkward in JSON and YAML.
package openapitest

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"tollgate/plans"
)

// Definition draws an API definition as the store holds one built call by
// call, ready to deploy: resources by path (the root first, each parent
// before its children, ids empty), methods with integrations normalised
// as PutMethod and PutIntegration store them. Every path parameter of a resource is
// declared by its methods only sometimes (an import declares them all).
func Definition(r *rand.Rand) *plans.ApiDefinition {
	g := &gen{r: r}
	def := &plans.ApiDefinition{Name: g.pick("pets", "Pet Store: v2", "true", "- list", "ünïcode ✓"),
		Description:  g.pick("", "built call by call", "line one\nline two", "#not a comment", "null"),
		ApiKeySource: plans.ApiKeySourceHeader}
	def.Authorizers = g.authorizers()
	g.authorizerList = def.Authorizers
	def.Resources = g.tree()
	for i := range def.Resources {
		res := &def.Resources[i]
		for _, verb := range g.verbs() {
			if res.ResourceMethods == nil {
				res.ResourceMethods = map[string]*plans.Method{}
			}
			res.ResourceMethods[verb] = g.method(res.Path, verb)
		}
		if plans.IsGreedy(res.PathPart) && g.chance(2) {
			if res.ResourceMethods == nil {
				res.ResourceMethods = map[string]*plans.Method{}
			}
			res.ResourceMethods["OPTIONS"] = corsMock(res.Path)
		}
	}
	def.GatewayResponses = g.gatewayResponses()
	return def
}

type gen struct {
	r              *rand.Rand
	params         int                // path parameter names drawn so far
	authorizerList []plans.Authorizer // the API's, for its methods to name
}

func (g *gen) pick(vs ...string) string { return vs[g.r.IntN(len(vs))] }
func (g *gen) chance(n int) bool        { return g.r.IntN(n) == 0 }

// subset returns a random subset of vs, in vs's order, each member
// drawn with a chance of one in n.
func (g *gen) subset(n int, vs ...string) []string {
	var out []string
	for _, v := range vs {
		if g.chance(n) {
			out = append(out, v)
		}
	}
	return out
}

// tree draws a resource tree: literals, one {param} per parent at most,
// {proxy+} leaves, and a CORS-style /{proxy+} under the root half the time.
func (g *gen) tree() []plans.Resource {
	out := []plans.Resource{{Path: "/"}}
	var grow func(path string, depth int)
	grow = func(path string, depth int) {
		if depth > 2 {
			return
		}
		parts := g.subset(3, "pets", "v1", "a.b", "x-y_z", "~tilde", "items")
		switch g.r.IntN(4) {
		case 0:
			g.params++
			parts = append(parts, fmt.Sprintf("{p%d}", g.params))
		case 1:
			if path != "/" || g.chance(2) {
				parts = append(parts, "{proxy+}")
			}
		}
		for _, part := range parts {
			child := plans.JoinPath(path, part)
			out = append(out, plans.Resource{PathPart: part, Path: child})
			if !plans.IsGreedy(part) && g.chance(2) {
				grow(child, depth+1)
			}
		}
	}
	grow("/", 0)
	slices.SortFunc(out, func(a, b plans.Resource) int { return strings.Compare(a.Path, b.Path) })
	return out
}

func (g *gen) verbs() []string {
	if g.chance(3) {
		return nil
	}
	return g.subset(4, "ANY", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")
}

// method draws a method of verb on path.
func (g *gen) method(path, verb string) *plans.Method {
	m := &plans.Method{HTTPMethod: verb, AuthorizationType: "NONE", APIKeyRequired: g.chance(2)}
	g.authorization(m)
	params := map[string]bool{}
	for _, name := range g.subset(2, "limit", "page.size", "q") {
		params["method.request.querystring."+name] = g.chance(2)
	}
	for _, name := range g.subset(3, "X-Trace", "Accept-Language", "x-lower") {
		params["method.request.header."+name] = g.chance(2)
	}
	for _, part := range strings.Split(path, "/") {
		if name := plans.ParamName(part); name != "" && g.chance(2) {
			params["method.request.path."+name] = true
		}
	}
	if len(params) > 0 {
		m.RequestParameters = params
	}
	m.MethodResponses = g.methodResponses()
	m.MethodIntegration = g.integration(path, params)
	return m
}

// authorizers draws an API's authorizers: Lambda TOKEN and REQUEST
// authorizers and a Cognito user pool, with every field AWS models.
func (g *gen) authorizers() []plans.Authorizer {
	var out []plans.Authorizer
	for _, name := range g.subset(3, "cognito-pool", "lambda_request", "lambdaToken", "Wide: auth") {
		a := plans.Authorizer{Name: name, AuthType: g.pick("", "custom", "oauth2")}
		switch name {
		case "cognito-pool":
			a.Type, a.AuthType = plans.AuthorizerCognito, g.pick("", "cognito_user_pools")
			a.ProviderARNs = []string{"arn:aws:cognito-idp:eu-west-1:123456789012:userpool/eu-west-1_AbC"}
			if g.chance(2) {
				a.ProviderARNs = append(a.ProviderARNs, "arn:aws:cognito-idp:us-east-1:123456789012:userpool/us-east-1_Xy")
			}
			a.IdentitySource = g.pick("method.request.header.Authorization", "")
		case "lambda_request":
			a.Type = plans.AuthorizerRequest
			a.IdentitySource = g.pick("method.request.header.Auth, method.request.querystring.tenant", "", "context.sourceIp")
		default:
			a.Type = plans.AuthorizerToken
			a.IdentitySource = g.pick("method.request.header.Authorization", "method.request.header.X-Token")
			a.IdentityValidationExpression = g.pick("", "^Bearer [-0-9a-zA-Z._]*$")
		}
		if a.Type != plans.AuthorizerCognito {
			a.AuthorizerURI = "arn:aws:apigateway:eu-west-1:lambda:path/2015-03-31/functions/arn:aws:lambda:eu-west-1:123456789012:function:" + g.pick("auth", "auth:live") + "/invocations"
			a.AuthorizerCredentials = g.pick("", "arn:aws:iam::123456789012:role/invoke-authorizer")
		}
		if g.chance(2) {
			ttl := int32(g.pick2(0, 3600))
			a.AuthorizerResultTTLInSeconds = &ttl
		}
		a.Normalize()
		out = append(out, a)
	}
	return out
}

// authorization secures m, sometimes, with one of the API's authorizers
// (a user pool with scopes, sometimes) or AWS_IAM.
func (g *gen) authorization(m *plans.Method) {
	switch {
	case g.chance(6):
		m.AuthorizationType = plans.AuthorizationIAM
	case len(g.authorizerList) > 0 && g.chance(3):
		a := g.authorizerList[g.r.IntN(len(g.authorizerList))]
		m.AuthorizationType, m.AuthorizerID = a.MethodAuthorization(), a.Name
		if a.Type == plans.AuthorizerCognito && g.chance(2) {
			m.AuthorizationScopes = g.subset(2, "email", "openid", "https://api.example.com/pets.read")
		}
	}
	m.Normalize()
}

// corsMock is the OPTIONS method API Gateway's console writes to enable
// CORS on path: a MOCK answering 200 with Access-Control-Allow-* headers.
func corsMock(path string) *plans.Method {
	headers := []string{"Access-Control-Allow-Origin", "Access-Control-Allow-Methods", "Access-Control-Allow-Headers"}
	values := []string{"'*'", "'DELETE,GET,HEAD,OPTIONS,PATCH,POST,PUT'", "'Content-Type,Authorization,X-Amz-Date,X-Api-Key,X-Amz-Security-Token'"}
	mr := &plans.MethodResponse{StatusCode: "200", ResponseParameters: map[string]bool{},
		ResponseModels: map[string]string{"application/json": "Empty"}}
	ir := &plans.IntegrationResponse{StatusCode: "200", ResponseParameters: map[string]string{}}
	for i, h := range headers {
		mr.ResponseParameters["method.response.header."+h] = false
		ir.ResponseParameters["method.response.header."+h] = values[i]
	}
	params := map[string]bool{}
	for _, part := range strings.Split(path, "/") {
		if name := plans.ParamName(part); name != "" {
			params["method.request.path."+name] = true
		}
	}
	in := &plans.Integration{Type: plans.IntegrationMock, PassthroughBehavior: "WHEN_NO_MATCH",
		RequestTemplates:     map[string]string{"application/json": `{"statusCode": 200}`},
		IntegrationResponses: map[string]*plans.IntegrationResponse{"200": ir}}
	in.Normalize()
	return &plans.Method{HTTPMethod: "OPTIONS", AuthorizationType: "NONE", RequestParameters: params,
		MethodResponses: map[string]*plans.MethodResponse{"200": mr}, MethodIntegration: in}
}

// methodResponses draws method responses: headers required or not, and
// models on one or several media types (the same model on each, or not).
func (g *gen) methodResponses() map[string]*plans.MethodResponse {
	out := map[string]*plans.MethodResponse{}
	for _, code := range g.subset(3, "200", "201", "204", "400", "404", "500") {
		mr := &plans.MethodResponse{StatusCode: code}
		for _, h := range g.subset(3, "Access-Control-Allow-Origin", "X-Count", "ETag") {
			if mr.ResponseParameters == nil {
				mr.ResponseParameters = map[string]bool{}
			}
			mr.ResponseParameters["method.response.header."+h] = g.chance(2)
		}
		model := g.pick("Empty", "Error", "Pet_List.v1", "pet-2")
		for _, ct := range g.subset(2, "application/json", "application/xml", "text/plain") {
			if mr.ResponseModels == nil {
				mr.ResponseModels = map[string]string{}
			}
			if g.chance(4) {
				model = g.pick("Empty", "Error", "Pet_List.v1", "pet-2")
			}
			mr.ResponseModels[ct] = model
		}
		out[code] = mr
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// integration draws an HTTP_PROXY or MOCK integration (a CORS-style MOCK
// for OPTIONS most of the time) with every field tollgate keeps.
func (g *gen) integration(path string, params map[string]bool) *plans.Integration {
	in := &plans.Integration{Type: plans.IntegrationMock, CacheNamespace: g.pick("", "", "shared-ns", "200")}
	if g.chance(2) {
		in.Type, in.HTTPMethod = plans.IntegrationHTTPProxy, g.pick("GET", "POST", "ANY", "PATCH")
		in.URI = g.pick("http://backend.example", "https://backend.example:8443", "http://${stageVariables.host}") + strings.ReplaceAll(path, "+}", "}")
		in.PassthroughBehavior = g.pick("", "WHEN_NO_MATCH", "WHEN_NO_TEMPLATES", "NEVER")
	}
	in.TimeoutInMillis = int32(g.pick2(plans.DefaultTimeoutMillis, 50+g.r.IntN(plans.MaxTimeoutMillis-50)))
	keys := slices.Sorted(maps.Keys(params))
	for _, k := range keys {
		if g.chance(2) {
			in.CacheKeyParameters = append(in.CacheKeyParameters, k)
		}
	}
	mappings := map[string]string{}
	for _, k := range keys {
		if loc, name, _ := plans.ParseRequestParameter("method.request.", k); g.chance(2) {
			mappings["integration.request."+loc+"."+name] = k
		}
	}
	for _, h := range g.subset(3, "X-Tenant", "X-Stage", "X-Context") {
		mappings["integration.request.header."+h] = g.pick("'acme'", "'true'", "'200'", "stageVariables.tenant", "context.requestId")
	}
	if len(mappings) > 0 {
		in.RequestParameters = mappings
	}
	if in.Type == plans.IntegrationMock || g.chance(3) {
		in.RequestTemplates = g.templates(`{"statusCode": 200}`, `{"statusCode": 404}`, "true", "")
	}
	in.IntegrationResponses = g.integrationResponses(in.Type)
	in.Normalize()
	return in
}

// pick2 returns one of two ints.
func (g *gen) pick2(a, b int) int {
	if g.chance(2) {
		return a
	}
	return b
}

// templates draws templates by content type from bodies.
func (g *gen) templates(bodies ...string) map[string]string {
	out := map[string]string{}
	for _, ct := range g.subset(2, "application/json", "text/plain", "application/x-www-form-urlencoded") {
		out[ct] = g.pick(bodies...)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// integrationResponses draws the default response and responses by
// selection pattern, each under its own status code.
func (g *gen) integrationResponses(typ string) map[string]*plans.IntegrationResponse {
	out := map[string]*plans.IntegrationResponse{}
	patterns := map[string]string{"200": "", "204": "2\\d{2}", "404": "4\\d{2}", "500": "5\\d\\d|.*error.*", "302": ""}
	for _, code := range g.subset(3, "200", "204", "404", "500", "302") {
		ir := &plans.IntegrationResponse{StatusCode: code, SelectionPattern: patterns[code],
			ContentHandling: g.pick("", "", "CONVERT_TO_TEXT", "CONVERT_TO_BINARY")}
		if code == "302" {
			ir.SelectionPattern = "3\\d{2}"
		}
		for _, h := range g.subset(3, "Access-Control-Allow-Origin", "Access-Control-Allow-Methods", "X-Env") {
			if ir.ResponseParameters == nil {
				ir.ResponseParameters = map[string]string{}
			}
			src := g.pick("'*'", "'GET,OPTIONS'", "stageVariables.env", "method.request.header.Origin", "'yes: no'")
			if typ == plans.IntegrationHTTPProxy && g.chance(3) {
				src = "integration.response.header.X-Up"
			}
			ir.ResponseParameters["method.response.header."+h] = src
		}
		ir.ResponseTemplates = g.templates(`{"ok":true}`, `{"stage":"$context.stage","id":"${context.requestId}","env":"$stageVariables.env"}`, "", "~")
		out[code] = ir
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// gatewayResponses draws responses of some types with a status, header
// mappings and a template.
func (g *gen) gatewayResponses() map[string]plans.GatewayResponse {
	out := map[string]plans.GatewayResponse{}
	for _, t := range g.subset(3, plans.GatewayResponseTypes...) {
		gr := plans.GatewayResponse{ResponseType: t, StatusCode: g.pick("", "", "400", "429", "503")}
		for _, h := range g.subset(3, "Access-Control-Allow-Origin", "Access-Control-Expose-Headers", "X-Stage") {
			if gr.ResponseParameters == nil {
				gr.ResponseParameters = map[string]string{}
			}
			gr.ResponseParameters["gatewayresponse.header."+h] = g.pick("'*'", "method.request.header.Origin", "stageVariables.env", "method.request.querystring.cb")
		}
		gr.ResponseTemplates = g.templates(`{"message":$context.error.messageString}`, `{"type":"$context.error.responseType","path":"$context.path"}`, "")
		out[t] = gr
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// LargeDocument returns an OpenAPI 3 document in JSON of n paths
// /r<i>/items/{id}, each with a GET declaring its path parameter and an
// HTTP_PROXY integration mapping it: three resources, one method and one
// integration per path, about 355 bytes (16,000 paths are 5.4 MiB).
func LargeDocument(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"openapi":"3.0.1","info":{"title":"large","version":"1"},"paths":{`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"/r%d/items/{id}":{"get":{"parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"string"}}],`+
			`"responses":{"200":{"description":"ok"}},"x-amazon-apigateway-integration":{"type":"http_proxy","httpMethod":"GET",`+
			`"uri":"http://backend.example/r%d/items/{id}","requestParameters":{"integration.request.path.id":"method.request.path.id"}}}}`, i, i)
	}
	b.WriteString(`}}`)
	return []byte(b.String())
}
