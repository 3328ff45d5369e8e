package portal

import (
	"context"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"tollgate/internal/clientaddr"
	"tollgate/plans"
	"tollgate/seal"
)

// Accounts is the portal's own store: partners' accounts, invites and
// sessions (plans/postgres.DB).
type Accounts interface {
	PortalInvite(ctx context.Context, tokenHash string) (*plans.PortalInvite, error)
	AcceptPortalInvite(ctx context.Context, tokenHash, passwordHash string) (*plans.PortalAccount, error)
	CreatePortalAccount(ctx context.Context, a *plans.PortalAccount) error
	PortalAccountByEmail(ctx context.Context, email string) (*plans.PortalAccount, error)
	CreatePortalSession(ctx context.Context, tokenHash, accountID, csrf string) error
	PortalSession(ctx context.Context, tokenHash string) (*plans.PortalAccount, string, error)
	DeletePortalSession(ctx context.Context, tokenHash string) error
}

// Keys are the admin API's own store methods for API keys and their plans
// (plans/postgres.DB): every change a partner makes goes through them, as
// the operator's would, so it is validated, versioned, audited and pushed
// the same way.
type Keys interface {
	ListApiKeys(ctx context.Context, nameQuery, customerID string, p plans.Page) ([]plans.ApiKey, string, error)
	GetApiKey(ctx context.Context, id string) (*plans.ApiKey, error)
	CreateApiKey(ctx context.Context, k *plans.ApiKey, hash string) error
	UpdateApiKey(ctx context.Context, id string, fn func(*plans.ApiKey) error) (*plans.ApiKey, error)
	DeleteApiKey(ctx context.Context, id string) error
	RotateApiKey(ctx context.Context, rot plans.KeyRotation) (plans.KeyRotation, error)
	CreateUsagePlanKey(ctx context.Context, planID, keyID string) (*plans.UsagePlanKey, error)
	// Atomically runs fn in one transaction that every call made with
	// fn's context joins: all of it commits, or nothing.
	Atomically(ctx context.Context, bound time.Duration, fn func(ctx context.Context) error) error
	ListUsagePlans(ctx context.Context, keyID string, p plans.Page) ([]plans.UsagePlan, string, error)
	GetUsagePlan(ctx context.Context, id string) (*plans.UsagePlan, error)
}

// Catalog reads what an API's reference is made of (plans/postgres.DB).
type Catalog interface {
	GetRestApi(ctx context.Context, id string) (*plans.RestApi, error)
	GetStage(ctx context.Context, apiID, name string) (*plans.Stage, error)
	GetDeployment(ctx context.Context, apiID, deploymentID string) (*plans.Deployment, error)
}

// Usage reads a key's usage in a plan: one [used, remaining] pair per UTC
// day from from to to, remaining -1 without a quota (the admin API's
// GetUsage; admin.Server.KeyUsage).
type Usage interface {
	KeyUsage(ctx context.Context, planID, keyID string, from, to time.Time) ([][]int64, error)
	// CustomerUsage is the budget (customer quota) of planID the keys of
	// customerID share, now; nil when the plan has none
	// (admin.Server.CustomerUsage).
	CustomerUsage(ctx context.Context, planID, customerID string) (*plans.CustomerUsage, error)
}

// Publisher pushes committed changes to the gateways (push.Publisher).
type Publisher interface {
	Publish(ctx context.Context) error
}

// Options configure a Server. Accounts, Keys, Catalog, Usage and BaseURL
// are required; the zero value of every other field is its default.
type Options struct {
	Accounts  Accounts
	Keys      Keys
	Catalog   Catalog
	Usage     Usage
	Publisher Publisher // nil publishes nothing (the reconciler will)
	// BaseURL is the portal's absolute URL without /portal/
	// (TOLLGATE_PORTAL_URL: "https://developers.example.com"). Cookies
	// are Secure unless it is http://.
	BaseURL string
	// GatewayURL is the partners' base URL of an API, with {apiId} in
	// place of the API's id ("https://{apiId}.execute-api.example.com").
	GatewayURL string
	// SignupPlan, when set, lets anyone create an account whose keys go in
	// this usage plan (TOLLGATE_PORTAL_SIGNUP_PLAN); "" turns sign-up off.
	SignupPlan string
	// KeyFormat, KeyPepper and Secrets are the admin's: how values are
	// generated and hashed, and what seals a rotation's answer.
	KeyFormat plans.KeyFormat
	KeyPepper []byte
	Secrets   *seal.Key
	// Static holds the stylesheet and scripts (web.FS(): portal/, the
	// console's chart module and the vendored uPlot).
	Static fs.FS
	// TrustedProxies are the peers whose X-Forwarded-For names the client
	// address that failed sign-ins are limited by.
	TrustedProxies []netip.Prefix
	Logger         *slog.Logger
	// Now is the clock that refills the failed sign-ins' buckets; nil is
	// time.Now. Tests step it.
	Now func() time.Time
}

