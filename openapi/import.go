package openapi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"go.yaml.in/yaml/v4"

	"tollgate/plans"
)

// Extension names tollgate reads and writes.
const (
	extIntegration      = "x-amazon-apigateway-integration"
	extAnyMethod        = "x-amazon-apigateway-any-method"
	extAPIKeySource     = "x-amazon-apigateway-api-key-source"
	extGatewayResponses = "x-amazon-apigateway-gateway-responses"
	extPrefix           = "x-amazon-apigateway-"
)

// apiKeyHeader is the only header tollgate reads API keys from.
const apiKeyHeader = "x-api-key"

// operationVerbs maps OpenAPI operation keys to HTTP methods tollgate
// serves, in the order they are imported and exported.
var operationVerbs = []struct{ key, verb string }{
	{"get", "GET"}, {"put", "PUT"}, {"post", "POST"}, {"delete", "DELETE"},
	{"options", "OPTIONS"}, {"head", "HEAD"}, {"patch", "PATCH"},
}

// Import parses an OpenAPI 3.0 or Swagger 2.0 document (JSON or YAML) into
// an API definition and the warnings of what it skipped (see the package
// documentation). Errors are KindInvalid *plans.Error whose Field is the
// location in the document ("paths./pets.get.x-amazon-apigateway-integration.uri",
// "body" for a document that does not parse).
func Import(data []byte) (*plans.ApiDefinition, []string, error) {
	doc, err := load(data)
	if err != nil {
		return nil, nil, err
	}
	im := &importer{doc: doc, byPath: map[string]*plans.Resource{}}
	def, err := im.run()
	if err != nil {
		return nil, nil, err
	}
	return def, im.warnings, nil
}

// load parses data as Swagger 2.0 (converted to OpenAPI 3) or OpenAPI 3.0,
// decodes the x-amazon-apigateway-any-method operations, declares the path parameters a path template has but an operation does
// not, and validates the result with kin-openapi. External references are
// never followed.
func load(data []byte) (*openapi3.T, error) {
	var probe struct {
		Swagger string `yaml:"swagger"`
		OpenAPI string `yaml:"openapi"`
	}
	if err := yaml.Unmarshal(data, &probe); err != nil {
		return nil, plans.Invalid("body", "the document is neither JSON nor YAML: %v", err)
	}
	var doc *openapi3.T
	var swagger *openapi2.T
	switch {
	case probe.Swagger == "2.0":
		var doc2 openapi2.T
		if err := openapi2.UnmarshalFromData(data, &doc2); err != nil {
			return nil, plans.Invalid("body", "reading the Swagger 2.0 document: %v", err)
		}
		var err error
		if doc, err = openapi2conv.ToV3(&doc2); err != nil {
			return nil, plans.Invalid("body", "converting the Swagger 2.0 document: %v", err)
		}
		swagger = &doc2
	case strings.HasPrefix(probe.OpenAPI, "3.0"):
		loader := openapi3.NewLoader()
		var err error
		if doc, err = loader.LoadFromData(data); err != nil {
			return nil, plans.Invalid("body", "reading the OpenAPI document: %v", err)
		}
	default:
		return nil, plans.Invalid("openapi", "the document must be OpenAPI 3.0 (openapi: 3.0.x) or Swagger 2.0 (swagger: \"2.0\")")
	}
	if doc.Paths == nil {
		doc.Paths = openapi3.NewPaths()
	}
	if err := decodeAnyMethods(doc, swagger); err != nil {
		return nil, err
	}
	declarePathParameters(doc)
	if err := doc.Validate(context.Background(), openapi3.DisableExamplesValidation()); err != nil {
		return nil, validationError(err)
	}
	return doc, nil
}

// decodeAnyMethods decodes every path's x-amazon-apigateway-any-method
// once, in place, into a validated *openapi3.Operation (converted from
// Swagger 2.0 when doc2 is set), so the importer reads it as it reads the
// other operations. A malformed one is a 400 naming its location.
func decodeAnyMethods(doc *openapi3.T, doc2 *openapi2.T) error {
	for path, item := range doc.Paths.Map() {
		if item == nil {
			continue
		}
		raw, ok := item.Extensions[extAnyMethod]
		if !ok {
			continue
		}
		loc := "paths." + path + "." + extAnyMethod
		op, err := decodeAnyMethod(loc, raw, doc, doc2)
		if err != nil {
			return err
		}
		if err := op.Validate(context.Background(), openapi3.DisableExamplesValidation()); err != nil {
			return plans.Invalid(loc, "%s: invalid operation: %v", loc, err)
		}
		item.Extensions[extAnyMethod] = op
	}
	return nil
}

