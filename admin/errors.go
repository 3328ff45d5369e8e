package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"tollgate/internal/reqbody"
	"tollgate/plans"
)

// errorResponse is one row of the error table: HTTP status and the AWS error
// type written in x-amzn-ErrorType.
type errorResponse struct {
	Status int
	Type   string
}

// errorTable maps every plans.Error kind to the admin API's response, the
// one place that does so (docs/behaviour.md, "Admin API").
var errorTable = map[plans.Kind]errorResponse{
	plans.KindInvalid:       {http.StatusBadRequest, "BadRequestException"},
	plans.KindNotFound:      {http.StatusNotFound, "NotFoundException"},
	plans.KindConflict:      {http.StatusConflict, "ConflictException"},
	plans.KindForbidden:     {http.StatusForbidden, "AccessDeniedException"},
	plans.KindLimitExceeded: {http.StatusTooManyRequests, "TooManyRequestsException"},
	plans.KindUnavailable:   {http.StatusServiceUnavailable, "ServiceUnavailableException"},
	plans.KindInternal:      {http.StatusInternalServerError, "InternalServerErrorException"},
}

// retryAfterSeconds is the Retry-After sent with 429 and 503 answers.
const retryAfterSeconds = "1"

// handlerFunc is an admin operation: it writes its success response itself
// and returns an error for everything else.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// handle adapts h to http.HandlerFunc, writing h's error through the table.
func (s *Server) handle(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	}
}

// writeError writes err as {"message"} with x-amzn-ErrorType from
// errorTable. Errors that are not a *plans.Error are bugs (or unexpected
// driver failures): they are logged and answered 500 without detail. A
// request body that arrived too slowly (reqbody.ErrTimeout) is 408
// RequestTimeoutException, and the connection is closed.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, reqbody.ErrTimeout) { // the client, not the request, is at fault
		w.Header().Set("Connection", "close")
		writeAWSError(w, http.StatusRequestTimeout, "RequestTimeoutException", "Request Timeout: the request body arrived too slowly")
		return
	}
	kind := plans.ErrorKind(err)
	row := errorTable[kind]
	if kind == plans.KindInternal {
		s.log.Error("admin: internal error", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if kind == plans.KindUnavailable {
		s.log.Warn("admin: dependency unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if row.Status == http.StatusTooManyRequests || row.Status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", retryAfterSeconds)
	}
	writeAWSError(w, row.Status, row.Type, safeMessage(err))
}

// safeMessage is the message shown for err: the plans.Error message,
// prefixed with its field when the message does not name it already.
func safeMessage(err error) string {
	var pe *plans.Error
	if errors.As(err, &pe) && pe.Field != "" && !strings.Contains(pe.Message, pe.Field) {
		return pe.Field + ": " + pe.Message
	}
	return plans.ErrorMessage(err)
}

// writeAWSError writes an AWS-style error: status, x-amzn-ErrorType and
// {"message": msg}.
func writeAWSError(w http.ResponseWriter, status int, errType, msg string) {
	w.Header().Set("x-amzn-ErrorType", errType)
	writeJSON(w, status, map[string]string{"message": msg})
}

// writeJSON writes v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only unencodable values (NaN) get here; they never pass validation.
		status, b = http.StatusInternalServerError, []byte(`{"message":"Internal server error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeAccepted answers 202 with an empty body, as AWS's Delete* and
// FlushStageCache.
func writeAccepted(w http.ResponseWriter) {
	w.WriteHeader(http.StatusAccepted)
}

// unsupported answers operations outside tollgate's subset: 400 naming the
// operation (not 404, which tools read as "deleted"), by its AWS name when
// the method and path are one of AWS's.
func unsupported(_ http.ResponseWriter, r *http.Request) error {
	path := r.URL.EscapedPath()
	if name := operationName(r.Method, path); name != "" {
		return plans.Invalid("operation", "operation %s (%s %s) is not supported by tollgate", name, r.Method, path)
	}
	return plans.Invalid("operation", "operation %s %s is not supported by tollgate", r.Method, path)
}

// badJSON turns a JSON decoding error into a 400 naming the field.
func badJSON(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	var pe *plans.Error
	switch {
	case errors.As(err, &pe):
		return pe
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "body"
		}
		return plans.Invalid(field, "%s: expected %s, got JSON %s", field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return plans.Invalid("body", "malformed JSON at byte %d: %v", syntaxErr.Offset, syntaxErr)
	}
	return plans.Invalid("body", "malformed JSON: %v", err)
}

// jsonKind names a Go kind the way a JSON user would read it.
func jsonKind(k string) string {
	switch k {
	case "int32":
		return "a 32-bit integer without a fraction"
	case "int64", "int":
		return "an integer"
	case "float64":
		return "a number"
	case "bool":
		return "a boolean"
	case "string":
		return "a string"
	case "map", "struct":
		return "an object"
	case "slice":
		return "an array"
	}
	return fmt.Sprintf("a %s", k)
}
