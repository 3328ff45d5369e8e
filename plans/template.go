package plans

import (
	"slices"
	"strings"
)

// TemplatePart is one piece of a response template: literal Text, or a
// reference to the variable Var ("context.stage", "stageVariables.env")
// whose Text is the reference as written ("${context.stage}").
type TemplatePart struct {
	Text string
	Var  string
}

// ParseTemplate splits a response template into literal text and the
// variable references API Gateway's templates write as $context.name,
// ${context.name}, $stageVariables.name or ${stageVariables.name}. A name
// is letters, digits and underscores, joined by dots; a trailing dot is
// text ("in $context.stage." names context.stage). Everything else,
// template language included, is text.
func ParseTemplate(s string) []TemplatePart {
	var parts []TemplatePart
	text := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			continue
		}
		name, end := templateReference(s, i)
		if name == "" {
			continue
		}
		if text < i {
			parts = append(parts, TemplatePart{Text: s[text:i]})
		}
		parts = append(parts, TemplatePart{Text: s[i:end], Var: name})
		text, i = end, end-1
	}
	if text < len(s) {
		parts = append(parts, TemplatePart{Text: s[text:]})
	}
	return parts
}

// templateReference reads the variable reference at s[i] ('$'): its name
// and the index after it, or "" when there is none.
func templateReference(s string, i int) (string, int) {
	j, braced := i+1, false
	if j < len(s) && s[j] == '{' {
		j, braced = j+1, true
	}
	root := ""
	for _, r := range []string{"context.", "stageVariables."} {
		if strings.HasPrefix(s[j:], r) {
			root = r
		}
	}
	if root == "" {
		return "", 0
	}
	k := j + len(root)
	for k < len(s) && (isNameByte(s[k]) || s[k] == '.' && k+1 < len(s) && isNameByte(s[k+1])) {
		k++
	}
	if k == j+len(root) {
		return "", 0
	}
	name := s[j:k]
	if braced {
		if k >= len(s) || s[k] != '}' {
			return "", 0
		}
		k++
	}
	return name, k
}

func isNameByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// ContextVariables are the $context variables the gateway substitutes in
// the application/json template of a MOCK integration response and of a
// gateway response (docs/migrating-from-aws.md lists what each holds).
// Every stageVariables.name is substituted too ("" when the stage has no
// such variable, as AWS).
var ContextVariables = []string{
	"context.apiId", "context.domainName", "context.domainPrefix", "context.extendedRequestId",
	"context.httpMethod", "context.identity.apiKeyId", "context.identity.sourceIp",
	"context.identity.userAgent", "context.path", "context.protocol", "context.requestId",
	"context.requestTime", "context.requestTimeEpoch", "context.resourcePath", "context.stage",
}

// ErrorContextVariables are the $context variables a gateway response's
// template has besides ContextVariables.
var ErrorContextVariables = []string{"context.error.message", "context.error.messageString", "context.error.responseType"}

// UnknownTemplateVariables returns, in order and once each, the variables
// template refers to that the gateway does not substitute (they are
// served as written); gatewayResponse says whether template is a gateway
// response's.
func UnknownTemplateVariables(template string, gatewayResponse bool) []string {
	var out []string
	for _, p := range ParseTemplate(template) {
		if p.Var == "" || KnownTemplateVariable(p.Var, gatewayResponse) || slices.Contains(out, p.Var) {
			continue
		}
		out = append(out, p.Var)
	}
	return out
}

// KnownTemplateVariable reports whether the gateway substitutes the
// variable name in a template (a gateway response's when gatewayResponse).
func KnownTemplateVariable(name string, gatewayResponse bool) bool {
	if v, ok := strings.CutPrefix(name, "stageVariables."); ok {
		return !strings.Contains(v, ".")
	}
	return slices.Contains(ContextVariables, name) || gatewayResponse && slices.Contains(ErrorContextVariables, name)
}

// templateDirectives are the template language (Velocity, as API Gateway's
// mapping templates) a response template may use that the gateway does
// not evaluate.
var templateDirectives = []string{"#set", "#if", "#foreach", "$input.", "$util.", "${input.", "${util."}

// TemplateDirectives returns the template language in template, in the
// order of templateDirectives, that the gateway serves as written.
func TemplateDirectives(template string) []string {
	var out []string
	for _, d := range templateDirectives {
		if strings.Contains(template, d) {
			out = append(out, d)
		}
	}
	return out
}
