package openapi

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"tollgate/plans"
)

// method imports one operation as the method verb of res.
func (im *importer) method(loc string, res *plans.Resource, verb string, item *openapi3.PathItem, op *openapi3.Operation) error {
	m := &plans.Method{HTTPMethod: verb, AuthorizationType: "NONE"}
	keyed, err := im.apiKeyRequired(loc, op)
	if err != nil {
		return err
	}
	m.APIKeyRequired = keyed
	m.RequestParameters = im.requestParameters(loc, res.Path, item, op)
	m.MethodResponses = im.methodResponses(op)
	m.Normalize()
	if err := m.Validate(); err != nil {
		return located(loc, err)
	}
	in, err := im.integration(loc+"."+extIntegration, res.Path, op.Extensions[extIntegration])
	if err != nil {
		return err
	}
	m.MethodIntegration = in
	for _, name := range sortedKeys(op.Extensions) {
		if name != extIntegration && strings.HasPrefix(name, extPrefix) {
			im.warn("%s.%s: not supported by tollgate; ignored", loc, name)
		}
	}
	if res.ResourceMethods == nil {
		res.ResourceMethods = map[string]*plans.Method{}
	}
	res.ResourceMethods[verb] = m
	return nil
}

// located renames a *plans.Error's field to its place in the document.
func located(loc string, err error) error {
	var pe *plans.Error
	field := ""
	if errors.As(err, &pe) && pe.Field != "" {
		field = "." + pe.Field
	}
	return plans.Invalid(loc+field, "%s%s: %s", loc, field, plans.ErrorMessage(err))
}

// apiKeyRequired reads the operation's security (or the document's): a
// requirement naming an x-api-key apiKey scheme requires a key; one naming
// any other scheme is an error, as tollgate cannot enforce it.
func (im *importer) apiKeyRequired(loc string, op *openapi3.Operation) (bool, error) {
	reqs := im.doc.Security
	if op.Security != nil {
		reqs = *op.Security
	}
	keyed := false
	for _, req := range reqs {
		for _, name := range sortedKeys(req) {
			if !im.isAPIKeyScheme(name) {
				return false, plans.Invalid(loc+".security", "%s.security: security scheme %q is not supported: tollgate authorizes only by API key (an apiKey scheme named x-api-key in the header); importing the method without it would open it", loc, name)
			}
			keyed = true
		}
	}
	return keyed, nil
}

// isAPIKeyScheme reports whether the named security scheme is an apiKey
// scheme read from the x-api-key header without an API Gateway authorizer.
func (im *importer) isAPIKeyScheme(name string) bool {
	if im.doc.Components == nil || im.doc.Components.SecuritySchemes[name] == nil {
		return false
	}
	s := im.doc.Components.SecuritySchemes[name].Value
	if s == nil || s.Type != "apiKey" || s.In != "header" || !strings.EqualFold(s.Name, apiKeyHeader) {
		return false
	}
	_, authorizer := s.Extensions["x-amazon-apigateway-authorizer"]
	authType, _ := s.Extensions["x-amazon-apigateway-authtype"].(string)
	return !authorizer && (authType == "" || strings.EqualFold(authType, "apiKey"))
}

