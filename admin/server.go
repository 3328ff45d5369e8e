package admin

import (
	"context"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"tollgate/internal/reqbody"
	"tollgate/plans"
	"tollgate/seal"
)

// Publisher pushes committed config to the data plane (implemented by
// push.Publisher).
type Publisher interface {
	// Publish publishes every change committed so far. The admin calls it
	// after each successful write; a failure is logged, not returned to the
	// caller (the write is committed and the reconciler retries).
	Publish(ctx context.Context) error
	// FlushStageCache bumps the cache generation of stage on API apiID, so
	// every later request misses the response cache.
	FlushStageCache(ctx context.Context, apiID, stage string) error
}

// Credentials are the admin API's accepted credentials. Requests are
// accepted when signed with AWS Signature Version 4 (service "apigateway",
// any region) by AccessKeyID/SecretAccessKey, or when they carry
// "Authorization: Bearer <BearerToken>". An empty AccessKeyID or
// SecretAccessKey disables SigV4; a BearerToken shorter than
// MinBearerTokenLen disables bearer authentication (New logs an error).
type Credentials struct {
	AccessKeyID     string
	SecretAccessKey string
	BearerToken     string
}

// MinBearerTokenLen is the shortest bearer token accepted, in characters.
const MinBearerTokenLen = 32

// MaxBodyBytes bounds an admin request body: 6 MiB, as AWS.
const MaxBodyBytes = 6 << 20

// Options configure a Server. Store is required; every other field has a
// usable zero value.
type Options struct {
	// Store is the source of truth (plans/postgres.DB).
	Store Store
	// Publisher carries committed writes to the data plane; nil publishes
	// nothing (and FlushStageCache then answers 503).
	Publisher Publisher
	// Credentials accepted on every route but /healthz, /readyz, /metrics
	// and /console/. With none configured (and Insecure false) every
	// request is refused.
	Credentials Credentials
	// Insecure accepts requests without credentials (--insecure-admin).
	// Only cmd may set it, after refusing to listen anywhere but
	// 127.0.0.1; New logs a warning.
	Insecure bool
	// TrustedProxies are the peers whose X-Forwarded-For names the client
	// address that failed authentication attempts are limited by (the
	// nearest untrusted hop, as the gateway's TOLLGATE_TRUSTED_PROXIES);
	// none means the connection's peer.
	TrustedProxies []netip.Prefix
	// KeyPepper, when not empty, makes API key hashes HMAC-SHA-256 under it
	// (see plans.HashKey). It must match the gateway's.
	KeyPepper []byte
	// KeyFormat is the shape of generated key values (TOLLGATE_KEY_PREFIX);
	// a chosen or imported value of that shape must carry its checksum.
	KeyFormat plans.KeyFormat
	// Logger receives internal errors and publish failures; nil discards.
	Logger *slog.Logger
	// Now is the clock used to check X-Amz-Date; nil means time.Now.
	Now func() time.Time
	// Web, when set, is the operator console served at /console/ without
	// authentication, under ConsoleCSP (static files only; the console
	// calls this API with the bearer token the operator types in).
	Web fs.FS
	// Ready reports readiness for /readyz (PostgreSQL and Redis reachable);
	// nil means always ready.
	Ready func(ctx context.Context) error
	// BodyLimits bound how long a client may take to send a request body
	// (package reqbody); the zero value means reqbody.DefaultLimits.
	BodyLimits reqbody.Limits
	// Metrics, when set, is served at /metrics without authentication.
	Metrics http.Handler
	// Usage, when set, serves GetUsage and UpdateUsage (docs/usage.md); nil
	// answers them 400 as operations outside the subset. UpdateUsage
	// announces its change when Publisher implements UsageAnnouncer.
	Usage UsageCounter
	// CredentialStore, when set, keeps admin credentials beyond the
	// bootstrap Credentials, with roles, and serves /credentials; nil
	// accepts the bootstrap credentials only.
	CredentialStore CredentialStore
	// Audit, when set, is the audit log: every change through the API is
	// recorded (the store records in the change's transaction the entry
	// the request's context carries), and /audit serves it. nil records
	// nothing.
	Audit AuditLog
	// Config, when set, serves the whole configuration: GET /config,
	// POST /config/plan and /config/apply (docs/config.md); nil leaves
	// them unsupported.
	Config ConfigStore
	// Ledger, when set, is the usage ledger: GetUsage adds what it holds
	// (days the limiter no longer keeps included), and it serves the usage
	// export and the record feed (docs/usage.md); nil leaves those two
	// unsupported (400).
	Ledger UsageLedger
	// Secrets seals the private keys of custom domain names' certificates
	// before they are stored, and the answers of key rotations made with an
	// idempotency token (TOLLGATE_SECRETS_KEY); nil stores them as given.
	Secrets *seal.Key
	// Portal, when set, is the developer portal, served at /portal/ on this
	// port without admin authentication (it has its own accounts and
	// sessions); nil when it runs on its own port or not at all.
	Portal http.Handler
	// PortalInvites and PortalURL (the portal's base URL, TOLLGATE_PORTAL_URL)
	// serve POST /portal/invites; without both it is unsupported (400).
	PortalInvites PortalInviter
	PortalURL     string
}

