package openapi

import (
	"errors"
	"strings"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"

	"tollgate/plans"
)

// method imports one operation as the method verb of res.
func (im *importer) method(at loc, res *plans.Resource, verb string, item *openapi3.PathItem, op *openapi3.Operation) error {
	m := &plans.Method{HTTPMethod: verb, AuthorizationType: plans.AuthorizationNone}
	if err := im.security(at, m, op); err != nil {
		return err
	}
	m.RequestParameters = im.requestParameters(at, res.Path, item, op)
	m.MethodResponses = im.methodResponses(at.at("responses"), op)
	m.Normalize()
	if err := m.Validate(); err != nil {
		return located(at, err)
	}
	in, err := im.integration(at.at(extIntegration), op.Extensions[extIntegration])
	if err != nil {
		return err
	}
	m.MethodIntegration = in
	for _, name := range sortedKeys(op.Extensions) {
		if name != extIntegration && strings.HasPrefix(name, extPrefix) {
			im.warn(at.at(name), "not supported by tollgate; ignored")
		}
	}
	if res.ResourceMethods == nil {
		res.ResourceMethods = map[string]*plans.Method{}
	}
	res.ResourceMethods[verb] = m
	return nil
}

// located renames a *plans.Error's field to its place in the document.
func located(at loc, err error) error {
	var pe *plans.Error
	if errors.As(err, &pe) && pe.Field != "" {
		at = at.at(pe.Field)
	}
	return plans.Invalid(at.String(), "%s: %s", at, plans.ErrorMessage(err))
}

// anyMethod decodes a path's x-amazon-apigateway-any-method (converted
// from Swagger 2.0 for a Swagger document) and resolves the references of
// the parts the importer reads, as the loader does for the other
// operations. A malformed one is a 400 naming its location.
func (im *importer) anyMethod(at loc, raw any) (*openapi3.Operation, error) {
	if _, ok := raw.(map[string]any); !ok {
		return nil, errorf(at, "must be an operation object")
	}
	var op *openapi3.Operation
	if im.swagger == nil {
		op = &openapi3.Operation{}
		if err := remarshal(raw, op); err != nil {
			return nil, jsonFieldError(at, err)
		}
	} else {
		var op2 openapi2.Operation
		if err := remarshal(raw, &op2); err != nil {
			return nil, jsonFieldError(at, err)
		}
		if len(op2.Produces) == 0 {
			op2.Produces = im.swagger.Produces
		}
		var err error
		if op, err = openapi2conv.ToV3Operation(im.doc.Components, &openapi2.PathItem{}, &op2, nil); err != nil {
			return nil, errorf(at, "%v", err)
		}
	}
	im.resolveOperation(at, op)
	return op, nil
}

// resolveOperation fills the parameters, responses and response headers
// of op that are local references to the document's components; a
// reference to nothing is a warning, and the part is skipped.
func (im *importer) resolveOperation(at loc, op *openapi3.Operation) {
	c := im.doc.Components
	for i, p := range op.Parameters {
		if p != nil && p.Value == nil && p.Ref != "" {
			p.Value = lookup(im, at.at("parameters", index(i)), p.Ref, "parameters", c.Parameters,
				func(r *openapi3.ParameterRef) *openapi3.Parameter { return r.Value })
		}
	}
	if op.Responses == nil {
		return
	}
	for code, r := range op.Responses.Map() {
		if r != nil && r.Value == nil && r.Ref != "" {
			r.Value = lookup(im, at.at("responses", code), r.Ref, "responses", c.Responses,
				func(r *openapi3.ResponseRef) *openapi3.Response { return r.Value })
		}
		if r == nil || r.Value == nil {
			continue
		}
		for name, h := range r.Value.Headers {
			if h != nil && h.Value == nil && h.Ref != "" {
				h.Value = lookup(im, at.at("responses", code, "headers", name), h.Ref, "headers", c.Headers,
					func(r *openapi3.HeaderRef) *openapi3.Header { return r.Value })
			}
		}
	}
}

// lookup returns the value of the component ref names in one section of
// the components ("#/components/<section>/<name>"), or nil with a warning.
func lookup[R any, V any](im *importer, at loc, ref, section string, parts map[string]*R, value func(*R) *V) *V {
	name, ok := strings.CutPrefix(ref, "#/components/"+section+"/")
	if r := parts[name]; ok && r != nil {
		if v := value(r); v != nil {
			return v
		}
	}
	im.warn(at, "$ref %q names nothing in the document; ignored", ref)
	return nil
}

