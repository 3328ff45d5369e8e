package openapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"tollgate/plans"
)

// awsIntegration is x-amazon-apigateway-integration: the fields tollgate
// reads and writes, as AWS writes them.
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
// when absent or of a type tollgate cannot serve, with a warning). A
// mapping, cache key parameter or integration response tollgate cannot
// honour is skipped with a warning; what remains must be valid.
func (im *importer) integration(at loc, raw any) (*plans.Integration, error) {
	if raw == nil {
		return nil, nil
	}
	var obj map[string]any
	if err := remarshal(raw, &obj); err != nil || obj == nil {
		return nil, errorf(at, "must be an object")
	}
	for _, k := range sortedKeys(obj) {
		if !integrationFields[k] {
			im.warn(at.at(k), "not supported by tollgate; ignored")
		}
	}
	im.keepStrings(at, obj, "requestParameters", "requestTemplates")
	if replies, ok := obj["responses"].(map[string]any); ok {
		for pattern, reply := range replies {
			if r, ok := reply.(map[string]any); ok {
				im.keepStrings(at.at("responses", pattern), r, "responseParameters", "responseTemplates")
				statusAsString(r)
			}
		}
	}
	var ai awsIntegration
	if err := remarshal(obj, &ai); err != nil {
		return nil, jsonFieldError(at, err)
	}
	in := &plans.Integration{Type: strings.ToUpper(ai.Type), HTTPMethod: strings.ToUpper(ai.HTTPMethod), URI: ai.URI,
		PassthroughBehavior: ai.PassthroughBehavior, CacheNamespace: ai.CacheNamespace, ConnectionType: ai.ConnectionType,
		RequestTemplates: ai.RequestTemplates}
	switch in.Type {
	case plans.IntegrationHTTPProxy, plans.IntegrationMock:
	case "":
		return nil, errorf(at.at("type"), "is required (http_proxy or mock)")
	default:
		im.warn(at.at("type"), "%s integrations are not supported by tollgate (http_proxy and mock are); the method is imported without an integration", ai.Type)
		return nil, nil
	}
	if !strings.EqualFold(ai.ConnectionType, "") && !strings.EqualFold(ai.ConnectionType, "INTERNET") {
		im.warn(at.at("connectionType"), "%s integrations are not supported by tollgate (INTERNET is); the method is imported without an integration", ai.ConnectionType)
		return nil, nil
	}
	if ai.TimeoutInMillis != nil {
		switch in.TimeoutInMillis = *ai.TimeoutInMillis; {
		case in.TimeoutInMillis < plans.MinTimeoutMillis:
			return nil, errorf(at.at("timeoutInMillis"), "must be between %d and %d", plans.MinTimeoutMillis, plans.MaxTimeoutMillis)
		case in.TimeoutInMillis > plans.MaxTimeoutMillis:
			im.warn(at.at("timeoutInMillis"), "%d is more than tollgate's longest integration timeout; %d is used", in.TimeoutInMillis, plans.MaxTimeoutMillis)
			in.TimeoutInMillis = plans.MaxTimeoutMillis
		}
	}
	in.RequestParameters = im.requestMappings(at.at("requestParameters"), ai.RequestParameters)
	in.CacheKeyParameters = im.cacheKeyParameters(at.at("cacheKeyParameters"), ai.CacheKeyParameters)
	replies, err := im.integrationResponses(at.at("responses"), in.Type, ai.Responses)
	if err != nil {
		return nil, err
	}
	in.IntegrationResponses = replies
	in.Normalize()
	if err := in.Validate(); err != nil {
		return nil, located(at, err)
	}
	return in, nil
}

// keepStrings drops from each of obj's objects named by keys the values
// that are not strings, with a warning naming each (a YAML true, false or
// number written where API Gateway expects a string).
func (im *importer) keepStrings(at loc, obj map[string]any, keys ...string) {
	for _, key := range keys {
		m, ok := obj[key].(map[string]any)
		if !ok {
			continue
		}
		for _, k := range sortedKeys(m) {
			if _, ok := m[k].(string); !ok {
				im.warn(at.at(key, k), "%v is a %s, not a string; ignored (quote it: \"'%v'\" is the literal)", m[k], jsonKind(m[k]), m[k])
				delete(m, k)
			}
		}
	}
}

// statusAsString turns obj's statusCode written as a number into a string.
func statusAsString(obj map[string]any) {
	if n, ok := obj["statusCode"].(float64); ok {
		obj["statusCode"] = strconv.FormatFloat(n, 'f', -1, 64)
	}
}

