package openapi

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"go.yaml.in/yaml/v4"

	"tollgate/plans"
)

// ExportOptions choose what Export writes. The zero value is an OpenAPI
// 3.0.1 document in JSON without API Gateway extensions.
type ExportOptions struct {
	Swagger    bool   // Swagger 2.0 instead of OpenAPI 3.0.1
	Extensions bool   // the x-amazon-apigateway-* fields (?extensions=apigateway)
	YAML       bool   // YAML instead of JSON
	Stage      string // the stage exported: the server URL's base path
	Version    string // info.version (AWS writes the deployment's date)
}

// apiKeyScheme is the security scheme Export declares for apiKeyRequired
// methods, as AWS's exports name it.
const apiKeyScheme = "api_key"

// extExportWarnings is tollgate's extension at an export's root listing
// what the export could not carry (Export's warnings); an import ignores it.
const extExportWarnings = "x-tollgate-export-warnings"

// Export writes def as an OpenAPI document that Import reads back as def
// (see the package documentation), and warnings naming what the document
// cannot carry: OpenAPI 3 carries everything; Swagger 2.0 gives a
// response one schema for every media type its operation produces, so a
// response whose models differ by media type, or an operation whose
// responses have models on different media types, is written as
// swaggerModels says and named in a warning (also listed in the
// document, under x-tollgate-export-warnings). Errors come from the
// Swagger 2.0 conversion or encoding, never from def's content.
func Export(def *plans.ApiDefinition, opts ExportOptions) ([]byte, []string, error) {
	doc := exportDoc(def, opts)
	var v any = doc
	var warnings []string
	if opts.Swagger {
		var produces map[*openapi3.Operation][]string
		produces, warnings = swaggerModels(doc)
		doc2, err := openapi2conv.FromV3(doc)
		if err != nil {
			return nil, nil, fmt.Errorf("openapi: convert to swagger 2.0: %w", err)
		}
		if err := swaggerOperations(doc, doc2.Paths, produces); err != nil {
			return nil, nil, err
		}
		if len(warnings) > 0 {
			if doc2.Extensions == nil {
				doc2.Extensions = map[string]any{}
			}
			doc2.Extensions[extExportWarnings] = warnings
		}
		v = doc2
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil || !opts.YAML {
		return b, warnings, err
	}
	b, err = jsonToYAML(b)
	return b, warnings, err
}

// swaggerModels rewrites, for a Swagger 2.0 export, each response of doc
// to one application/json schema (the one FromV3 converts): its
// application/json model, else its first by media type. It returns the
// media types each operation produces (those of every model of its
// responses, sorted) and a warning for each response whose models an
// import of the Swagger document would not give back.
func swaggerModels(doc *openapi3.T) (map[*openapi3.Operation][]string, []string) {
	produces := map[*openapi3.Operation][]string{}
	var warnings []string
	for _, path := range doc.Paths.Keys() {
		item := doc.Paths.Value(path)
		ops := map[string]*openapi3.Operation{}
		for verb, op := range item.Operations() {
			ops[strings.ToLower(verb)] = op
		}
		if op, ok := item.Extensions[extAnyMethod].(*openapi3.Operation); ok {
			ops[extAnyMethod] = op
		}
		for key, op := range ops {
			types := map[string]bool{}
			for _, resp := range op.Responses.Map() {
				for ct := range resp.Value.Content {
					types[ct] = true
				}
			}
			if len(types) == 0 {
				continue
			}
			produces[op] = sortedKeys(types)
			for code, resp := range op.Responses.Map() {
				if w := oneSchema(resp.Value, produces[op]); w != "" {
					warnings = append(warnings, loc{"paths", path, key, "responses", code}.String()+": "+w)
				}
			}
		}
	}
	slices.Sort(warnings)
	return produces, warnings
}

// oneSchema leaves resp with its one schema as application/json content
// and describes what an import of it on the media types produced would
// not give back ("" when it gives back resp's models).
func oneSchema(resp *openapi3.Response, produced []string) string {
	if len(resp.Content) == 0 {
		return ""
	}
	types := sortedKeys(resp.Content)
	chosen := resp.Content["application/json"]
	if chosen == nil {
		chosen = resp.Content[types[0]]
	}
	lossless := len(types) == len(produced)
	var models []string
	for _, ct := range types {
		models = append(models, ct+" "+strings.TrimPrefix(resp.Content[ct].Schema.Ref, "#/components/schemas/"))
		lossless = lossless && resp.Content[ct].Schema.Ref == chosen.Schema.Ref
	}
	resp.Content = openapi3.Content{"application/json": chosen}
	if lossless {
		return ""
	}
	return fmt.Sprintf("Swagger 2.0 gives a response one model for every media type of its operation: models %s are exported as %s for %s; export oas30 to keep them",
		strings.Join(models, ", "), strings.TrimPrefix(chosen.Schema.Ref, "#/components/schemas/"), strings.Join(produced, ", "))
}

// exportDoc builds the OpenAPI 3 document of def.
func exportDoc(def *plans.ApiDefinition, opts ExportOptions) *openapi3.T {
	version := opts.Version
	if version == "" {
		version = "1.0"
	}
	doc := &openapi3.T{OpenAPI: "3.0.1", Info: &openapi3.Info{Title: def.Name, Description: def.Description, Version: version},
		Paths: openapi3.NewPaths(), Components: &openapi3.Components{}}
	if opts.Stage != "" {
		doc.Servers = openapi3.Servers{{URL: "/" + opts.Stage}}
	}
	authorizers := make(map[string]*plans.Authorizer, len(def.Authorizers))
	for i := range def.Authorizers {
		a := &def.Authorizers[i]
		authorizers[a.Name] = a
		declareScheme(doc, a.Name, authorizerScheme(a))
	}
	parents := map[string]bool{}
	for _, r := range def.Resources {
		if r.Path != "/" {
			parents[r.Path[:max(strings.LastIndexByte(r.Path, '/'), 1)]] = true
		}
	}
	for i := range def.Resources {
		r := &def.Resources[i]
		if item := exportPath(doc, r, parents[r.Path], authorizers, opts); item != nil {
			doc.Paths.Set(r.Path, item)
		}
	}
	if opts.Extensions {
		doc.Extensions = map[string]any{extAPIKeySource: def.ApiKeySource}
		if gr := exportGatewayResponses(def.GatewayResponses); gr != nil {
			doc.Extensions[extGatewayResponses] = gr
		}
		if def.RateLimitRules != nil {
			doc.Extensions[extRules] = exportRules(def.RateLimitRules)
		}
	}
	return doc
}

// exportPath returns the path item of r, or nil for a resource that needs
// none (the root or a resource with children, without methods).
func exportPath(doc *openapi3.T, r *plans.Resource, hasChildren bool, authorizers map[string]*plans.Authorizer, opts ExportOptions) *openapi3.PathItem {
	if len(r.ResourceMethods) == 0 && (r.Path == "/" || hasChildren) {
		return nil
	}
	item := &openapi3.PathItem{}
	for _, verb := range sortedKeys(r.ResourceMethods) {
		op := exportOperation(doc, r, r.ResourceMethods[verb], authorizers, opts)
		if verb != "ANY" {
			item.SetOperation(verb, op)
			continue
		}
		if opts.Extensions {
			item.Extensions = map[string]any{extAnyMethod: op}
		}
	}
	return item
}

// exportOperation writes one method (authorizers by name, as def's
// methods name them).
func exportOperation(doc *openapi3.T, r *plans.Resource, m *plans.Method, authorizers map[string]*plans.Authorizer, opts ExportOptions) *openapi3.Operation {
	op := &openapi3.Operation{Parameters: exportParameters(r.Path, m.RequestParameters), Responses: exportResponses(doc, m.MethodResponses),
		Security: exportSecurity(doc, m, authorizers)}
	if opts.Extensions && m.MethodIntegration != nil {
		op.Extensions = map[string]any{extIntegration: exportIntegration(r, m.MethodIntegration)}
	}
	return op
}

// exportParameters declares the method's request parameters, path
// parameters always required (OpenAPI's rule).
func exportParameters(path string, rp map[string]bool) openapi3.Parameters {
	params := map[string]bool{}
	for k, v := range rp {
		params[k] = v
	}
	for _, name := range templateParams(path) {
		params["method.request.path."+strings.TrimSuffix(name, "+")] = true
	}
	var out openapi3.Parameters
	for _, k := range sortedKeys(params) {
		loc, name, ok := plans.ParseRequestParameter("method.request.", k)
		if !ok {
			continue
		}
		in := map[string]string{"querystring": "query", "header": "header", "path": "path"}[loc]
		p := &openapi3.Parameter{Name: name, In: in, Required: params[k] || in == "path",
			Schema: &openapi3.SchemaRef{Value: openapi3.NewStringSchema()}}
		out = append(out, &openapi3.ParameterRef{Value: p})
	}
	return out
}

// exportResponses writes the method responses ("default" when there are
// none: OpenAPI requires at least one response), their model names as
// component schemas.
func exportResponses(doc *openapi3.T, mrs map[string]*plans.MethodResponse) *openapi3.Responses {
	out := openapi3.NewResponses()
	if len(mrs) == 0 {
		out.Set("default", &openapi3.ResponseRef{Value: openapi3.NewResponse().WithDescription("Default response")})
		return out
	}
	for _, code := range sortedKeys(mrs) {
		mr := mrs[code]
		resp := openapi3.NewResponse().WithDescription(code + " response")
		for _, k := range sortedKeys(mr.ResponseParameters) {
			name, _ := strings.CutPrefix(k, "method.response.header.")
			if resp.Headers == nil {
				resp.Headers = openapi3.Headers{}
			}
			resp.Headers[name] = &openapi3.HeaderRef{Value: &openapi3.Header{Parameter: openapi3.Parameter{
				Required: mr.ResponseParameters[k], Schema: &openapi3.SchemaRef{Value: openapi3.NewStringSchema()}}}}
		}
		for _, ct := range sortedKeys(mr.ResponseModels) {
			model := mr.ResponseModels[ct]
			if resp.Content == nil {
				resp.Content = openapi3.Content{}
			}
			resp.Content[ct] = &openapi3.MediaType{Schema: &openapi3.SchemaRef{Ref: "#/components/schemas/" + model}}
			if doc.Components.Schemas == nil {
				doc.Components.Schemas = openapi3.Schemas{}
			}
			if doc.Components.Schemas[model] == nil {
				doc.Components.Schemas[model] = &openapi3.SchemaRef{Value: &openapi3.Schema{Title: model, Type: &openapi3.Types{"object"}}}
			}
		}
		out.Set(code, &openapi3.ResponseRef{Value: resp})
	}
	return out
}

// exportIntegration writes x-amazon-apigateway-integration; the cache
// namespace is left out when it is the resource's own id (the default a
// new import fills in again).
func exportIntegration(r *plans.Resource, in *plans.Integration) awsIntegration {
	timeout := in.TimeoutInMillis
	ai := awsIntegration{Type: strings.ToLower(in.Type), URI: in.URI, HTTPMethod: in.HTTPMethod,
		PassthroughBehavior: in.PassthroughBehavior, RequestParameters: in.RequestParameters,
		RequestTemplates: in.RequestTemplates, CacheKeyParameters: in.CacheKeyParameters,
		TimeoutInMillis: &timeout}
	if in.CacheNamespace != r.ID {
		ai.CacheNamespace = in.CacheNamespace
	}
	if in.ConnectionType != "INTERNET" {
		ai.ConnectionType = in.ConnectionType
	}
	for _, ir := range in.IntegrationResponses {
		pattern := ir.SelectionPattern
		if pattern == "" {
			pattern = "default"
		}
		if ai.Responses == nil {
			ai.Responses = map[string]awsIntegrationReply{}
		}
		ai.Responses[pattern] = awsIntegrationReply{StatusCode: ir.StatusCode, ResponseParameters: ir.ResponseParameters,
			ResponseTemplates: ir.ResponseTemplates, ContentHandling: ir.ContentHandling}
	}
	return ai
}

// gatewayReply is one entry of x-amazon-apigateway-gateway-responses.
type gatewayReply struct {
	StatusCode         string            `json:"statusCode,omitempty"`
	ResponseParameters map[string]string `json:"responseParameters,omitempty"`
	ResponseTemplates  map[string]string `json:"responseTemplates,omitempty"`
}

func exportGatewayResponses(grs map[string]plans.GatewayResponse) map[string]gatewayReply {
	if len(grs) == 0 {
		return nil
	}
	out := make(map[string]gatewayReply, len(grs))
	for t, gr := range grs {
		out[t] = gatewayReply{StatusCode: gr.StatusCode, ResponseParameters: gr.ResponseParameters, ResponseTemplates: gr.ResponseTemplates}
	}
	return out
}

// swaggerOperations finishes the Swagger 2.0 paths FromV3 converted:
// each operation produces the media types swaggerModels chose (FromV3
// does not carry them), and the OpenAPI 3 operations FromV3 copied
// verbatim into x-amazon-apigateway-any-method become Swagger 2.0 ones.
func swaggerOperations(doc *openapi3.T, paths map[string]*openapi2.PathItem, produces map[*openapi3.Operation][]string) error {
	for path, item := range paths {
		item3 := doc.Paths.Value(path)
		for verb, op2 := range item.Operations() {
			op2.Produces = produces[item3.GetOperation(verb)]
		}
		op3, ok := item.Extensions[extAnyMethod].(*openapi3.Operation)
		if !ok {
			continue
		}
		op2, err := openapi2conv.FromV3Operation(doc, op3)
		if err != nil {
			return fmt.Errorf("openapi: convert %s %s to swagger 2.0: %w", path, extAnyMethod, err)
		}
		op2.Produces = produces[op3]
		item.Extensions[extAnyMethod] = op2
	}
	return nil
}

// jsonToYAML re-encodes a JSON document as block-style YAML, keeping the
// order of its keys.
func jsonToYAML(b []byte) ([]byte, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(b, &n); err != nil {
		return nil, fmt.Errorf("openapi: yaml: %w", err)
	}
	blockStyle(&n)
	return yaml.Marshal(&n)
}

// blockStyle clears the flow style the JSON input gave every collection
// and the quotes of one-line strings (the encoder quotes those that would
// read back as another type, such as "200").
func blockStyle(n *yaml.Node) {
	switch {
	case n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode:
		n.Style &^= yaml.FlowStyle
	case n.Kind == yaml.ScalarNode && n.Style == yaml.DoubleQuotedStyle && !strings.ContainsAny(n.Value, "\n\t"):
		n.Style = 0
	}
	for _, c := range n.Content {
		blockStyle(c)
	}
}