// decodeAnyMethod decodes one x-amazon-apigateway-any-method value.
func decodeAnyMethod(loc string, raw any, doc *openapi3.T, doc2 *openapi2.T) (*openapi3.Operation, error) {
	if doc2 == nil {
		op := &openapi3.Operation{}
		if err := remarshal(raw, op); err != nil {
			return nil, jsonFieldError(loc, err)
		}
		return op, nil
	}
	var op2 openapi2.Operation
	if err := remarshal(raw, &op2); err != nil {
		return nil, jsonFieldError(loc, err)
	}
	op3, err := openapi2conv.ToV3Operation(doc.Components, &openapi2.PathItem{}, &op2, doc2.Consumes)
	if err != nil {
		return nil, plans.Invalid(loc, "%s: %v", loc, err)
	}
	return op3, nil
}

// declarePathParameters adds a required string parameter for every
// "{name}" of a path template that an operation does not declare (OpenAPI
// requires them; AWS's import accepts documents without).
func declarePathParameters(doc *openapi3.T) {
	for path, item := range doc.Paths.Map() {
		if item == nil {
			continue
		}
		for _, op := range pathOperations(item) {
			for _, name := range templateParams(path) {
				if op.Parameters.GetByInAndName("path", name) == nil && item.Parameters.GetByInAndName("path", name) == nil {
					p := openapi3.NewPathParameter(name).WithSchema(openapi3.NewStringSchema())
					op.Parameters = append(op.Parameters, &openapi3.ParameterRef{Value: p})
				}
			}
		}
	}
}

// pathOperations returns the operations of item, the any-method one included.
func pathOperations(item *openapi3.PathItem) []*openapi3.Operation {
	var ops []*openapi3.Operation
	for _, op := range item.Operations() {
		ops = append(ops, op)
	}
	if op, ok := anyMethod(item); ok {
		ops = append(ops, op)
	}
	return ops
}

// templateParams returns the parameter names of a path template
// ("/a/{b}/{c+}" → b, c+ as OpenAPI names them: "c+").
func templateParams(path string) []string {
	var out []string
	for seg := range strings.SplitSeq(path, "/") {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			out = append(out, seg[1:len(seg)-1])
		}
	}
	return out
}

// validationError turns kin-openapi's validation error into a 400 naming
// where it happened.
func validationError(err error) error {
	loc := "openapi"
	var sec *openapi3.SectionValidationError
	if errors.As(err, &sec) {
		loc = sec.Section
	}
	var pe *openapi3.PathValidationError
	if errors.As(err, &pe) {
		loc = "paths." + pe.Path
	}
	var oe *openapi3.OperationValidationError
	if errors.As(err, &oe) {
		loc += "." + strings.ToLower(oe.Method)
	}
	var ce *openapi3.ComponentValidationError
	if errors.As(err, &ce) {
		loc += "." + ce.Section + "." + ce.Name
	}
	return plans.Invalid(loc, "%s: invalid OpenAPI document: %v", loc, err)
}

// importer walks one validated document.
type importer struct {
	doc      *openapi3.T
	warnings []string
	byPath   map[string]*plans.Resource
}

func (im *importer) warn(format string, args ...any) {
	im.warnings = append(im.warnings, fmt.Sprintf(format, args...))
}

func (im *importer) run() (*plans.ApiDefinition, error) {
	def := &plans.ApiDefinition{ApiKeySource: plans.ApiKeySourceHeader}
	if info := im.doc.Info; info != nil {
		def.Name, def.Description = info.Title, info.Description
	}
	if err := plans.ValidateName("info.title", def.Name); err != nil {
		return nil, err
	}
	if err := plans.ValidateDescription("info.description", def.Description); err != nil {
		return nil, err
	}
	im.rootExtensions(def)
	if err := im.gatewayResponses(def); err != nil {
		return nil, err
	}
	if err := im.rateLimitRules(def); err != nil {
		return nil, err
	}
	im.byPath["/"] = &plans.Resource{Path: "/"}
	paths := im.doc.Paths.Keys()
	sort.Strings(paths)
	for _, path := range paths {
		if err := im.path(path, im.doc.Paths.Value(path)); err != nil {
			return nil, err
		}
	}
	def.Resources = im.resources()
	return def, nil
}

