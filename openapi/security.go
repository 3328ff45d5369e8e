package openapi

import (
	"maps"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"tollgate/plans"
)

// Extensions of a security scheme, and the scheme an IAM-secured method's
// requirement names in an export (as AWS's exports name it).
const (
	extAuthType   = "x-amazon-apigateway-authtype"
	extAuthorizer = "x-amazon-apigateway-authorizer"
	sigv4Scheme   = "sigv4"
	authTypeSigv4 = "awsSigv4"
)

// awsAuthorizer is x-amazon-apigateway-authorizer, as AWS's import reads
// it: type token, request or cognito_user_pools (any case).
type awsAuthorizer struct {
	Type                         string   `json:"type"`
	AuthorizerURI                string   `json:"authorizerUri,omitempty"`
	AuthorizerCredentials        string   `json:"authorizerCredentials,omitempty"`
	IdentitySource               string   `json:"identitySource,omitempty"`
	IdentityValidationExpression string   `json:"identityValidationExpression,omitempty"`
	AuthorizerResultTTLInSeconds *int32   `json:"authorizerResultTtlInSeconds,omitempty"`
	ProviderARNs                 []string `json:"providerARNs,omitempty"`
}

// security reads the operation's own security requirements into m (API
// Gateway ignores the document's, see rootSecurity): a requirement
// naming an apiKey scheme in the x-api-key header requires a key; one
// naming a scheme with x-amazon-apigateway-authorizer secures the method
// with that authorizer (CUSTOM or COGNITO_USER_POOLS), one whose
// x-amazon-apigateway-authtype is awsSigv4 with AWS_IAM. tollgate cannot
// run either, so such a method is imported closed, with a warning. A
// method takes one authorizer (the first by requirement and name; the
// others are a warning); a scheme that is none of these (OAuth 2, HTTP
// basic, an API key in another header) is ignored with a warning, as API
// Gateway's import ignores it.
func (im *importer) security(at loc, m *plans.Method, op *openapi3.Operation) error {
	if op.Security == nil {
		return nil
	}
	at = at.at("security")
	var chosen string
	for _, req := range *op.Security {
		for _, name := range sortedKeys(req) {
			if im.isAPIKeyScheme(name) {
				m.APIKeyRequired = true
				continue
			}
			if im.foreignScheme(name) {
				im.warn(at, "security scheme %q is neither an x-api-key apiKey scheme nor an API Gateway authorizer: "+
					"API Gateway's import ignores it, and so does tollgate: the method is open to every caller it otherwise admits", name)
				continue
			}
			authType, a, err := im.scheme(name)
			if err != nil {
				return errorf(at, "%v", err)
			}
			if chosen != "" {
				if chosen != name {
					im.warn(at, "security scheme %q ignored: a method takes one authorizer, and %q secures it", name, chosen)
				}
				continue
			}
			chosen, m.AuthorizationType = name, authType
			if a == nil {
				im.warn(at, "security scheme %q is AWS_IAM authorization, which tollgate cannot check: the method is imported closed "+
					"(every call answers 403) until update-method sets authorizationType NONE", name)
				continue
			}
			m.AuthorizerID = a.Name
			if len(req[name]) > 0 {
				m.AuthorizationScopes = slices.Clone(req[name])
			}
			kind := "a Lambda " + a.Type + " authorizer"
			if a.Type == plans.AuthorizerCognito {
				kind = "a Cognito user pool authorizer"
			}
			im.warn(at, "security scheme %q is %s, which tollgate cannot run: the method is imported closed "+
				"(every call answers 401) until update-method sets authorizationType NONE", name, kind)
		}
	}
	return nil
}

// isAPIKeyScheme reports whether the named security scheme is an apiKey
// scheme read from the x-api-key header without an API Gateway authorizer.
func (im *importer) isAPIKeyScheme(name string) bool {
	ref := im.doc.Components.SecuritySchemes[name]
	if ref == nil || ref.Value == nil {
		return false
	}
	s := ref.Value
	if s.Type != "apiKey" || s.In != "header" || !strings.EqualFold(s.Name, apiKeyHeader) {
		return false
	}
	_, authorizer := s.Extensions[extAuthorizer]
	authType, _ := s.Extensions[extAuthType].(string)
	return !authorizer && (authType == "" || strings.EqualFold(authType, "apiKey"))
}

// foreignScheme reports whether the named security scheme is defined but
// has no API Gateway extension: neither an authorizer nor an auth type.
func (im *importer) foreignScheme(name string) bool {
	ref := im.doc.Components.SecuritySchemes[name]
	if ref == nil || ref.Value == nil {
		return false
	}
	authType, _ := ref.Value.Extensions[extAuthType].(string)
	_, authorizer := ref.Value.Extensions[extAuthorizer]
	return !authorizer && authType == ""
}

