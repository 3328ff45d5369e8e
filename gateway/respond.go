package gateway

import (
	"net/http"
	"strconv"
)

// errorType names the error responses the gateway writes itself: status,
// message and the x-amzn-ErrorType value, as AWS's gateway responses.
type errorType struct {
	status  int
	message string
	amzn    string
}

// The gateway's own error responses, one table (STYLE.md habit 6).
var (
	errNotFound       = errorType{http.StatusNotFound, "Not Found", "NotFoundException"}
	errMethodNotAllow = errorType{http.StatusMethodNotAllowed, "Method Not Allowed", "MethodNotAllowedException"}
	errForbidden      = errorType{http.StatusForbidden, "Forbidden", "ForbiddenException"}
	errThrottled      = errorType{http.StatusTooManyRequests, "Too Many Requests", "TooManyRequestsException"}
	errQuota          = errorType{http.StatusTooManyRequests, "Limit Exceeded", "LimitExceededException"}
	errUnavailable    = errorType{http.StatusServiceUnavailable, "Service Unavailable", "ServiceUnavailableException"}
	errBadRequest     = errorType{http.StatusBadRequest, "Bad Request", "BadRequestException"}
	errTooLarge       = errorType{http.StatusRequestEntityTooLarge, "Request Too Long", "RequestTooLargeException"}
	errURITooLong     = errorType{http.StatusRequestURITooLong, "Request-URI Too Long", "UriTooLongException"}
	errBadGateway     = errorType{http.StatusBadGateway, "Bad Gateway", "BadGatewayException"}
	errTimeout        = errorType{http.StatusGatewayTimeout, "Endpoint request timed out", "IntegrationTimeoutException"}
	errInternal       = errorType{http.StatusInternalServerError, "Internal server error", "InternalServerErrorException"}
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

// writeError writes e as {"message":"..."} with x-amzn-ErrorType. Header
// names are set verbatim (not canonicalised) to match AWS's spelling.
func writeError(w http.ResponseWriter, e errorType) {
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
	writeError(w, errUnavailable)
}
