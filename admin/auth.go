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
// maxFailureStates addresses. Addresses whose bucket is empty get 429
// without their credentials being checked.
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
// once the client address has used up its failed attempts.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.auth.insecure || publicPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		addr := clientaddr.Client(r, clientaddr.Peer(r), s.auth.trusted)
		if blocked, wait := s.auth.failures.Blocked(addr); blocked {
			w.Header().Set("Retry-After", strconv.FormatInt(max(1, int64(math.Ceil(wait.Seconds()))), 10))
			writeAWSError(w, http.StatusTooManyRequests, "TooManyRequestsException", "Too many failed authentication attempts")
			return
		}
		err := s.auth.verify(r)
		var ae *authError
		switch {
		case errors.As(err, &ae):
			s.auth.failures.Fail(addr)
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
