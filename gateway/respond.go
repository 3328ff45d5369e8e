package gateway

import (
	"net/http"
	"strconv"
	"strings"

	"tollgate/plans"
)

// errorResponse is an error response the gateway writes itself: status,
// message and the x-amzn-ErrorType value, as AWS's gateway responses.
type errorResponse struct {
	status  int
	message string
	amzn    string
}

// The gateway's own error responses, one table (STYLE.md habit 6).
var (
	respNotFound       = errorResponse{http.StatusNotFound, "Not Found", "NotFoundException"}
	respMethodNotAllow = errorResponse{http.StatusMethodNotAllowed, "Method Not Allowed", "MethodNotAllowedException"}
	respForbidden      = errorResponse{http.StatusForbidden, "Forbidden", "ForbiddenException"}
	respUnauthorized   = errorResponse{http.StatusUnauthorized, "Unauthorized", "UnauthorizedException"}
	respMissingToken   = errorResponse{http.StatusForbidden, "Missing Authentication Token", "MissingAuthenticationTokenException"}
	respMisdirected    = errorResponse{http.StatusMisdirectedRequest, "Misdirected Request", "MisdirectedRequestException"}
	respThrottled      = errorResponse{http.StatusTooManyRequests, "Too Many Requests", "TooManyRequestsException"}
	respQuota          = errorResponse{http.StatusTooManyRequests, "Limit Exceeded", "LimitExceededException"}
	respUnavailable    = errorResponse{http.StatusServiceUnavailable, "Service Unavailable", "ServiceUnavailableException"}
	respBadRequest     = errorResponse{http.StatusBadRequest, "Bad Request", "BadRequestException"}
	respTooLarge       = errorResponse{http.StatusRequestEntityTooLarge, "Request Too Long", "RequestTooLargeException"}
	respURITooLong     = errorResponse{http.StatusRequestURITooLong, "Request-URI Too Long", "UriTooLongException"}
	respRequestTimeout = errorResponse{http.StatusRequestTimeout, "Request Timeout", "RequestTimeoutException"}
	respHeaderTooLarge = errorResponse{http.StatusRequestHeaderFieldsTooLarge, "Request Header Fields Too Large", "RequestHeaderFieldsTooLargeException"}
	respBadGateway     = errorResponse{http.StatusBadGateway, "Bad Gateway", "BadGatewayException"}
	respTimeout        = errorResponse{http.StatusGatewayTimeout, "Endpoint request timed out", "IntegrationTimeoutException"}
	respInternal       = errorResponse{http.StatusInternalServerError, "Internal server error", "InternalServerErrorException"}
)

// Header names the gateway writes; the x-amzn-* ones are set verbatim in
// AWS's spelling.
const (
	headerErrorType    = "x-amzn-ErrorType"
	headerRequestID    = "x-amzn-RequestId"
	headerContentType  = "Content-Type"
	headerAllow        = "Allow"
	headerContentLen   = "Content-Length"
	headerXContentOpts = "X-Content-Type-Options"
)

var (
	jsonContentType = []string{"application/json"}
	mockBody        = []byte("{}")
)

// writeError writes e as {"message":"..."} with x-amzn-ErrorType, or as
// the stage's gateway response for e when one was put (see
// gatewayResponses). Header names are set verbatim (not canonicalised) to
// match AWS's spelling.
func writeError(w http.ResponseWriter, e errorResponse) {
	if ec := errorContextOf(w); ec != nil {
		if gr := ec.responses.find(e); gr != nil {
			gr.write(w, e, ec)
			return
		}
	}
	h := w.Header()
	body := `{"message":"` + e.message + `"}`
	h[headerContentType] = jsonContentType
	h[headerErrorType] = []string{e.amzn}
	h[headerContentLen] = []string{strconv.Itoa(len(body))}
	h[headerXContentOpts] = []string{"nosniff"}
	w.WriteHeader(e.status)
	_, _ = w.Write([]byte(body))
}

// writeUnavailable writes the 503 of a dependency that cannot answer (no
// snapshot yet, key store or limiter down), with Retry-After: 1: the
// gateway probes its dependencies more often than that.
func writeUnavailable(w http.ResponseWriter) {
	w.Header()[HeaderRetryAfter] = []string{"1"}
	writeError(w, respUnavailable)
}

