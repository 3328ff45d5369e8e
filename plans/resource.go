package plans

import (
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Resource is one node of an API's path tree. Path is the full path
// ("/pets/{petId}"); the root resource has Path "/" and no PathPart.
// ResourceMethods maps an HTTP method (GET, ..., ANY) to its Method. JSON
// shape of AWS's Resource.
type Resource struct {
	ID              string             `json:"id"`
	ParentID        string             `json:"parentId,omitempty"`
	PathPart        string             `json:"pathPart,omitempty"`
	Path            string             `json:"path"`
	ResourceMethods map[string]*Method `json:"resourceMethods,omitempty"`
}

var (
	literalPart = regexp.MustCompile(`^[A-Za-z0-9._\-:@~!$&'()*,;=]+$`)
	paramPart   = regexp.MustCompile(`^\{[A-Za-z0-9._\-]+\+?\}$`)
)

// ValidatePathPart checks one path segment: a literal, "{name}" (one
// segment) or "{name+}" (greedy, the rest of the path, at least one segment).
func ValidatePathPart(p string) error {
	if p == "" {
		return Invalid("pathPart", "pathPart is required")
	}
	if len(p) > MaxNameLen {
		return Invalid("pathPart", "pathPart must be at most %d characters", MaxNameLen)
	}
	if !literalPart.MatchString(p) && !paramPart.MatchString(p) {
		return Invalid("pathPart", "pathPart %q must be a literal segment, {name} or {name+}", p)
	}
	if strings.ContainsAny(p, "{}") && !paramPart.MatchString(p) {
		return Invalid("pathPart", "pathPart %q must be a literal segment, {name} or {name+}", p)
	}
	return nil
}

// IsGreedy reports whether a path part is "{name+}".
func IsGreedy(pathPart string) bool { return strings.HasSuffix(pathPart, "+}") }

// IsParam reports whether a path part is "{name}" or "{name+}".
func IsParam(pathPart string) bool { return strings.HasPrefix(pathPart, "{") }

// ParamName returns "name" for "{name}" and "{name+}", "" for a literal.
func ParamName(pathPart string) string {
	if !IsParam(pathPart) {
		return ""
	}
	return strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(pathPart, "{"), "}"), "+")
}

// JoinPath returns the path of a child with pathPart under parentPath.
func JoinPath(parentPath, pathPart string) string {
	if parentPath == "/" {
		return "/" + pathPart
	}
	return parentPath + "/" + pathPart
}

// HTTP methods a Method may be put on; ANY matches every method.
var httpMethods = map[string]bool{
	"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true,
	"DELETE": true, "OPTIONS": true, "ANY": true,
}

// ValidHTTPMethod reports whether m is GET, HEAD, POST, PUT, PATCH, DELETE,
// OPTIONS or ANY (upper case).
func ValidHTTPMethod(m string) bool { return httpMethods[m] }

// Method is an HTTP method on a resource. AuthorizationType is NONE (the
// default), CUSTOM or COGNITO_USER_POOLS (with AuthorizerID, the API's
// authorizer of the matching type; AuthorizationScopes for a user pool)
// or AWS_IAM: tollgate cannot run authorizers or check IAM signatures, so
// a method of any type but NONE is closed (Closed). APIKeyRequired
// defaults to false, as AWS. RequestParameters maps
// "method.request.{querystring|header|path}.name" to whether it is required.
// MethodResponses are the method's declared responses by status code.
type Method struct {
	HTTPMethod          string                     `json:"httpMethod"`
	AuthorizationType   string                     `json:"authorizationType"`
	AuthorizerID        string                     `json:"authorizerId,omitempty"`
	AuthorizationScopes []string                   `json:"authorizationScopes,omitempty"`
	APIKeyRequired      bool                       `json:"apiKeyRequired"`
	RequestParameters   map[string]bool            `json:"requestParameters,omitempty"`
	MethodResponses     map[string]*MethodResponse `json:"methodResponses,omitempty"`
	MethodIntegration   *Integration               `json:"methodIntegration,omitempty"`
}

