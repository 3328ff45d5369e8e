package plans

import (
	"regexp"
	"slices"
	"strings"
)

// MethodResponse declares a status code a method may answer with and the
// response headers it may carry. ResponseParameters maps
// "method.response.header.<name>" to whether the header is required;
// ResponseModels maps a content type to a model name (stored, not used).
// JSON shape of AWS's MethodResponse.
type MethodResponse struct {
	StatusCode         string            `json:"statusCode"`
	ResponseParameters map[string]bool   `json:"responseParameters,omitempty"`
	ResponseModels     map[string]string `json:"responseModels,omitempty"`
}

// IntegrationResponse maps what an integration answered onto the method's
// response. The gateway honours it for MOCK integrations only (an
// HTTP_PROXY integration passes the upstream's response through, as AWS):
// the response whose SelectionPattern matches the status the MOCK's
// request template chose (or the default response, with an empty
// pattern) gives the status StatusCode, the headers of its
// ResponseParameters from a source EvaluatedSource accepts
// ("method.response.header.Access-Control-Allow-Origin": "'*'") and, as
// the body, its ResponseTemplates["application/json"] with the variables
// of ContextVariables and stageVariables substituted (no other template
// language). JSON shape of AWS's IntegrationResponse.
type IntegrationResponse struct {
	StatusCode         string            `json:"statusCode"`
	SelectionPattern   string            `json:"selectionPattern,omitempty"`
	ResponseParameters map[string]string `json:"responseParameters,omitempty"`
	ResponseTemplates  map[string]string `json:"responseTemplates,omitempty"`
	ContentHandling    string            `json:"contentHandling,omitempty"`
}

// GatewayResponse customises one kind of response the gateway writes
// itself (a 403 for a bad key, a 429, a 504, ...; see GatewayResponseTypes).
// StatusCode, when set, replaces the gateway's status; ResponseParameters
// maps "gatewayresponse.header.<name>" to a source EvaluatedSource
// accepts; ResponseTemplates["application/json"], when set, is the body,
// with the variables of ContextVariables, ErrorContextVariables
// ($context.error.messageString is the message as a JSON string) and
// stageVariables substituted. DefaultResponse is true for a type no
// response was put for (GetGatewayResponse(s) only). JSON shape of AWS's
// GatewayResponse.
type GatewayResponse struct {
	ResponseType       string            `json:"responseType"`
	StatusCode         string            `json:"statusCode,omitempty"`
	ResponseParameters map[string]string `json:"responseParameters,omitempty"`
	ResponseTemplates  map[string]string `json:"responseTemplates,omitempty"`
	DefaultResponse    bool              `json:"defaultResponse"`
}

// Gateway response types tollgate produces. Without a StatusCode each
// answers tollgate's own status for the case (docs/migrating-from-aws.md
// lists them; they differ from AWS's where tollgate answers 404 or 405
// instead of 403). DEFAULT_4XX and
// DEFAULT_5XX apply to every 4xx or 5xx response whose own type has no
// response put. Source: AWS API Gateway developer guide, "Gateway response
// types".
const (
	ResponseDefault4XX                 = "DEFAULT_4XX"
	ResponseDefault5XX                 = "DEFAULT_5XX"
	ResponseThrottled                  = "THROTTLED"
	ResponseQuotaExceeded              = "QUOTA_EXCEEDED"
	ResponseInvalidAPIKey              = "INVALID_API_KEY"
	ResponseAccessDenied               = "ACCESS_DENIED"
	ResponseUnauthorized               = "UNAUTHORIZED"
	ResponseMissingAuthenticationToken = "MISSING_AUTHENTICATION_TOKEN"
	ResponseResourceNotFound           = "RESOURCE_NOT_FOUND"
	ResponseRequestTooLarge            = "REQUEST_TOO_LARGE"
	ResponseIntegrationTimeout         = "INTEGRATION_TIMEOUT"
	ResponseIntegrationFailure         = "INTEGRATION_FAILURE"
	ResponseAPIConfigurationError      = "API_CONFIGURATION_ERROR"
)