func jsonKind(v any) string {
	switch v.(type) {
	case bool:
		return "boolean"
	case float64, int, int64, uint64:
		return "number"
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "list"
	}
	return fmt.Sprintf("%T", v)
}

// requestMappings returns the integration request parameters tollgate
// can store: "integration.request.{querystring|header|path}.name" (not
// the Host header) with a source; the others are skipped with a warning.
// A source the gateway does not evaluate (anything but a 'literal', a
// method.request.{querystring|header|path}.name or a stageVariables.name)
// is kept, as PutIntegration keeps it, with a warning: the gateway does
// not send that parameter.
func (im *importer) requestMappings(at loc, out map[string]string) map[string]string {
	for _, k := range sortedKeys(out) {
		v := out[k]
		loc, name, ok := plans.ParseRequestParameter("integration.request.", k)
		switch {
		case !ok:
			im.warn(at.at(k), "only integration.request.{querystring|header|path}.name can be mapped; ignored")
		case loc == "header" && strings.EqualFold(name, "host"):
			im.warn(at.at(k), "the upstream's Host header comes from the integration uri; ignored")
		case v == "":
			im.warn(at.at(k), "the mapping has no source; ignored")
		default:
			if !plans.EvaluatedSource(v) {
				im.warn(at.at(k), "tollgate does not evaluate the source %q (%s): the parameter is not sent", v, evaluatedSources)
			}
			continue
		}
		delete(out, k)
	}
	return out
}

// evaluatedSources names the sources plans.EvaluatedSource accepts.
const evaluatedSources = "it evaluates 'literal', method.request.{querystring|header|path}.name and stageVariables.name"

// cacheKeyParameters keeps the method.request.{querystring|header|path}
// parameters of ps; the others are skipped with a warning.
func (im *importer) cacheKeyParameters(at loc, ps []string) []string {
	var out []string
	for i, p := range ps {
		if _, _, ok := plans.ParseRequestParameter("method.request.", p); !ok {
			im.warn(at.at(index(i)), "cache key parameter %q is not method.request.{querystring|header|path}.name; ignored", p)
			continue
		}
		out = append(out, p)
	}
	return out
}

// integrationResponses keys the integration's responses by status code.
// A response tollgate cannot keep (a selection pattern Go's regexp
// cannot read, a status code an earlier response answers: the default
// one, then the others by pattern) and a header mapping it cannot honour
// are skipped with a warning; a status code that is not one is an error.
func (im *importer) integrationResponses(at loc, typ string, rs map[string]awsIntegrationReply) (map[string]*plans.IntegrationResponse, error) {
	if len(rs) == 0 {
		return nil, nil
	}
	out := map[string]*plans.IntegrationResponse{}
	patterns := sortedKeys(rs)
	if i := slices.Index(patterns, "default"); i > 0 {
		patterns = append(append([]string{"default"}, patterns[:i]...), patterns[i+1:]...)
	}
	for _, pattern := range patterns {
		r, rat := rs[pattern], at.at(pattern)
		ir := &plans.IntegrationResponse{StatusCode: r.StatusCode, ContentHandling: r.ContentHandling, ResponseTemplates: r.ResponseTemplates}
		if err := plans.ValidateStatusCode("statusCode", ir.StatusCode); err != nil {
			return nil, located(rat, err)
		}
		if pattern != "default" {
			ir.SelectionPattern = pattern
		}
		if _, err := regexp.Compile(ir.SelectionPattern); err != nil {
			im.warn(rat, "the selection pattern is not a regular expression tollgate can read (Go's RE2 syntax): %v; response ignored", err)
			continue
		}
		if other := out[ir.StatusCode]; other != nil {
			im.warn(rat.at("statusCode"), "the response for selection pattern %q already answers %s; response ignored", other.SelectionPattern, ir.StatusCode)
			continue
		}
		use := proxyResponse
		if typ == plans.IntegrationMock {
			use = mockResponse
			im.checkTemplate(rat.at("responseTemplates", "application/json"), ir.ResponseTemplates["application/json"], false)
		}
		ir.ResponseParameters = im.responseMappings(rat.at("responseParameters"), use, r.ResponseParameters)
		if err := ir.Validate(); err != nil {
			return nil, located(rat, err)
		}
		out[ir.StatusCode] = ir
	}
	return out, nil
}

// responseUse is what a header mapping of a response is for.
type responseUse int

const (
	proxyResponse   responseUse = iota // an HTTP_PROXY integration response: stored only
	mockResponse                       // a MOCK integration response: served
	gatewayResponse                    // a gateway response: served
)