// Normalize fills the default a method is stored with (authorizationType
// NONE) and drops what its type does not use: the authorizer of a NONE or
// AWS_IAM method, the scopes of any but COGNITO_USER_POOLS (AWS applies
// them to user pools only).
func (m *Method) Normalize() {
	if m.AuthorizationType == "" {
		m.AuthorizationType = AuthorizationNone
	}
	if m.AuthorizationType == AuthorizationNone || m.AuthorizationType == AuthorizationIAM {
		m.AuthorizerID = ""
	}
	if m.AuthorizationType != AuthorizationCognito || len(m.AuthorizationScopes) == 0 {
		m.AuthorizationScopes = nil
	}
}

// Closed reports whether the gateway refuses every call of m: its
// authorization is one tollgate cannot perform (anything but NONE).
func (m *Method) Closed() bool {
	return m.AuthorizationType != "" && m.AuthorizationType != AuthorizationNone
}

// Validate checks the method name, authorizationType (empty means NONE;
// CUSTOM and COGNITO_USER_POOLS need an authorizerId), parameter names
// and method responses (each stored under its own status code). It does
// not change m.
func (m *Method) Validate() error {
	if !ValidHTTPMethod(m.HTTPMethod) {
		return Invalid("httpMethod", "httpMethod %q is not one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, ANY", m.HTTPMethod)
	}
	switch m.AuthorizationType {
	case "", AuthorizationNone, AuthorizationIAM:
	case AuthorizationCustom, AuthorizationCognito:
		if m.AuthorizerID == "" {
			return Invalid("authorizerId", "authorizerId is required for authorizationType %s", m.AuthorizationType)
		}
	default:
		return Invalid("authorizationType", "authorizationType %q is not one of NONE, CUSTOM, COGNITO_USER_POOLS, AWS_IAM", m.AuthorizationType)
	}
	for _, s := range m.AuthorizationScopes {
		if s == "" || len(s) > MaxNameLen {
			return Invalid("authorizationScopes", "authorizationScopes must be scopes of 1 to %d characters", MaxNameLen)
		}
	}
	for p := range m.RequestParameters {
		if _, _, ok := ParseRequestParameter("method.request.", p); !ok {
			return Invalid("requestParameters", "request parameter %q must be method.request.{querystring|header|path}.name", p)
		}
	}
	for code, mr := range m.MethodResponses {
		if mr == nil || mr.StatusCode != code {
			return Invalid("methodResponses", "method response %q must carry statusCode %q", code, code)
		}
		if err := mr.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// CheckPathParameters requires every path parameter of params
// ("method.request.path.<name>") that before does not have to name a
// {name} or {name+} part of the resource path: a parameter the path does
// not have can never be set, and an export could not declare it. before
// nil checks them all. Errors: KindInvalid on "requestParameters".
func CheckPathParameters(path string, params, before map[string]bool) error {
	have := map[string]bool{}
	for part := range strings.SplitSeq(path, "/") {
		have[ParamName(part)] = true
	}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		loc, name, ok := ParseRequestParameter("method.request.", k)
		if _, old := before[k]; !ok || loc != "path" || old || have[name] {
			continue
		}
		return Invalid("requestParameters", "request parameter %q: the resource path %s has no {%s}", k, path, name)
	}
	return nil
}

// ParseRequestParameter splits "<prefix>{querystring|header|path}.name" into
// its location and name.
func ParseRequestParameter(prefix, p string) (location, name string, ok bool) {
	rest, found := strings.CutPrefix(p, prefix)
	if !found {
		return "", "", false
	}
	location, name, found = strings.Cut(rest, ".")
	if !found || name == "" {
		return "", "", false
	}
	switch location {
	case "querystring", "header", "path":
		return location, name, true
	}
	return "", "", false
}