// GatewayResponseTypes lists the types PutGatewayResponse accepts, in the
// order GetGatewayResponses lists them.
var GatewayResponseTypes = []string{
	ResponseDefault4XX, ResponseDefault5XX, ResponseThrottled, ResponseQuotaExceeded,
	ResponseInvalidAPIKey, ResponseAccessDenied, ResponseUnauthorized, ResponseMissingAuthenticationToken,
	ResponseResourceNotFound, ResponseRequestTooLarge, ResponseIntegrationTimeout,
	ResponseIntegrationFailure, ResponseAPIConfigurationError,
}

// ValidGatewayResponseType reports whether t is one of GatewayResponseTypes.
func ValidGatewayResponseType(t string) bool {
	for _, v := range GatewayResponseTypes {
		if v == t {
			return true
		}
	}
	return false
}

var statusCodePattern = regexp.MustCompile(`^[1-5][0-9][0-9]$`)

// ValidateStatusCode requires a three-digit HTTP status 100..599 in field.
func ValidateStatusCode(field, code string) error {
	if !statusCodePattern.MatchString(code) {
		return Invalid(field, "%s %q must be an HTTP status code (100 to 599)", field, code)
	}
	return nil
}

// MaxTemplateLen bounds one response or request template, in bytes.
const MaxTemplateLen = 64 << 10

// Validate checks the status code, header names and model names of a
// method response.
func (mr *MethodResponse) Validate() error {
	if err := ValidateStatusCode("statusCode", mr.StatusCode); err != nil {
		return err
	}
	for k := range mr.ResponseParameters {
		if err := ValidateHeaderParam("responseParameters", "method.response.header.", k); err != nil {
			return err
		}
	}
	for ct, model := range mr.ResponseModels {
		if !modelNamePattern.MatchString(model) {
			return Invalid("responseModels", "responseModels[%s]: model name %q must be letters, digits, '.', '_' or '-'", ct, model)
		}
	}
	return nil
}

