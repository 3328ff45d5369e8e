package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"tollgate/plans"
)

// template is a compiled response template: literal text and variable
// references (plans.ParseTemplate), rendered per request.
type template []plans.TemplatePart

// render writes t with each variable the scope knows substituted; an
// unknown one is written as the template had it.
func (t template) render(sc *templateScope) string {
	var b strings.Builder
	for _, p := range t {
		if v, ok := sc.value(p.Var); p.Var != "" && ok {
			b.WriteString(v)
			continue
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

// templateScope is what a template's variables are read from: the
// request, its exchange (once routed) and the stage's variables; resp is
// set for a gateway response.
type templateScope struct {
	r    *http.Request
	ex   *exchange
	vars map[string]string
	resp *errorResponse
	// responseType is the gateway response's type (for an error the
	// gateway maps to none, the type of the response put for it).
	responseType string
}

// value returns the value of one variable (plans.ContextVariables,
// plans.ErrorContextVariables for a gateway response, stageVariables.*)
// and whether the scope has it.
func (sc *templateScope) value(name string) (string, bool) {
	if v, ok := strings.CutPrefix(name, "stageVariables."); ok {
		return sc.vars[v], plans.KnownTemplateVariable(name, false)
	}
	if sc.resp != nil {
		switch name {
		case "context.error.message":
			return sc.resp.message, true
		case "context.error.messageString":
			quoted, _ := json.Marshal(sc.resp.message)
			return string(quoted), true
		case "context.error.responseType":
			return sc.responseType, true
		}
	}
	r, ex := sc.r, sc.ex
	switch name {
	case "context.apiId":
		return ex.api, true
	case "context.stage":
		return ex.stage, true
	case "context.resourcePath":
		return ex.resource, true
	case "context.httpMethod":
		return r.Method, true
	case "context.path":
		return r.URL.Path, true
	case "context.domainName":
		return hostName(r.Host), true
	case "context.domainPrefix":
		prefix, _, _ := strings.Cut(hostName(r.Host), ".")
		return prefix, true
	case "context.protocol":
		return r.Proto, true
	case "context.requestId", "context.extendedRequestId":
		return ex.id, true
	case "context.requestTime":
		return ex.start.UTC().Format("02/Jan/2006:15:04:05 -0700"), true
	case "context.requestTimeEpoch":
		return strconv.FormatInt(ex.start.UnixMilli(), 10), true
	case "context.identity.sourceIp":
		if !ex.client.IsValid() {
			return "", true
		}
		return ex.client.String(), true
	case "context.identity.userAgent":
		return r.UserAgent(), true
	case "context.identity.apiKeyId":
		return ex.keyID, true
	}
	return "", false
}
