package plans

import (
	"regexp"
	"slices"
	"strings"
)

// Authorizer is an API's authorizer, as API Gateway models it: a Lambda
// function (Type TOKEN or REQUEST, AuthorizerURI naming it) or a Cognito
// user pool (COGNITO_USER_POOLS, ProviderARNs) that decides whether a call
// may reach a method whose authorizationType is CUSTOM or
// COGNITO_USER_POOLS. tollgate keeps authorizers so that an API moves
// over and back unchanged, but cannot run them: a method secured by one
// is closed (Method.Closed). AuthType is the document's
// x-amazon-apigateway-authtype ("custom", "cognito_user_pools", ...).
// AuthorizerResultTTLInSeconds is 0..3600, 300 when not given. JSON
// shape of AWS's Authorizer.
type Authorizer struct {
	ID                           string   `json:"id"`
	Name                         string   `json:"name"`
	Type                         string   `json:"type"`
	ProviderARNs                 []string `json:"providerARNs,omitempty"`
	AuthType                     string   `json:"authType,omitempty"`
	AuthorizerURI                string   `json:"authorizerUri,omitempty"`
	AuthorizerCredentials        string   `json:"authorizerCredentials,omitempty"`
	IdentitySource               string   `json:"identitySource,omitempty"`
	IdentityValidationExpression string   `json:"identityValidationExpression,omitempty"`
	AuthorizerResultTTLInSeconds *int32   `json:"authorizerResultTtlInSeconds,omitempty"`
}

// Authorizer types (Authorizer.Type). Source: AWS API Gateway API
// reference, Authorizer.
const (
	AuthorizerToken   = "TOKEN"
	AuthorizerRequest = "REQUEST"
	AuthorizerCognito = "COGNITO_USER_POOLS"
)

// Method authorization types (Method.AuthorizationType): NONE is the only
// one tollgate lets through; CUSTOM (a Lambda authorizer),
// COGNITO_USER_POOLS and AWS_IAM close the method (docs/behaviour.md).
const (
	AuthorizationNone    = "NONE"
	AuthorizationCustom  = "CUSTOM"
	AuthorizationCognito = "COGNITO_USER_POOLS"
	AuthorizationIAM     = "AWS_IAM"
)

// DefaultAuthorizerTTL is the authorizerResultTtlInSeconds AWS gives an
// authorizer created without one.
const DefaultAuthorizerTTL = 300

var identityHeader = regexp.MustCompile(`^method\.request\.header\.[!#$%&'*+.^_` + "`" + `|~0-9A-Za-z-]+$`)

// Normalize fills the defaults an authorizer is stored with: the result
// TTL (DefaultAuthorizerTTL) and no empty provider list.
func (a *Authorizer) Normalize() {
	if a.AuthorizerResultTTLInSeconds == nil {
		ttl := int32(DefaultAuthorizerTTL)
		a.AuthorizerResultTTLInSeconds = &ttl
	}
	if len(a.ProviderARNs) == 0 {
		a.ProviderARNs = nil
	}
}

// Validate checks an authorizer as CreateAuthorizer does: a name, a type,
// an authorizerUri for TOKEN and REQUEST, providerARNs for
// COGNITO_USER_POOLS, a TOKEN's identitySource one
// method.request.header.<name>, and a TTL of 0..3600. Errors: KindInvalid
// naming the field.
func (a *Authorizer) Validate() error {
	if err := ValidateName("name", a.Name); err != nil {
		return err
	}
	switch a.Type {
	case AuthorizerToken, AuthorizerRequest:
		if a.AuthorizerURI == "" {
			return Invalid("authorizerUri", "authorizerUri is required for a %s authorizer", a.Type)
		}
	case AuthorizerCognito:
		if len(a.ProviderARNs) == 0 {
			return Invalid("providerARNs", "providerARNs is required for a COGNITO_USER_POOLS authorizer")
		}
	default:
		return Invalid("type", "type %q is not one of TOKEN, REQUEST, COGNITO_USER_POOLS", a.Type)
	}
	if a.Type == AuthorizerToken && !identityHeader.MatchString(a.IdentitySource) {
		return Invalid("identitySource", "identitySource %q of a TOKEN authorizer must be method.request.header.<name>", a.IdentitySource)
	}
	for field, v := range map[string]string{"authType": a.AuthType, "authorizerUri": a.AuthorizerURI,
		"authorizerCredentials": a.AuthorizerCredentials, "identitySource": a.IdentitySource,
		"identityValidationExpression": a.IdentityValidationExpression} {
		if err := ValidateDescription(field, v); err != nil {
			return err
		}
	}
	for _, arn := range a.ProviderARNs {
		if arn == "" || len(arn) > MaxNameLen {
			return Invalid("providerARNs", "providerARNs must be ARNs of 1 to %d characters", MaxNameLen)
		}
	}
	if ttl := a.AuthorizerResultTTLInSeconds; ttl != nil && (*ttl < 0 || *ttl > 3600) {
		return Invalid("authorizerResultTtlInSeconds", "authorizerResultTtlInSeconds %d must be 0 to 3600", *ttl)
	}
	return nil
}

// MethodAuthorization is the authorizationType of a method the authorizer
// secures: CUSTOM for a Lambda authorizer, COGNITO_USER_POOLS for a user
// pool.
func (a *Authorizer) MethodAuthorization() string {
	if a.Type == AuthorizerCognito {
		return AuthorizationCognito
	}
	return AuthorizationCustom
}

// CheckMethodAuthorizer requires the authorizer a CUSTOM or
// COGNITO_USER_POOLS method names to be a (nil when none has its id) of
// the matching type. Errors: KindInvalid on "authorizerId".
func CheckMethodAuthorizer(m *Method, a *Authorizer) error {
	if m.AuthorizerID == "" {
		return nil
	}
	if a == nil {
		return Invalid("authorizerId", "Invalid authorizer ID specified: %q", m.AuthorizerID)
	}
	if a.MethodAuthorization() != m.AuthorizationType {
		return Invalid("authorizerId", "authorizer %q is of type %s, which secures authorizationType %s, not %s",
			a.Name, a.Type, a.MethodAuthorization(), m.AuthorizationType)
	}
	return nil
}

// NameAuthorizers returns a copy of rs whose methods name their
// authorizer by its Name in AuthorizerID, as an ApiDefinition does; as
// are the authorizers the ids refer to (an id none has is kept).
func NameAuthorizers(rs []Resource, as []Authorizer) []Resource {
	names := make(map[string]string, len(as))
	for _, a := range as {
		names[a.ID] = a.Name
	}
	out := slices.Clone(rs)
	for i, r := range out {
		changed := false
		for _, m := range r.ResourceMethods {
			if _, ok := names[m.AuthorizerID]; ok {
				changed = true
			}
		}
		if !changed {
			continue
		}
		ms := make(map[string]*Method, len(r.ResourceMethods))
		for verb, m := range r.ResourceMethods {
			if name, ok := names[m.AuthorizerID]; ok {
				c := *m
				c.AuthorizerID = name
				m = &c
			}
			ms[verb] = m
		}
		out[i].ResourceMethods = ms
	}
	return out
}

// SortAuthorizers orders authorizers by name, as definitions list them.
func SortAuthorizers(as []Authorizer) {
	slices.SortFunc(as, func(a, b Authorizer) int { return strings.Compare(a.Name, b.Name) })
}