// requestParameters maps the operation's and path item's parameters to
// method.request.{path|querystring|header}.name → required, and declares
// every path parameter of the resource path as required.
func (im *importer) requestParameters(loc, path string, item *openapi3.PathItem, op *openapi3.Operation) map[string]bool {
	out := map[string]bool{}
	for _, ps := range []openapi3.Parameters{item.Parameters, op.Parameters} {
		for _, ref := range ps {
			if ref == nil || ref.Value == nil {
				continue
			}
			p := ref.Value
			switch p.In {
			case "path":
				out["method.request.path."+strings.TrimSuffix(p.Name, "+")] = true
			case "query":
				out["method.request.querystring."+p.Name] = p.Required
			case "header":
				out["method.request.header."+p.Name] = p.Required
			default:
				im.warn("%s.parameters.%s: %s parameters are not supported; ignored", loc, p.Name, p.In)
			}
		}
	}
	for _, name := range templateParams(path) {
		out["method.request.path."+strings.TrimSuffix(name, "+")] = true
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
// method responses and are skipped.
func (im *importer) methodResponses(op *openapi3.Operation) map[string]*plans.MethodResponse {
	if op.Responses == nil {
		return nil
	}
	out := map[string]*plans.MethodResponse{}
	for code, ref := range op.Responses.Map() {
		if plans.ValidateStatusCode("statusCode", code) != nil || ref == nil || ref.Value == nil {
			continue
		}
		mr := &plans.MethodResponse{StatusCode: code}
		for name, h := range ref.Value.Headers {
			if mr.ResponseParameters == nil {
				mr.ResponseParameters = map[string]bool{}
			}
			mr.ResponseParameters["method.response.header."+name] = h != nil && h.Value != nil && h.Value.Required
		}
		for ct, mt := range ref.Value.Content {
			if mt == nil || mt.Schema == nil {
				continue
			}
			if model, ok := strings.CutPrefix(mt.Schema.Ref, "#/components/schemas/"); ok {
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

// awsIntegration is x-amazon-apigateway-integration: the fields tollgate
// reads, as AWS writes them.
type awsIntegration struct {
	Type                string                         `json:"type"`
	URI                 string                         `json:"uri,omitempty"`
	HTTPMethod          string                         `json:"httpMethod,omitempty"`
	PassthroughBehavior string                         `json:"passthroughBehavior,omitempty"`
	RequestParameters   map[string]string              `json:"requestParameters,omitempty"`
	RequestTemplates    map[string]string              `json:"requestTemplates,omitempty"`
	CacheKeyParameters  []string                       `json:"cacheKeyParameters,omitempty"`
	CacheNamespace      string                         `json:"cacheNamespace,omitempty"`
	TimeoutInMillis     *int32                         `json:"timeoutInMillis,omitempty"`
	ConnectionType      string                         `json:"connectionType,omitempty"`
	Responses           map[string]awsIntegrationReply `json:"responses,omitempty"`
}

// awsIntegrationReply is one entry of the integration's responses, keyed
// by its selection pattern ("default" for none).
type awsIntegrationReply struct {
	StatusCode         string            `json:"statusCode"`
	ResponseParameters map[string]string `json:"responseParameters,omitempty"`
	ResponseTemplates  map[string]string `json:"responseTemplates,omitempty"`
	ContentHandling    string            `json:"contentHandling,omitempty"`
}

// integrationFields are the keys of x-amazon-apigateway-integration
// tollgate reads; others are warned about.
var integrationFields = map[string]bool{
	"type": true, "uri": true, "httpMethod": true, "passthroughBehavior": true, "requestParameters": true,
	"requestTemplates": true, "cacheKeyParameters": true, "cacheNamespace": true, "timeoutInMillis": true,
	"connectionType": true, "responses": true,
}

// integration imports an operation's x-amazon-apigateway-integration (nil
// when absent or of a type tollgate cannot serve, with a warning).
func (im *importer) integration(loc, path string, raw any) (*plans.Integration, error) {
	if raw == nil {
		return nil, nil
	}
	var fields map[string]json.RawMessage
	var ai awsIntegration
	if err := remarshal(raw, &fields); err != nil {
		return nil, plans.Invalid(loc, "%s: must be an object", loc)
	}
	if err := remarshal(raw, &ai); err != nil {
		return nil, jsonFieldError(loc, err)
	}
	for _, k := range sortedKeys(fields) {
		if !integrationFields[k] {
			im.warn("%s.%s: not supported by tollgate; ignored", loc, k)
		}
	}
	in := &plans.Integration{Type: strings.ToUpper(ai.Type), HTTPMethod: strings.ToUpper(ai.HTTPMethod), URI: ai.URI,
		PassthroughBehavior: ai.PassthroughBehavior, RequestParameters: ai.RequestParameters, RequestTemplates: ai.RequestTemplates,
		CacheKeyParameters: ai.CacheKeyParameters, CacheNamespace: ai.CacheNamespace, ConnectionType: ai.ConnectionType}
	if ai.TimeoutInMillis != nil {
		in.TimeoutInMillis = *ai.TimeoutInMillis
		if in.TimeoutInMillis == 0 {
			return nil, plans.Invalid(loc+".timeoutInMillis", "%s.timeoutInMillis: must be between %d and %d", loc, plans.MinTimeoutMillis, plans.MaxTimeoutMillis)
		}
	}
	switch in.Type {
	case plans.IntegrationHTTPProxy, plans.IntegrationMock:
	case "":
		return nil, plans.Invalid(loc+".type", "%s.type: is required (http_proxy or mock)", loc)
	default:
		im.warn("%s.type: %s integrations are not supported by tollgate (http_proxy and mock are); the method is imported without an integration", loc, ai.Type)
		return nil, nil
	}
	replies, err := integrationResponses(loc+".responses", ai.Responses)
	if err != nil {
		return nil, err
	}
	in.IntegrationResponses = replies
	in.Normalize()
	if err := in.Validate(); err != nil {
		return nil, located(loc, err)
	}
	return in, nil
}

// integrationResponses keys the integration's responses by status code.
func integrationResponses(loc string, rs map[string]awsIntegrationReply) (map[string]*plans.IntegrationResponse, error) {
	if len(rs) == 0 {
		return nil, nil
	}
	out := map[string]*plans.IntegrationResponse{}
	for _, pattern := range sortedKeys(rs) {
		r := rs[pattern]
		ir := &plans.IntegrationResponse{StatusCode: r.StatusCode, ResponseParameters: r.ResponseParameters,
			ResponseTemplates: r.ResponseTemplates, ContentHandling: r.ContentHandling}
		if pattern != "default" {
			ir.SelectionPattern = pattern
		}
		at := loc + "." + pattern
		if err := ir.Validate(); err != nil {
			return nil, located(at, err)
		}
		if err := plans.CheckResponseParameters("responseParameters", ir.ResponseParameters); err != nil {
			return nil, located(at, err)
		}
		if out[ir.StatusCode] != nil {
			return nil, plans.Invalid(at+".statusCode", "%s.statusCode: another response already answers %s", at, ir.StatusCode)
		}
		out[ir.StatusCode] = ir
	}
	return out, nil
}

// gatewayResponses reads x-amazon-apigateway-gateway-responses.
func (im *importer) gatewayResponses(def *plans.ApiDefinition) error {
	raw, ok := im.doc.Extensions[extGatewayResponses]
	if !ok {
		return nil
	}
	var all map[string]struct {
		StatusCode         json.RawMessage   `json:"statusCode"`
		ResponseParameters map[string]string `json:"responseParameters"`
		ResponseTemplates  map[string]string `json:"responseTemplates"`
	}
	if err := remarshal(raw, &all); err != nil {
		return jsonFieldError(extGatewayResponses, err)
	}
	for _, t := range sortedKeys(all) {
		loc := extGatewayResponses + "." + t
		if !plans.ValidGatewayResponseType(t) {
			im.warn("%s: tollgate does not produce this response type; ignored", loc)
			continue
		}
		r := all[t]
		gr := plans.GatewayResponse{ResponseType: t, StatusCode: statusString(r.StatusCode),
			ResponseParameters: r.ResponseParameters, ResponseTemplates: r.ResponseTemplates}
		if err := gr.Validate(); err != nil {
			return located(loc, err)
		}
		if err := plans.CheckResponseParameters("responseParameters", gr.ResponseParameters); err != nil {
			return located(loc, err)
		}
		if def.GatewayResponses == nil {
			def.GatewayResponses = map[string]plans.GatewayResponse{}
		}
		def.GatewayResponses[t] = gr
	}
	return nil
}

// statusString reads a status code written as a string or a number.
func statusString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n int
	if json.Unmarshal(raw, &n) == nil {
		return strconv.Itoa(n)
	}
	return string(raw)
}

// remarshal decodes an extension value (as kin-openapi holds it) into v.
func remarshal(raw any, v any) error {
	b, err := json.Marshal(raw)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// jsonFieldError is the 400 for an extension value of the wrong shape,
// naming the field below loc.
func jsonFieldError(loc string, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		loc += "." + te.Field
		return plans.Invalid(loc, "%s: expected %s, got JSON %s", loc, te.Type, te.Value)
	}
	return plans.Invalid(loc, "%s: %v", loc, err)
}
