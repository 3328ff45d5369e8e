package openapi

import (
	"fmt"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi3"

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

// ImportOptions are the query parameters of ImportRestApi and PutRestApi
// that change what a document means. The zero value is AWS's default.
type ImportOptions struct {
	// BasePath is BasePathIgnore (""), BasePathPrepend or BasePathSplit.
	BasePath string
}

// Import parses an OpenAPI 3.0 or Swagger 2.0 document (JSON or YAML) into
// an API definition and the warnings of what it skipped, in document order
// (see the package documentation). Errors are KindInvalid *plans.Error
// whose Field is the location in the document
// ("paths./pets.get.x-amazon-apigateway-integration.uri", "body" for a
// document that does not parse, "basepath" for a bad option).
func Import(data []byte, opts ImportOptions) (*plans.ApiDefinition, []string, error) {
	src, err := load(data)
	if err != nil {
		return nil, nil, err
	}
	prefix, err := src.pathPrefix(opts.BasePath)
	if err != nil {
		return nil, nil, err
	}
	im := &importer{doc: src.doc, swagger: src.swagger, prefix: prefix, byPath: map[string]*plans.Resource{},
		varChild: map[string]string{}}
	def, err := im.run()
	if err != nil {
		return nil, nil, err
	}
	return def, im.warnings.inDocumentOrder(data, src.isJSON), nil
}

// importer walks one loaded document.
type importer struct {
	doc      *openapi3.T
	swagger  *openapi2.T // the Swagger 2.0 document; nil for OpenAPI 3
	prefix   string      // put before every path (ImportOptions.BasePath)
	warnings warnings
	byPath   map[string]*plans.Resource
	varChild map[string]string // parent path → its {variable} child's path part
	// authorizers are those the operations' security names, by scheme name.
	authorizers map[string]*plans.Authorizer
}

func (im *importer) warn(at loc, format string, args ...any) { im.warnings.add(at, format, args...) }

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
	im.rootExtensions()
	im.rootSecurity()
	if err := im.schemes(); err != nil {
		return nil, err
	}
	if err := im.gatewayResponses(def); err != nil {
		return nil, err
	}
	if err := im.rateLimitRules(def); err != nil {
		return nil, err
	}
	im.byPath["/"] = &plans.Resource{Path: "/"}
	if _, err := im.resource(loc{"basePath"}, im.prefix); err != nil {
		return nil, err
	}
	paths := im.doc.Paths.Keys()
	slices.Sort(paths)
	for _, path := range paths {
		if err := im.path(path, im.doc.Paths.Value(path)); err != nil {
			return nil, err
		}
	}
	def.Resources = im.resources()
	def.Authorizers = im.definitionAuthorizers()
	return def, nil
}

// rootExtensions reads x-amazon-apigateway-api-key-source and warns about
// every other API Gateway extension at the root.
func (im *importer) rootExtensions() {
	for _, name := range sortedKeys(im.doc.Extensions) {
		v := im.doc.Extensions[name]
		switch {
		case name == extAPIKeySource:
			if s, _ := v.(string); !strings.EqualFold(s, plans.ApiKeySourceHeader) {
				im.warn(loc{name}, "%v is not supported: API keys are read from the x-api-key header (HEADER)", v)
			}
		case name == extGatewayResponses:
		case strings.HasPrefix(name, extPrefix):
			im.warn(loc{name}, "not supported by tollgate; ignored")
		}
	}
}

// rootSecurity warns that the document's own security requirements are
// ignored, as API Gateway's import ignores them: only an operation's
// security applies to it.
func (im *importer) rootSecurity() {
	if len(im.doc.Security) == 0 {
		return
	}
	im.warn(loc{"security"}, "security requirements at the document's root are ignored, as API Gateway ignores them; "+
		"a method requires an API key only when its operation declares the security requirement")
}

// path imports one path item: its resource (and missing ancestors) and
// its operations.
func (im *importer) path(path string, item *openapi3.PathItem) error {
	at := loc{"paths", path}
	if !strings.HasPrefix(path, "/") {
		return plans.Invalid(at.String(), "%s: a path must start with /", at)
	}
	res, err := im.resource(at, im.prefix+path)
	if err != nil || item == nil {
		return err
	}
	for _, ov := range operationVerbs {
		if op := item.GetOperation(ov.verb); op != nil {
			if err := im.method(at.at(ov.key), res, ov.verb, item, op); err != nil {
				return err
			}
		}
	}
	if raw, ok := item.Extensions[extAnyMethod]; ok {
		op, err := im.anyMethod(at.at(extAnyMethod), raw)
		if err != nil {
			return err
		}
		if err := im.method(at.at(extAnyMethod), res, "ANY", item, op); err != nil {
			return err
		}
	}
	if item.Trace != nil || item.Connect != nil || item.Query != nil || len(item.AdditionalOperations) > 0 {
		im.warn(at, "only GET, PUT, POST, DELETE, OPTIONS, HEAD, PATCH and %s are supported; other operations ignored", extAnyMethod)
	}
	for _, name := range sortedKeys(item.Extensions) {
		if name != extAnyMethod && strings.HasPrefix(name, extPrefix) {
			im.warn(at.at(name), "not supported by tollgate; ignored")
		}
	}
	return nil
}

// resource returns the resource of path (the document's path after the
// base path prefix), creating it and its missing ancestors with the tree
// rules of CreateResource (valid path parts, one variable sibling,
// nothing below a greedy part). at names the path in errors.
func (im *importer) resource(at loc, path string) (*plans.Resource, error) {
	parent := im.byPath["/"]
	if path == "/" || path == "" {
		return parent, nil
	}
	for part := range strings.SplitSeq(path[1:], "/") {
		child := plans.JoinPath(parent.Path, part)
		if r := im.byPath[child]; r != nil {
			parent = r
			continue
		}
		if err := im.checkChild(at, parent, part); err != nil {
			return nil, err
		}
		r := &plans.Resource{PathPart: part, Path: child, ParentID: parent.Path}
		im.byPath[child] = r
		if plans.IsParam(part) {
			im.varChild[parent.Path] = part
		}
		parent = r
	}
	return parent, nil
}

// checkChild applies AWS's tree rules to a new child part of parent.
func (im *importer) checkChild(at loc, parent *plans.Resource, part string) error {
	if err := plans.ValidatePathPart(part); err != nil {
		return plans.Invalid(at.String(), "%s: %s", at, plans.ErrorMessage(err))
	}
	if plans.IsGreedy(parent.PathPart) {
		return plans.Invalid(at.String(), "%s: nothing can follow the greedy path part %s", at, parent.PathPart)
	}
	if other, ok := im.varChild[parent.Path]; ok && plans.IsParam(part) {
		return plans.Invalid(at.String(), "%s: %s and %s are variable siblings under %s; only one is allowed", at, part, other, parent.Path)
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
	slices.Sort(keys)
	return keys
}

// templateParams returns the parameter names of a path template
// ("/a/{b}/{c+}" → b, c: the names request parameters use).
func templateParams(path string) []string {
	var out []string
	for seg := range strings.SplitSeq(path, "/") {
		if plans.IsParam(seg) {
			out = append(out, plans.ParamName(seg))
		}
	}
	return out
}

// errorf is a 400 naming at.
func errorf(at loc, format string, args ...any) error {
	return plans.Invalid(at.String(), "%s: %s", at, fmt.Sprintf(format, args...))
}