// requestParameters maps the operation's and path item's parameters to
// method.request.{path|querystring|header}.name → required, and declares
// every path parameter of the resource path as required. A path
// parameter the path has no {name} or {name+} for is skipped with a
// warning: no request can set it.
func (im *importer) requestParameters(at loc, path string, item *openapi3.PathItem, op *openapi3.Operation) map[string]bool {
	inPath := map[string]bool{}
	for _, name := range templateParams(path) {
		inPath[name] = true
	}
	out := map[string]bool{}
	for _, src := range []struct {
		at loc
		ps openapi3.Parameters
	}{{loc{"paths", path, "parameters"}, item.Parameters}, {at.at("parameters"), op.Parameters}} {
		for i, ref := range src.ps {
			if ref == nil || ref.Value == nil {
				continue
			}
			p, pat := ref.Value, src.at.at(index(i))
			switch p.In {
			case "path":
				name := strings.TrimSuffix(p.Name, "+")
				if !inPath[name] {
					im.warn(pat, "path parameter %q is not in the path %s; ignored", p.Name, path)
					continue
				}
				out["method.request.path."+name] = true
			case "query":
				out["method.request.querystring."+p.Name] = p.Required
			case "header":
				out["method.request.header."+p.Name] = p.Required
			default:
				im.warn(pat, "%s parameter %q: %s parameters are not supported; ignored", p.In, p.Name, p.In)
			}
		}
	}
	for name := range inPath {
		out["method.request.path."+name] = true
	}
	for k := range out {
		if _, _, ok := plans.ParseRequestParameter("method.request.", k); !ok {
			delete(out, k)
		}
	}
	return out
}

// methodResponses maps numeric responses to method responses: header
// names (required or not) and content types whose schema refers to a
// component schema (the model name). "default" and ranges ("2XX") are not
// method responses and are skipped; so is a header or model tollgate
// cannot store, with a warning. A missing or empty responses object
// (which API Gateway accepts) gives none.
func (im *importer) methodResponses(at loc, op *openapi3.Operation) map[string]*plans.MethodResponse {
	if op.Responses == nil || op.Responses.Len() == 0 {
		return nil
	}
	out := map[string]*plans.MethodResponse{}
	for _, code := range sortedKeys(op.Responses.Map()) {
		ref := op.Responses.Value(code)
		if plans.ValidateStatusCode("statusCode", code) != nil || ref == nil || ref.Value == nil {
			continue
		}
		mr := &plans.MethodResponse{StatusCode: code}
		for _, name := range sortedKeys(ref.Value.Headers) {
			h, k := ref.Value.Headers[name], "method.response.header."+name
			if err := (&plans.MethodResponse{StatusCode: code, ResponseParameters: map[string]bool{k: false}}).Validate(); err != nil {
				im.warn(at.at(code, "headers", name), "%s; ignored", plans.ErrorMessage(err))
				continue
			}
			if mr.ResponseParameters == nil {
				mr.ResponseParameters = map[string]bool{}
			}
			mr.ResponseParameters[k] = h != nil && h.Value != nil && h.Value.Required
		}
		for _, ct := range sortedKeys(ref.Value.Content) {
			if model := im.responseModel(at.at(code, "content", ct), code, ct, ref.Value.Content[ct]); model != "" {
				if mr.ResponseModels == nil {
					mr.ResponseModels = map[string]string{}
				}
				mr.ResponseModels[ct] = model
			}
		}
		out[code] = mr
	}
	return out
}

// responseModel returns the model name of one content type of a response:
// the component schema its schema refers to, "" for an inline schema; a
// model tollgate cannot store, or one the document does not define, is
// skipped with a warning.
func (im *importer) responseModel(at loc, code, ct string, mt *openapi3.MediaType) string {
	if mt == nil || mt.Schema == nil || mt.Schema.Ref == "" {
		return ""
	}
	model, ok := strings.CutPrefix(mt.Schema.Ref, "#/components/schemas/")
	if !ok {
		return ""
	}
	if im.doc.Components.Schemas[model] == nil {
		im.warn(at.at("schema"), "model %q is not defined in the document; ignored", model)
		return ""
	}
	if err := (&plans.MethodResponse{StatusCode: code, ResponseModels: map[string]string{ct: model}}).Validate(); err != nil {
		im.warn(at.at("schema"), "%s; ignored", plans.ErrorMessage(err))
		return ""
	}
	return model
}
