package plans

import (
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Integration types tollgate supports.
const (
	IntegrationHTTPProxy = "HTTP_PROXY" // forward the request to Uri
	IntegrationMock      = "MOCK"       // answer 200 {} without an upstream
)

// Integration timeout bounds and default, in milliseconds (AWS's 50..29000).
const (
	MinTimeoutMillis     = 50
	MaxTimeoutMillis     = 29000
	DefaultTimeoutMillis = 29000
)

// Integration is what a Method calls. Uri may contain "{name}" path
// parameters and "${stageVariables.x}". CacheKeyParameters lists
// "method.request.{querystring|header|path}.name" values that are part of
// the response cache key. RequestParameters maps
// "integration.request.{querystring|header|path}.name" to a source
// ("method.request.….name", "stageVariables.x" or a 'literal'). JSON shape
// of AWS's Integration.
type Integration struct {
	Type                string            `json:"type"`
	HTTPMethod          string            `json:"httpMethod,omitempty"`
	URI                 string            `json:"uri,omitempty"`
	TimeoutInMillis     int32             `json:"timeoutInMillis"`
	CacheKeyParameters  []string          `json:"cacheKeyParameters"`
	CacheNamespace      string            `json:"cacheNamespace,omitempty"`
	RequestParameters   map[string]string `json:"requestParameters,omitempty"`
	PassthroughBehavior string            `json:"passthroughBehavior,omitempty"`
	ConnectionType      string            `json:"connectionType,omitempty"`
	// RequestTemplates maps a content type to a template. For MOCK, the
	// application/json template's "statusCode" chooses the integration
	// response (see MockStatus); other templates are stored only.
	RequestTemplates map[string]string `json:"requestTemplates,omitempty"`
	// IntegrationResponses are keyed by status code (see IntegrationResponse).
	IntegrationResponses map[string]*IntegrationResponse `json:"integrationResponses,omitempty"`
}

// Normalize fills the defaults an integration is stored with: httpMethod
// ANY for HTTP_PROXY, timeout 29000 ms, empty cacheKeyParameters,
// connectionType INTERNET.
func (in *Integration) Normalize() {
	if in.Type == IntegrationHTTPProxy && in.HTTPMethod == "" {
		in.HTTPMethod = "ANY"
	}
	if in.TimeoutInMillis == 0 {
		in.TimeoutInMillis = DefaultTimeoutMillis
	}
	if in.CacheKeyParameters == nil {
		in.CacheKeyParameters = []string{}
	}
	if in.ConnectionType == "" {
		in.ConnectionType = "INTERNET"
	}
}

// Validate checks type, uri, httpMethod, timeout and parameter names; a
// field Normalize would fill is valid when empty. It does not change in.
// HTTP, AWS and AWS_PROXY are refused naming the type.
func (in *Integration) Validate() error {
	switch in.Type {
	case IntegrationHTTPProxy:
		if in.HTTPMethod != "" && !ValidHTTPMethod(in.HTTPMethod) {
			return Invalid("httpMethod", "integration httpMethod %q is not valid", in.HTTPMethod)
		}
		if err := validateIntegrationURI(in.URI); err != nil {
			return err
		}
	case IntegrationMock:
	case "":
		return Invalid("type", "type is required: HTTP_PROXY or MOCK")
	default:
		return Invalid("type", "integration type %q is not supported: use HTTP_PROXY or MOCK", in.Type)
	}
	if in.TimeoutInMillis != 0 && (in.TimeoutInMillis < MinTimeoutMillis || in.TimeoutInMillis > MaxTimeoutMillis) {
		return Invalid("timeoutInMillis", "timeoutInMillis must be between %d and %d", MinTimeoutMillis, MaxTimeoutMillis)
	}
	for _, p := range in.CacheKeyParameters {
		if _, _, ok := ParseRequestParameter("method.request.", p); !ok {
			return Invalid("cacheKeyParameters", "cache key parameter %q must be method.request.{querystring|header|path}.name", p)
		}
	}
	for k, v := range in.RequestParameters {
		loc, name, ok := ParseRequestParameter("integration.request.", k)
		if !ok {
			return Invalid("requestParameters", "request parameter %q must be integration.request.{querystring|header|path}.name", k)
		}
		if loc == "header" && strings.EqualFold(name, "host") {
			return Invalid("requestParameters", "request parameter %q may not set the Host header", k)
		}
		if v == "" {
			return Invalid("requestParameters", "request parameter %q needs a source", k)
		}
	}
	if err := in.validateResponses(); err != nil {
		return err
	}
	if in.ConnectionType != "" && in.ConnectionType != "INTERNET" {
		return Invalid("connectionType", "connectionType %q is not supported: only INTERNET", in.ConnectionType)
	}
	return nil
}

func validateIntegrationURI(uri string) error {
	if uri == "" {
		return Invalid("uri", "uri is required for HTTP_PROXY integrations")
	}
	// A stage variable may supply the host; check the shape after
	// substituting a placeholder.
	probe := strings.NewReplacer("${stageVariables.", "x", "}", "x").Replace(uri)
	u, err := url.Parse(probe)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Invalid("uri", "uri %q must be an absolute http or https URL", uri)
	}
	return nil
}

// validateResponses checks the request templates and integration responses
// (each stored under its own status code, each with its own
// selectionPattern: at most one default response without one). An export
// keys the responses by pattern, so two with one pattern could not be
// imported back.
func (in *Integration) validateResponses() error {
	if err := validateTemplates("requestTemplates", in.RequestTemplates); err != nil {
		return err
	}
	byPattern := map[string]string{}
	for _, code := range slices.Sorted(maps.Keys(in.IntegrationResponses)) {
		ir := in.IntegrationResponses[code]
		if ir == nil || ir.StatusCode != code {
			return Invalid("integrationResponses", "integration response %q must carry statusCode %q", code, code)
		}
		if err := ir.Validate(); err != nil {
			return err
		}
		if other, ok := byPattern[ir.SelectionPattern]; ok {
			return Invalid("selectionPattern", "integration responses %s and %s have the same selectionPattern %q: each needs its own (one default response has none)", other, code, ir.SelectionPattern)
		}
		byPattern[ir.SelectionPattern] = code
	}
	return nil
}

var mockStatusPattern = regexp.MustCompile(`"statusCode"\s*:\s*"?([1-5][0-9][0-9])`)

// MockStatus returns the status a MOCK integration's application/json
// request template asks for ({"statusCode": 200}, as AWS's console
// writes it), or "200" when there is none.
func (in *Integration) MockStatus() string {
	if m := mockStatusPattern.FindStringSubmatch(in.RequestTemplates["application/json"]); m != nil {
		return m[1]
	}
	return "200"
}

// SelectResponse returns the integration response for status: the first
// (by status code) whose SelectionPattern matches status in full, else the
// default response (empty pattern), else nil.
func (in *Integration) SelectResponse(status string) *IntegrationResponse {
	var def *IntegrationResponse
	for _, code := range slices.Sorted(maps.Keys(in.IntegrationResponses)) {
		ir := in.IntegrationResponses[code]
		if ir.SelectionPattern == "" {
			if def == nil {
				def = ir
			}
			continue
		}
		if re, err := regexp.Compile("^(?:" + ir.SelectionPattern + ")$"); err == nil && re.MatchString(status) {
			return ir
		}
	}
	return def
}