// responseTypes maps each error the gateway writes (by its
// x-amzn-ErrorType) to its AWS gateway response type; the others fall
// back to DEFAULT_4XX or DEFAULT_5XX by status.
var responseTypes = map[string]string{
	"NotFoundException":                   plans.ResponseResourceNotFound,
	"MethodNotAllowedException":           plans.ResponseMissingAuthenticationToken,
	"ForbiddenException":                  plans.ResponseInvalidAPIKey,
	"UnauthorizedException":               plans.ResponseUnauthorized,
	"MissingAuthenticationTokenException": plans.ResponseMissingAuthenticationToken,
	"AccessDeniedException":               plans.ResponseAccessDenied,
	"TooManyRequestsException":            plans.ResponseThrottled,
	"LimitExceededException":              plans.ResponseQuotaExceeded,
	"RequestTooLargeException":            plans.ResponseRequestTooLarge,
	"BadGatewayException":                 plans.ResponseIntegrationFailure,
	"IntegrationTimeoutException":         plans.ResponseIntegrationTimeout,
	"InternalServerErrorException":        plans.ResponseAPIConfigurationError,
}

// gatewayResponses is a stage's compiled gateway responses, by type.
type gatewayResponses map[string]*gatewayResponse

// gatewayResponse is one compiled plans.GatewayResponse: status 0 keeps
// the gateway's own status; body is rendered when hasBody.
type gatewayResponse struct {
	responseType string
	status       int
	headers      []mapping
	body         template
	hasBody      bool
}

// errorContext is what a gateway response needs of the request it
// answers; the statusWriter carries it once the stage is known.
type errorContext struct {
	responses gatewayResponses
	r         *http.Request
	ex        *exchange
	vars      map[string]string
}

// errorContextOf finds the errorContext on w or a writer it wraps.
func errorContextOf(w http.ResponseWriter) *errorContext {
	for {
		if sw, ok := w.(*statusWriter); ok {
			return sw.errCtx
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return nil
		}
		w = u.Unwrap()
	}
}

// compileGatewayResponses compiles a stage's gateway responses; nil when
// there are none. A header mapping of a header the gateway writes itself
// (plans.GatewayOwnedHeader; one stored before the admin refused them) is
// left out.
func compileGatewayResponses(in map[string]plans.GatewayResponse) gatewayResponses {
	if len(in) == 0 {
		return nil
	}
	out := make(gatewayResponses, len(in))
	for t, gr := range in {
		c := &gatewayResponse{responseType: t}
		c.status, _ = strconv.Atoi(gr.StatusCode)
		for k, v := range gr.ResponseParameters {
			if name, ok := strings.CutPrefix(k, "gatewayresponse.header."); ok && !plans.GatewayOwnedHeader(name) {
				c.headers = append(c.headers, mapping{loc: "header", name: name, src: parseSource(v)})
			}
		}
		body, ok := gr.ResponseTemplates["application/json"]
		c.body, c.hasBody = plans.ParseTemplate(body), ok
		out[t] = c
	}
	return out
}

// find returns the response put for e's type, else DEFAULT_4XX or
// DEFAULT_5XX by e's status, else nil.
func (gs gatewayResponses) find(e errorResponse) *gatewayResponse {
	if gs == nil {
		return nil
	}
	if gr := gs[responseTypes[e.amzn]]; gr != nil {
		return gr
	}
	if e.status >= 500 {
		return gs[plans.ResponseDefault5XX]
	}
	return gs[plans.ResponseDefault4XX]
}

// write answers e as gr: gr's status (or e's), the gateway's usual error
// headers plus gr's header mappings (none of them the gateway's own), and
// gr's rendered template (or e's message) as the body.
func (gr *gatewayResponse) write(w http.ResponseWriter, e errorResponse, ec *errorContext) {
	h := w.Header()
	body := `{"message":"` + e.message + `"}`
	if gr.hasBody {
		responseType := responseTypes[e.amzn]
		if responseType == "" {
			responseType = gr.responseType
		}
		body = gr.body.render(&templateScope{r: ec.r, ex: ec.ex, vars: ec.vars, resp: &e, responseType: responseType})
	}
	h[headerContentType] = jsonContentType
	h[headerErrorType] = []string{e.amzn}
	h[headerXContentOpts] = []string{"nosniff"}
	for _, m := range gr.headers {
		h.Set(m.name, m.src.eval(ec.r, &ec.ex.params, ec.vars))
	}
	h[headerContentLen] = []string{strconv.Itoa(len(body))}
	status := e.status
	if gr.status != 0 {
		status = gr.status
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}
