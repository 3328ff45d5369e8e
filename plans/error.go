package plans

import (
	"errors"
	"fmt"
)

// Kind classifies an Error. Each HTTP edge maps kinds to status codes in one
// table (admin: BadRequestException 400, NotFoundException 404, ...).
type Kind int

// Error kinds.
const (
	KindInternal      Kind = iota // a bug or an unexpected driver failure: 500
	KindInvalid                   // bad input: 400 BadRequestException
	KindNotFound                  // no such resource: 404 NotFoundException
	KindConflict                  // duplicate or constraint: 409 ConflictException
	KindForbidden                 // credentials refused: 403
	KindLimitExceeded             // too many requests: 429
	KindUnavailable               // a dependency is down: 503
)

// String returns the kind's name, for logs.
func (k Kind) String() string {
	switch k {
	case KindInvalid:
		return "invalid"
	case KindNotFound:
		return "not found"
	case KindConflict:
		return "conflict"
	case KindForbidden:
		return "forbidden"
	case KindLimitExceeded:
		return "limit exceeded"
	case KindUnavailable:
		return "unavailable"
	}
	return "internal"
}

// Error is tollgate's domain error: a kind, the offending field (the JSON
// name, e.g. "quota.limit"; empty when no single field is at fault) and a
// message that is safe to show to the caller. Err, when set, is the cause and
// is never shown to callers.
type Error struct {
	Kind    Kind
	Field   string
	Message string
	Err     error
}

// Error implements error.
func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Invalid returns a KindInvalid error naming field; the message is built
// with fmt.Sprintf(format, args...).
func Invalid(field, format string, args ...any) *Error {
	return &Error{Kind: KindInvalid, Field: field, Message: fmt.Sprintf(format, args...)}
}

// NotFound returns a KindNotFound error, e.g. NotFound("Invalid API identifier specified").
func NotFound(format string, args ...any) *Error {
	return &Error{Kind: KindNotFound, Message: fmt.Sprintf(format, args...)}
}

// Conflict returns a KindConflict error.
func Conflict(format string, args ...any) *Error {
	return &Error{Kind: KindConflict, Message: fmt.Sprintf(format, args...)}
}

// Unavailable returns a KindUnavailable error wrapping cause.
func Unavailable(cause error, format string, args ...any) *Error {
	return &Error{Kind: KindUnavailable, Message: fmt.Sprintf(format, args...), Err: cause}
}

// ErrorKind returns the Kind of the first *Error in err's chain, or
// KindInternal when there is none.
func ErrorKind(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}

// ErrorMessage returns the safe message of the first *Error in err's chain,
// or "Internal server error" when there is none.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "Internal server error"
}
