package admin

import (
	"crypto/subtle"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"
)

// Authentication refusal types (x-amzn-ErrorType), as AWS.
const (
	errMissingToken     = "MissingAuthenticationTokenException"
	errUnrecognized     = "UnrecognizedClientException"
	errInvalidSignature = "InvalidSignatureException"
)

// authError is a refused credential: 403 with Type in x-amzn-ErrorType.
type authError struct {
	Type    string
	Message string
}

func (e *authError) Error() string { return e.Type + ": " + e.Message }

var (
	errNoCredentials = &authError{errMissingToken, "Missing Authentication Token"}
	errBadToken      = &authError{errUnrecognized, "The security token included in the request is invalid."}
)

// authenticator checks bearer tokens and SigV4 signatures and limits
// failed attempts per client address.
type authenticator struct {
	insecure bool // accept everything (Options.Insecure)
	creds    Credentials
	now      func() time.Time
	failures *failureLimiter
}

func newAuthenticator(c Credentials, now func() time.Time) *authenticator {
	return &authenticator{creds: c, now: now, failures: newFailureLimiter(now)}
}

// authenticate refuses requests to non-public paths without valid
// credentials: 403 with the refusal's type, or 429 TooManyRequestsException
// once the client address has used up its failed attempts.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.auth.insecure || publicPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		addr := clientAddr(r)
		if !s.auth.failures.allowed(addr) {
			w.Header().Set("Retry-After", retryAfterSeconds)
			writeAWSError(w, http.StatusTooManyRequests, "TooManyRequestsException", "Too many failed authentication attempts")
			return
		}
		err := s.auth.verify(r)
		var ae *authError
		switch {
		case errors.As(err, &ae):
			s.auth.failures.fail(addr)
			if s.log.Enabled(r.Context(), slog.LevelDebug) {
				s.log.Debug("admin: authentication refused", "addr", addr, "type", ae.Type, "reason", ae.Message)
			}
			writeAWSError(w, http.StatusForbidden, ae.Type, ae.Message)
			return
		case err != nil:
			s.writeError(w, r, err) // body too large or unreadable: not a failed attempt
			return
		}
		next.ServeHTTP(w, r)
	})
}

// verify accepts a bearer token or a SigV4 signature.
func (a *authenticator) verify(r *http.Request) error {
	h := r.Header.Get("Authorization")
	switch {
	case h == "":
		return errNoCredentials
	case len(h) > len("Bearer ") && strings.EqualFold(h[:len("Bearer ")], "Bearer "):
		return a.verifyBearer(strings.TrimSpace(h[len("Bearer "):]))
	case strings.HasPrefix(h, sigV4Algorithm+" "):
		return a.verifySigV4(r, h)
	}
	return errNoCredentials
}

// verifyBearer compares token with the configured one in constant time.
func (a *authenticator) verifyBearer(token string) error {
	want := a.creds.BearerToken
	if want == "" || subtle.ConstantTimeCompare([]byte(token), []byte(want)) != 1 {
		return errBadToken
	}
	return nil
}

// clientAddr is the connection's peer address without the port.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