// scheme reads the named security scheme as API Gateway does: the
// method's authorizationType, and the authorizer (nil for AWS_IAM), kept
// in im.authorizers under the scheme's name.
func (im *importer) scheme(name string) (string, *plans.Authorizer, error) {
	ref := im.doc.Components.SecuritySchemes[name]
	if ref == nil || ref.Value == nil {
		return "", nil, errorf(loc{"components", "securitySchemes", name}, "security scheme %q is not defined", name)
	}
	s := ref.Value
	authType, _ := s.Extensions[extAuthType].(string)
	raw, ok := s.Extensions[extAuthorizer]
	if !ok {
		if strings.EqualFold(authType, authTypeSigv4) {
			return plans.AuthorizationIAM, nil, nil
		}
		return "", nil, errorf(loc{"components", "securitySchemes", name},
			"security scheme %q: %s %q needs %s", name, extAuthType, authType, extAuthorizer)
	}
	if a := im.authorizers[name]; a != nil {
		return a.MethodAuthorization(), a, nil
	}
	at := loc{"components", "securitySchemes", name, extAuthorizer}
	var x awsAuthorizer
	if err := remarshal(raw, &x); err != nil {
		return "", nil, jsonFieldError(at, err)
	}
	a := &plans.Authorizer{Name: name, Type: strings.ToUpper(x.Type), ProviderARNs: x.ProviderARNs, AuthType: authType,
		AuthorizerURI: x.AuthorizerURI, AuthorizerCredentials: x.AuthorizerCredentials, IdentitySource: x.IdentitySource,
		IdentityValidationExpression: x.IdentityValidationExpression, AuthorizerResultTTLInSeconds: x.AuthorizerResultTTLInSeconds}
	if a.Type == plans.AuthorizerToken && a.IdentitySource == "" && s.In == "header" && s.Name != "" {
		a.IdentitySource = "method.request.header." + s.Name // a TOKEN authorizer reads the scheme's header
	}
	a.Normalize()
	if err := a.Validate(); err != nil {
		return "", nil, located(at, err)
	}
	if im.authorizers == nil {
		im.authorizers = map[string]*plans.Authorizer{}
	}
	im.authorizers[name] = a
	return a.MethodAuthorization(), a, nil
}

// schemes reads every security scheme with an
// x-amazon-apigateway-authorizer as an authorizer of the API, as API
// Gateway's import creates one whether or not an operation names it.
func (im *importer) schemes() error {
	for _, name := range sortedKeys(im.doc.Components.SecuritySchemes) {
		if ref := im.doc.Components.SecuritySchemes[name]; ref != nil && ref.Value != nil {
			if _, ok := ref.Value.Extensions[extAuthorizer]; ok {
				if _, _, err := im.scheme(name); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// definitionAuthorizers returns the authorizers the operations named, by
// name.
func (im *importer) definitionAuthorizers() []plans.Authorizer {
	var out []plans.Authorizer
	for _, name := range slices.Sorted(maps.Keys(im.authorizers)) {
		out = append(out, *im.authorizers[name])
	}
	return out
}

// exportSecurity writes m's security requirement (one requirement naming
// the API key scheme, the authorizer's scheme with its scopes, or
// sigv4), declaring the schemes it names.
func exportSecurity(doc *openapi3.T, m *plans.Method, authorizers map[string]*plans.Authorizer) *openapi3.SecurityRequirements {
	req := openapi3.SecurityRequirement{}
	if m.APIKeyRequired {
		req[apiKeyScheme] = []string{}
		declareScheme(doc, apiKeyScheme, &openapi3.SecurityScheme{Type: "apiKey", Name: apiKeyHeader, In: "header"})
	}
	switch m.AuthorizationType {
	case plans.AuthorizationIAM:
		req[sigv4Scheme] = []string{}
		declareScheme(doc, sigv4Scheme, &openapi3.SecurityScheme{Type: "apiKey", Name: "Authorization", In: "header",
			Extensions: map[string]any{extAuthType: authTypeSigv4}})
	case plans.AuthorizationCustom, plans.AuthorizationCognito:
		scopes := m.AuthorizationScopes
		if scopes == nil {
			scopes = []string{}
		}
		req[m.AuthorizerID] = scopes
		if a := authorizers[m.AuthorizerID]; a != nil {
			declareScheme(doc, a.Name, authorizerScheme(a))
		}
	}
	if len(req) == 0 {
		return nil
	}
	return &openapi3.SecurityRequirements{req}
}

// declareScheme adds a security scheme to doc's components.
func declareScheme(doc *openapi3.T, name string, s *openapi3.SecurityScheme) {
	if doc.Components.SecuritySchemes == nil {
		doc.Components.SecuritySchemes = openapi3.SecuritySchemes{}
	}
	doc.Components.SecuritySchemes[name] = &openapi3.SecuritySchemeRef{Value: s}
}

// authorizerScheme is the security scheme of an authorizer, as AWS's
// exports write it: an apiKey scheme in the header the authorizer reads
// (a TOKEN's identity header, else Authorization) with
// x-amazon-apigateway-authtype (when the authorizer has one) and
// x-amazon-apigateway-authorizer. It is written with or without the
// export's extensions: an import of the document must keep the method
// closed.
func authorizerScheme(a *plans.Authorizer) *openapi3.SecurityScheme {
	header := "Authorization"
	if h, ok := strings.CutPrefix(a.IdentitySource, "method.request.header."); ok && a.Type == plans.AuthorizerToken {
		header = h
	}
	ext := map[string]any{extAuthorizer: awsAuthorizer{Type: strings.ToLower(a.Type), AuthorizerURI: a.AuthorizerURI,
		AuthorizerCredentials: a.AuthorizerCredentials, IdentitySource: a.IdentitySource,
		IdentityValidationExpression: a.IdentityValidationExpression, AuthorizerResultTTLInSeconds: a.AuthorizerResultTTLInSeconds,
		ProviderARNs: a.ProviderARNs}}
	if a.AuthType != "" {
		ext[extAuthType] = a.AuthType
	}
	return &openapi3.SecurityScheme{Type: "apiKey", Name: header, In: "header", Extensions: ext}
}