// rootExtensions reads x-amazon-apigateway-api-key-source and warns about
// every other API Gateway extension at the root.
func (im *importer) rootExtensions(def *plans.ApiDefinition) {
	for _, name := range sortedKeys(im.doc.Extensions) {
		v := im.doc.Extensions[name]
		switch {
		case name == extAPIKeySource:
			if s, _ := v.(string); !strings.EqualFold(s, plans.ApiKeySourceHeader) {
				im.warn("%s: %v is not supported: API keys are read from the x-api-key header (HEADER)", name, v)
			}
		case name == extGatewayResponses:
		case strings.HasPrefix(name, extPrefix):
			im.warn("%s: not supported by tollgate; ignored", name)
		}
	}
}

// path imports one path item: its resource (and missing ancestors) and
// its operations.
func (im *importer) path(path string, item *openapi3.PathItem) error {
	loc := "paths." + path
	res, err := im.resource(loc, path)
	if err != nil || item == nil {
		return err
	}
	for _, ov := range operationVerbs {
		if op := item.GetOperation(ov.verb); op != nil {
			if err := im.method(loc+"."+ov.key, res, ov.verb, item, op); err != nil {
				return err
			}
		}
	}
	if op, ok := anyMethod(item); ok {
		if err := im.method(loc+"."+extAnyMethod, res, "ANY", item, op); err != nil {
			return err
		}
	}
	if item.Trace != nil || item.Connect != nil || item.Query != nil || len(item.AdditionalOperations) > 0 {
		im.warn("%s: only GET, PUT, POST, DELETE, OPTIONS, HEAD, PATCH and %s are supported; other operations ignored", loc, extAnyMethod)
	}
	for _, name := range sortedKeys(item.Extensions) {
		if name != extAnyMethod && strings.HasPrefix(name, extPrefix) {
			im.warn("%s.%s: not supported by tollgate; ignored", loc, name)
		}
	}
	return nil
}

// anyMethod returns the x-amazon-apigateway-any-method operation of item
// (load decoded it).
func anyMethod(item *openapi3.PathItem) (*openapi3.Operation, bool) {
	op, ok := item.Extensions[extAnyMethod].(*openapi3.Operation)
	return op, ok
}

// resource returns the resource of path, creating it and its missing
// ancestors with the tree rules of CreateResource (valid path parts, one
// variable sibling, nothing below a greedy part).
func (im *importer) resource(loc, path string) (*plans.Resource, error) {
	if !strings.HasPrefix(path, "/") {
		return nil, plans.Invalid(loc, "%s: a path must start with /", loc)
	}
	parent := im.byPath["/"]
	if path == "/" {
		return parent, nil
	}
	for part := range strings.SplitSeq(path[1:], "/") {
		child := plans.JoinPath(parent.Path, part)
		if r := im.byPath[child]; r != nil {
			parent = r
			continue
		}
		if err := im.checkChild(loc, parent, part); err != nil {
			return nil, err
		}
		r := &plans.Resource{PathPart: part, Path: child, ParentID: parent.Path}
		im.byPath[child] = r
		parent = r
	}
	return parent, nil
}

// checkChild applies AWS's tree rules to a new child part of parent.
func (im *importer) checkChild(loc string, parent *plans.Resource, part string) error {
	if err := plans.ValidatePathPart(part); err != nil {
		return plans.Invalid(loc, "%s: %s", loc, plans.ErrorMessage(err))
	}
	if plans.IsGreedy(parent.PathPart) {
		return plans.Invalid(loc, "%s: nothing can follow the greedy path part %s", loc, parent.PathPart)
	}
	if !plans.IsParam(part) {
		return nil
	}
	for _, r := range im.byPath {
		if r.ParentID == parent.Path && r.Path != "/" && plans.IsParam(r.PathPart) {
			return plans.Invalid(loc, "%s: %s and %s are variable siblings under %s; only one is allowed", loc, part, r.PathPart, parent.Path)
		}
	}
	return nil
}

// resources returns the tree sorted by path (parents first), ParentID
// holding the parent's path until the store gives ids.
func (im *importer) resources() []plans.Resource {
	out := make([]plans.Resource, 0, len(im.byPath))
	for _, r := range im.byPath {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b plans.Resource) int { return strings.Compare(a.Path, b.Path) })
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