// Server is the developer portal, an http.Handler for paths under
// /portal/. Create it with New.
type Server struct {
	accounts Accounts
	keys     Keys
	catalog  Catalog
	usage    Usage
	pub      Publisher
	opts     Options
	secure   bool
	rotator  plans.Rotator
	pages    map[string]*template.Template
	failures *clientaddr.Failures
	log      *slog.Logger
	handler  http.Handler
}

// Failed sign-ins per client address: a bucket of 10, refilled at one
// every 6 seconds.
const (
	signinRate  = 1.0 / 6
	signinBurst = 10
)

// New returns the portal for opts; it panics on a missing store (a wiring
// bug).
func New(opts Options) *Server {
	if opts.Accounts == nil || opts.Keys == nil || opts.Catalog == nil || opts.Usage == nil {
		panic("portal: Options.Accounts, Keys, Catalog and Usage are required")
	}
	s := &Server{accounts: opts.Accounts, keys: opts.Keys, catalog: opts.Catalog, usage: opts.Usage, pub: opts.Publisher,
		opts: opts, secure: !strings.HasPrefix(opts.BaseURL, "http://"), log: opts.Logger,
		failures: clientaddr.NewFailures(signinRate, signinBurst, 100000, opts.Now),
		rotator:  plans.Rotator{Store: opts.Keys, Format: opts.KeyFormat, Pepper: opts.KeyPepper, Sealer: opts.Secrets}}
	s.opts.BaseURL = strings.TrimRight(opts.BaseURL, "/")
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.pages = parsePages()
	s.handler = s.routes()
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// routes: the public pages, then the signed-in ones; every POST passes
// checkForm.
func (s *Server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(securityHeaders, s.loadSession, s.checkForm)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		s.refuse(w, r, http.StatusNotFound, "There is no such page.")
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		s.refuse(w, r, http.StatusMethodNotAllowed, "This page does not take that request.")
	})
	r.Route("/portal", func(r chi.Router) {
		if s.opts.Static != nil {
			r.Handle("/static/*", http.StripPrefix("/portal/static/", staticFiles(s.opts.Static)))
		}
		r.Get("/", s.home)
		r.Get("/signin", s.signinPage)
		r.Post("/signin", s.signin)
		r.Post("/signout", s.signout)
		r.Get("/invite/{token}", s.invitePage)
		r.Post("/invite/{token}", s.acceptInvite)
		if s.opts.SignupPlan != "" {
			r.Get("/signup", s.signupPage)
			r.Post("/signup", s.signup)
		}
		r.Group(func(r chi.Router) {
			r.Use(s.signedIn)
			r.Get("/apis", s.apisPage)
			r.Get("/apis/{apiId}/{stage}", s.referencePage)
			r.Get("/apis/{apiId}/{stage}/openapi.json", s.openapiDoc)
			r.Get("/keys", s.keysPage)
			r.Post("/keys", s.createKey)
			r.Get("/keys/{keyId}/rotate", s.rotatePage)
			r.Post("/keys/{keyId}/rotate", s.rotateKey)
			r.Get("/keys/{keyId}/revoke", s.revokePage)
			r.Post("/keys/{keyId}/revoke", s.revokeKey)
			r.Get("/usage", s.usagePage)
		})
	})
	r.Get("/", http.RedirectHandler("/portal/", http.StatusFound).ServeHTTP)
	r.Get("/portal", http.RedirectHandler("/portal/", http.StatusMovedPermanently).ServeHTTP)
	return r
}

// CSP is the Content-Security-Policy of every portal response: its own
// stylesheet and modules and nothing else; no inline script or style, no
// framing, forms posted only to the portal itself.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// securityHeaders sets CSP and the other browser protections; pages are
// never cached (they show key values and CSRF tokens).
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		// same-origin, not no-referrer: under no-referrer browsers send
		// "Origin: null" with form posts, which checkForm refuses.
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		if !strings.HasPrefix(r.URL.Path, "/portal/static/") {
			h.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}

// staticFiles serves the portal's own files and the modules it loads
// (the console's chart module and the vendored uPlot), nothing else of
// the console.
func staticFiles(files fs.FS) http.Handler {
	fsrv := http.FileServerFS(files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if !strings.HasPrefix(p, "portal/") && !strings.HasPrefix(p, "vendor/uplot/") && p != "js/chart.js" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		fsrv.ServeHTTP(w, r)
	})
}

// origin is the portal's own origin as the browser sees it: BaseURL's,
// else the request's.
func (s *Server) origin(r *http.Request) string {
	if u, err := url.Parse(s.opts.BaseURL); err == nil && u.Host != "" {
		return u.Scheme + "://" + u.Host
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// home sends a signed-in partner to the APIs, others to sign in.
func (s *Server) home(w http.ResponseWriter, r *http.Request) {
	if sessionOf(r.Context()) == nil {
		http.Redirect(w, r, "/portal/signin", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/portal/apis", http.StatusSeeOther)
}

// published pushes committed changes; a failure is logged (the
// reconciler retries).
func (s *Server) published(ctx context.Context) {
	if s.pub == nil {
		return
	}
	if err := s.pub.Publish(context.WithoutCancel(ctx)); err != nil {
		s.log.Warn("portal: publish failed; the reconciler will retry", "err", err)
	}
}
