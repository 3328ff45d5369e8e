package admin

import (
	"crypto/subtle"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"tollgate/internal/clientaddr"
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
	trusted  []netip.Prefix // proxies whose X-Forwarded-For names the client
	failures *clientaddr.Failures
}

// Failed-authentication limits per client address: a token bucket of
// failureBurst attempts refilled at failureRate per second, for about
// maxFailureStates addresses. Only failures are throttled: credentials are
// always checked, valid ones always pass, and a failure from an address
// whose bucket is empty is answered 429 instead of 403. What stops guessing
// is the credentials' strength (a bearer token of at least 32 characters,
// a SigV4 secret); the limit bounds what failures cost and makes a
// guesser visible, and nobody sharing the operator's address can lock the
// operator out.
const (
	failureRate      = 1.0
	failureBurst     = 20
	maxFailureStates = 10000
)

func newAuthenticator(c Credentials, now func() time.Time, trusted []netip.Prefix) *authenticator {
	return &authenticator{creds: c, now: now, trusted: trusted,
		failures: clientaddr.NewFailures(failureRate, failureBurst, maxFailureStates, now)}
}

// authenticate refuses requests to non-public paths without valid
// credentials: 403 with the refusal's type, or 429 TooManyRequestsException
// (with Retry-After) when the client address has used up its failed
// attempts. Valid credentials pass whatever the address's count.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.auth.insecure || publicPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		err := s.auth.verify(r)
		var ae *authError
		switch {
		case err == nil:
			next.ServeHTTP(w, r)
		case errors.As(err, &ae):
			s.refuseAuth(w, r, ae)
		default:
			s.writeError(w, r, err) // body too large or unreadable: not a failed attempt
		}
	})
}

// refuseAuth answers a failed authentication: 429 when the client address
// is over its failed attempts, else 403 with the refusal's type, counted.
func (s *Server) refuseAuth(w http.ResponseWriter, r *http.Request, ae *authError) {
	addr := clientaddr.Client(r, clientaddr.Peer(r), s.auth.trusted)
	if blocked, wait := s.auth.failures.Blocked(addr); blocked {
		w.Header().Set("Retry-After", strconv.FormatInt(max(1, int64(math.Ceil(wait.Seconds()))), 10))
		writeAWSError(w, http.StatusTooManyRequests, "TooManyRequestsException", "Too many failed authentication attempts")
		return
	}
	s.auth.failures.Fail(addr)
	if s.log.Enabled(r.Context(), slog.LevelDebug) {
		s.log.Debug("admin: authentication refused", "addr", addr, "type", ae.Type, "reason", ae.Message)
	}
	writeAWSError(w, http.StatusForbidden, ae.Type, ae.Message)
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