// responseMappings keeps the header mappings of an integration response
// or gateway response tollgate can store: keys <prefix><header name> of
// headers the gateway does not write itself, with a source, and for a
// gateway response one the gateway evaluates (plans.EvaluatedSource); the
// others are skipped with a warning. A MOCK response's mapping from a
// source the gateway does not evaluate is kept, as
// PutIntegrationResponse keeps it, with a warning.
func (im *importer) responseMappings(at loc, use responseUse, m map[string]string) map[string]string {
	prefix := "method.response.header."
	if use == gatewayResponse {
		prefix = "gatewayresponse.header."
	}
	for _, k := range sortedKeys(m) {
		v := m[k]
		name, _ := strings.CutPrefix(k, prefix)
		switch {
		case plans.ValidateHeaderParam("responseParameters", prefix, k) != nil:
			im.warn(at.at(k), "a response parameter must be %s<header name>; ignored", prefix)
		case plans.GatewayOwnedHeader(name):
			im.warn(at.at(k), "%s is a header the gateway writes itself (Retry-After, x-amzn-*, the rate-limit, framing and hop-by-hop headers); ignored", name)
		case v == "":
			im.warn(at.at(k), "the mapping has no source; ignored")
		case use == gatewayResponse && !plans.EvaluatedSource(v):
			im.warn(at.at(k), "tollgate does not evaluate the source %q (%s); ignored", v, evaluatedSources)
		default:
			if use == mockResponse && !plans.EvaluatedSource(v) {
				im.warn(at.at(k), "tollgate does not evaluate the source %q (%s): the header is not sent", v, evaluatedSources)
			}
			continue
		}
		delete(m, k)
	}
	return m
}

// checkTemplate warns about what the gateway serves as written in the
// application/json template of a MOCK integration response or (when
// gatewayResponse) a gateway response: variables it does not know and
// template language.
func (im *importer) checkTemplate(at loc, template string, gatewayResponse bool) {
	if unknown := plans.UnknownTemplateVariables(template, gatewayResponse); len(unknown) > 0 {
		im.warn(at, "tollgate does not substitute %s (docs/migrating-from-aws.md lists the variables it does); served as written", "$"+strings.Join(unknown, ", $"))
	}
	if directives := plans.TemplateDirectives(template); len(directives) > 0 {
		im.warn(at, "tollgate does not evaluate template language (%s); served as written", strings.Join(directives, ", "))
	}
}

// gatewayResponses reads x-amazon-apigateway-gateway-responses; a type
// tollgate does not produce and a mapping it cannot honour are skipped
// with a warning.
func (im *importer) gatewayResponses(def *plans.ApiDefinition) error {
	raw, ok := im.doc.Extensions[extGatewayResponses]
	if !ok {
		return nil
	}
	var objs map[string]any
	if err := remarshal(raw, &objs); err != nil {
		return jsonFieldError(loc{extGatewayResponses}, err)
	}
	for t, v := range objs {
		if obj, ok := v.(map[string]any); ok {
			im.keepStrings(loc{extGatewayResponses, t}, obj, "responseParameters", "responseTemplates")
			statusAsString(obj)
		}
	}
	var all map[string]gatewayReply
	if err := remarshal(objs, &all); err != nil {
		return jsonFieldError(loc{extGatewayResponses}, err)
	}
	for _, t := range sortedKeys(all) {
		at := loc{extGatewayResponses, t}
		if !plans.ValidGatewayResponseType(t) {
			im.warn(at, "tollgate does not produce this response type; ignored")
			continue
		}
		r := all[t]
		gr := plans.GatewayResponse{ResponseType: t, StatusCode: r.StatusCode, ResponseTemplates: r.ResponseTemplates,
			ResponseParameters: im.responseMappings(at.at("responseParameters"), gatewayResponse, r.ResponseParameters)}
		im.checkTemplate(at.at("responseTemplates", "application/json"), gr.ResponseTemplates["application/json"], true)
		if err := gr.Validate(); err != nil {
			return located(at, err)
		}
		if def.GatewayResponses == nil {
			def.GatewayResponses = map[string]plans.GatewayResponse{}
		}
		def.GatewayResponses[t] = gr
	}
	return nil
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
// naming the field below at.
func jsonFieldError(at loc, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		at = at.at(te.Field)
		return errorf(at, "expected %s, got JSON %s", te.Type, te.Value)
	}
	return errorf(at, "%v", err)
}