// Server is the admin API, an http.Handler. Create it with New.
type Server struct {
	store   Store
	pub     Publisher
	log     *slog.Logger
	now     func() time.Time
	pepper  []byte
	keyFmt  plans.KeyFormat
	auth    *authenticator
	ready   func(ctx context.Context) error
	usage   UsageCounter
	ledger  UsageLedger
	secrets *seal.Key // nil: private keys are stored as given
	handler http.Handler
	mux     *chi.Mux
	creds   CredentialStore // nil: bootstrap credentials only
	audit   AuditLog        // nil: no audit log
	config  ConfigStore     // nil: no /config
	invites PortalInviter   // nil: no portal invites
	// portalURL is the base of invite links (Options.PortalURL).
	portalURL string
	// bodyLimits bound how long a request body may take (reqbody); zero
	// means reqbody.DefaultLimits.
	bodyLimits reqbody.Limits
}

// New returns the admin API server for opts. It panics when opts.Store is
// nil (a wiring bug).
func New(opts Options) *Server {
	if opts.Store == nil {
		panic("admin: Options.Store is nil")
	}
	s := &Server{
		store:  opts.Store,
		pub:    opts.Publisher,
		log:    opts.Logger,
		now:    opts.Now,
		pepper: opts.KeyPepper,
		keyFmt: opts.KeyFormat,
		ready:  opts.Ready,
		usage:  opts.Usage,
		ledger: opts.Ledger,
		creds:  opts.CredentialStore,

		secrets: opts.Secrets,
		audit:   opts.Audit,
		config:  opts.Config,
		invites: opts.PortalInvites,

		portalURL: opts.PortalURL,

		bodyLimits: opts.BodyLimits,
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if t := opts.Credentials.BearerToken; t != "" && len(t) < MinBearerTokenLen {
		s.log.Error("admin: bearer token shorter than 32 characters ignored")
		opts.Credentials.BearerToken = ""
	}
	s.auth = newAuthenticator(opts.Credentials, s.now, opts.TrustedProxies)
	s.auth.insecure = opts.Insecure
	if s.creds != nil {
		s.auth.stored = newCredentialCache(s.creds, s.secrets, s.log)
	}
	if opts.Insecure {
		s.log.Warn("admin: running without authentication (--insecure-admin): every request is accepted")
	}
	s.handler = s.routes(opts)
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.handler.ServeHTTP(w, r)
}

// routes builds the router: public probes, the console and metrics, then
// every API operation behind authentication.
func (s *Server) routes(opts Options) http.Handler {
	r := chi.NewRouter()
	s.mux = r
	r.Use(s.limitBody, s.authenticate, s.authorize, s.audited)
	r.NotFound(s.handle(unsupported))
	r.MethodNotAllowed(s.handle(unsupported))
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	r.Get("/readyz", s.readyz)
	if opts.Metrics != nil {
		r.Method(http.MethodGet, "/metrics", opts.Metrics)
	}
	consoleRoutes(r, opts.Web)
	s.restApiRoutes(r)
	s.resourceRoutes(r)
	s.deploymentRoutes(r)
	s.stageRoutes(r)
	s.ruleRoutes(r)
	s.usagePlanRoutes(r)
	s.apiKeyRoutes(r)
	s.accountRoutes(r)
	s.ledgerRoutes(r)
	s.domainRoutes(r)
	s.tagRoutes(r)
	s.credentialRoutes(r)
	s.auditRoutes(r)
	s.alertRoutes(r)
	s.configRoutes(r)
	s.portalRoutes(r, opts)
	return r
}

// publicPath reports whether path is served without authentication.
func publicPath(path string) bool {
	switch path {
	case "/healthz", "/readyz", "/metrics", "/console":
		return true
	}
	return strings.HasPrefix(path, "/console/") || portalPath(path)
}

// readyTimeout bounds one /readyz check: a dependency that does not answer
// within it is not ready.
const readyTimeout = 2 * time.Second

// readyz answers 200 when Options.Ready succeeds within readyTimeout, else
// 503 naming the cause.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		if err := s.ready(ctx); err != nil {
			w.Header().Set("Retry-After", "1")
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"message": "not ready: " + err.Error()})
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// published calls the Publisher after a committed write. A failure is
// logged, not returned: the write is committed and the reconciler retries.
func (s *Server) published(ctx context.Context, op string) {
	if s.pub == nil {
		return
	}
	if err := s.pub.Publish(context.WithoutCancel(ctx)); err != nil {
		s.log.Warn("admin: publish failed; the reconciler will retry", "op", op, "err", err)
	}
}
