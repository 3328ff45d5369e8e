package admin

import (
	"context"
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
	"tollgate/plans"
)

// Authentication refusal types (x-amzn-ErrorType), as AWS.
const (
	typeMissingToken       = "MissingAuthenticationTokenException"
	typeUnrecognizedClient = "UnrecognizedClientException"
	typeInvalidSignature   = "InvalidSignatureException"
)

// authError is a refused credential: 403 with Type in x-amzn-ErrorType.
type authError struct {
	Type    string
	Message string
}

func (e *authError) Error() string { return e.Type + ": " + e.Message }

var (
	errNoCredentials = &authError{typeMissingToken, "Missing Authentication Token"}
	errBadToken      = &authError{typeUnrecognizedClient, "The security token included in the request is invalid."}
)

// authenticator checks bearer tokens and SigV4 signatures (the bootstrap
// credentials of the environment, then those of the credential store)
// and limits failed attempts per client address.
type authenticator struct {
	insecure bool // accept everything (Options.Insecure)
	creds    Credentials
	stored   *credentialCache // nil: only the bootstrap credentials
	now      func() time.Time
	trusted  []netip.Prefix // proxies whose X-Forwarded-For names the client
	failures *clientaddr.Failures
}

// principal is who made a request: the name the audit log records as the
// actor, and the role that decides what it may do.
type principal struct {
	Name string
	Role plans.Role
}

// Bootstrap principals: the environment's credentials are admins.
var (
	bootstrapToken = principal{Name: "bootstrap", Role: plans.RoleAdmin}
	insecureAdmin  = principal{Name: "insecure-admin", Role: plans.RoleAdmin}
)

type principalKey struct{}

// principalOf returns the request's authenticated principal (the zero
// principal, which may do nothing, on public routes).
func principalOf(ctx context.Context) principal {
	p, _ := ctx.Value(principalKey{}).(principal)
	return p
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
// attempts. Valid credentials pass whatever the address's count, with
// their principal in the request's context.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if publicPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		if s.auth.insecure {
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, insecureAdmin)))
			return
		}
		p, err := s.auth.verify(r)
		var ae *authError
		switch {
		case err == nil:
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
		case errors.As(err, &ae):
			s.refuseAuth(w, r, ae)
		default:
			s.writeError(w, r, err) // body too large or unreadable, store down: not a failed attempt
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
func (a *authenticator) verify(r *http.Request) (principal, error) {
	h := r.Header.Get("Authorization")
	switch {
	case h == "":
		return principal{}, errNoCredentials
	case len(h) > len("Bearer ") && strings.EqualFold(h[:len("Bearer ")], "Bearer "):
		return a.verifyBearer(r.Context(), strings.TrimSpace(h[len("Bearer "):]))
	case strings.HasPrefix(h, sigV4Algorithm+" "):
		return a.verifySigV4(r, h)
	}
	return principal{}, errNoCredentials
}

// verifyBearer compares token with the bootstrap one in constant time,
// then looks it up by hash among the stored credentials.
func (a *authenticator) verifyBearer(ctx context.Context, token string) (principal, error) {
	if want := a.creds.BearerToken; want != "" && subtle.ConstantTimeCompare([]byte(token), []byte(want)) == 1 {
		return bootstrapToken, nil
	}
	if a.stored == nil || token == "" {
		return principal{}, errBadToken
	}
	c, err := a.stored.byToken(ctx, token)
	if err != nil {
		return principal{}, err
	}
	return principal{Name: c.Name, Role: c.Role}, nil
}

// accessKey returns the principal and secret of a SigV4 access key id:
// the bootstrap pair's, else a stored credential's.
func (a *authenticator) accessKey(ctx context.Context, akid string) (principal, string, error) {
	if a.creds.AccessKeyID != "" && a.creds.SecretAccessKey != "" &&
		subtle.ConstantTimeCompare([]byte(akid), []byte(a.creds.AccessKeyID)) == 1 {
		return principal{Name: a.creds.AccessKeyID, Role: plans.RoleAdmin}, a.creds.SecretAccessKey, nil
	}
	if a.stored == nil {
		return principal{}, "", errBadToken
	}
	c, secret, err := a.stored.byAccessKey(ctx, akid)
	if err != nil {
		return principal{}, "", err
	}
	return principal{Name: c.Name, Role: c.Role}, secret, nil
}