// modelNamePattern is a model name: what OpenAPI allows as a component
// name (OpenAPI 3.0.3, "Components Object"), so an export can name it.
// AWS's CreateModel asks for alphanumeric names, a subset.
var modelNamePattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,256}$`)

// Validate checks the status code, selection pattern (a regular
// expression), header mappings and templates of an integration response.
func (ir *IntegrationResponse) Validate() error {
	if err := ValidateStatusCode("statusCode", ir.StatusCode); err != nil {
		return err
	}
	if _, err := regexp.Compile(ir.SelectionPattern); err != nil {
		return Invalid("selectionPattern", "selectionPattern %q is not a regular expression: %v", ir.SelectionPattern, err)
	}
	for k, v := range ir.ResponseParameters {
		if err := ValidateHeaderParam("responseParameters", "method.response.header.", k); err != nil {
			return err
		}
		if v == "" {
			return Invalid("responseParameters", "response parameter %q needs a source", k)
		}
	}
	return validateTemplates("responseTemplates", ir.ResponseTemplates)
}

// Validate checks the type, status code, header mappings and templates of
// a gateway response.
func (gr *GatewayResponse) Validate() error {
	if !ValidGatewayResponseType(gr.ResponseType) {
		return Invalid("responseType", "responseType %q is not one of %s", gr.ResponseType, strings.Join(GatewayResponseTypes, ", "))
	}
	if gr.StatusCode != "" {
		if err := ValidateStatusCode("statusCode", gr.StatusCode); err != nil {
			return err
		}
	}
	for k, v := range gr.ResponseParameters {
		if err := ValidateHeaderParam("responseParameters", "gatewayresponse.header.", k); err != nil {
			return err
		}
		if !EvaluatedSource(v) {
			return Invalid("responseParameters", "response parameter %q: source %q must be a 'literal', method.request.{header|querystring|path}.name or stageVariables.name", k, v)
		}
	}
	return validateTemplates("responseTemplates", gr.ResponseTemplates)
}

var headerNamePattern = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$")

// ValidateHeaderParam requires prefix followed by an HTTP header name.
func ValidateHeaderParam(field, prefix, k string) error {
	name, ok := strings.CutPrefix(k, prefix)
	if !ok || !headerNamePattern.MatchString(name) {
		return Invalid(field, "%s key %q must be %s<header name>", field, k, prefix)
	}
	return nil
}

// gatewayOwnedHeaders are the response headers, in lower case, that the
// gateway writes itself: Retry-After, the rate-limit headers (README.md),
// X-Cache and Age of the stage cache, and the framing and hop-by-hop
// headers (RFC 9110 sections 7.6.1 and 8.6, RFC 9112 section 6.1). Every
// x-amzn-* header is the gateway's too (GatewayOwnedHeader).
var gatewayOwnedHeaders = map[string]bool{
	"retry-after": true, "x-ratelimit-limit": true, "x-ratelimit-remaining": true, "x-ratelimit-reset": true,
	"ratelimit": true, "ratelimit-policy": true, "x-cache": true, "age": true,
	"content-length": true, "transfer-encoding": true, "connection": true, "keep-alive": true,
	"proxy-connection": true, "proxy-authenticate": true, "proxy-authorization": true,
	"te": true, "trailer": true, "upgrade": true,
}

// GatewayOwnedHeader reports whether the response header name (any case)
// is one the gateway writes itself: a response mapping may not set it,
// so a 429's Retry-After, the x-amzn-ErrorType and x-amzn-RequestId and
// the rate-limit headers are always the gateway's.
func GatewayOwnedHeader(name string) bool {
	name = strings.ToLower(name)
	return gatewayOwnedHeaders[name] || strings.HasPrefix(name, "x-amzn-")
}

// CheckResponseParameters refuses a header mapping of params (keys
// "method.response.header.<name>" or "gatewayresponse.header.<name>")
// whose name is GatewayOwnedHeader: KindInvalid on field, naming the
// parameter. Admin writes and imports check what they are given; the
// gateway ignores such a mapping stored before the rule.
func CheckResponseParameters(field string, params map[string]string) error {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := CheckResponseParameter(field, k); err != nil {
			return err
		}
	}
	return nil
}

// CheckResponseParameter is CheckResponseParameters for one key.
func CheckResponseParameter(field, key string) error {
	name, ok := MappedHeader(key)
	if ok && GatewayOwnedHeader(name) {
		return Invalid(field, "%s %q: %s is a header the gateway writes itself (Retry-After, x-amzn-*, the rate-limit, framing and hop-by-hop headers); a response cannot set it", field, key, name)
	}
	return nil
}

// MappedHeader returns the header name of a response mapping key
// ("method.response.header.X" or "gatewayresponse.header.X" → "X").
func MappedHeader(key string) (string, bool) {
	if name, ok := strings.CutPrefix(key, "method.response.header."); ok {
		return name, true
	}
	return strings.CutPrefix(key, "gatewayresponse.header.")
}

// IsLiteral reports whether a mapping source is a quoted 'literal'.
func IsLiteral(v string) bool {
	return len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\''
}

// EvaluatedSource reports whether the gateway evaluates a mapping source:
// a 'literal', "method.request.{querystring|header|path}.<name>" or
// "stageVariables.<name>". Gateway responses take only these; an
// integration or MOCK response stores others, which the gateway skips.
func EvaluatedSource(v string) bool {
	if IsLiteral(v) {
		return true
	}
	if name, ok := strings.CutPrefix(v, "stageVariables."); ok {
		return name != ""
	}
	_, _, ok := ParseRequestParameter("method.request.", v)
	return ok
}

func validateTemplates(field string, ts map[string]string) error {
	for ct, t := range ts {
		if ct == "" || len(ct) > 256 || strings.ContainsAny(ct, " \t\r\n") {
			return Invalid(field, "%s: content type %q is not valid", field, ct)
		}
		if len(t) > MaxTemplateLen {
			return Invalid(field, "%s[%s] must be at most %d bytes", field, ct, MaxTemplateLen)
		}
	}
	return nil
}
