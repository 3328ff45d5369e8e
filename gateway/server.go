package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"tollgate/cache"
	"tollgate/internal/clientaddr"
	"tollgate/internal/reqbody"
	"tollgate/plans"
	"tollgate/seal"
)

// Input limits (docs/behaviour.md "Limits"). cmd sets ReadHeaderTimeout
// and ServerMaxHeaderBytes on the gateway's http.Server; the handler
// enforces the others.
const (
	ReadHeaderTimeout = 10 * time.Second
	// MaxHeaderBytes bounds the request headers, each counted as its
	// "Name: value" line with CRLF (Host included): 431 above.
	MaxHeaderBytes = 64 << 10
	MaxURLBytes    = 8 << 10  // bytes of the request target: 414 above
	MaxBodyBytes   = 10 << 20 // bytes of request body: 413 above
	// ServerMaxHeaderBytes is what the http.Server's MaxHeaderBytes must be
	// at least, so that net/http (which counts the request line too, and
	// adds 4 KiB of its own) never cuts a request the handler's exact
	// limits would accept.
	ServerMaxHeaderBytes = MaxHeaderBytes + MaxURLBytes
)

// Failure modes: what the gateway does when the limiter cannot decide.
const (
	FailOpen   = "open"   // admit without limits or rate-limit headers (default)
	FailClosed = "closed" // answer 503
)

// KeyLookup finds the record of an API key by its hash (plans.HashKey).
// It returns (nil, nil) for a key it knows does not exist, and an error
// (a *plans.Error of KindUnavailable, or any other) when it cannot tell:
// the gateway then answers 503, never 403. push.Reader implements it.
type KeyLookup interface {
	Lookup(ctx context.Context, hash string) (*plans.KeyRecord, error)
	// Cached returns the record of hash when this node holds it in memory
	// (no Redis round trip), and false otherwise. A client address that
	// has used up its failed key attempts is served only keys found here.
	Cached(hash string) (*plans.KeyRecord, bool)
}

// Options configures a Server. Keys and Engine are required; every other
// zero value is a documented default.
type Options struct {
	// Keys finds API key records (push.Reader).
	Keys KeyLookup
	// Engine decides throttles and quotas and keeps the stage response
	// cache (*engine.Engine).
	Engine Engine
	// KeyPepper, when set, makes key hashes HMAC-SHA-256 (TOLLGATE_KEY_PEPPER).
	KeyPepper []byte
	// KeyFormat is the shape of generated key values (TOLLGATE_KEY_PREFIX):
	// a value of that shape with a bad checksum is refused without a
	// lookup. The zero value is the default prefix.
	KeyFormat plans.KeyFormat
	// FailureMode is FailOpen ("open", the default when empty) or
	// FailClosed ("closed").
	FailureMode string
	// TrustedProxies are the peers whose X-Forwarded-For is believed when
	// finding the client address (TOLLGATE_TRUSTED_PROXIES; default none).
	TrustedProxies []netip.Prefix
	// BodyLimits bound how long a client may take to send a request body
	// (see package reqbody); the zero value means reqbody.DefaultLimits.
	BodyLimits reqbody.Limits
	// Logger receives operational messages, and the access log unless
	// AccessLog is set; nil means slog.Default().
	Logger *slog.Logger
	// AccessLog, when set, writes the access log (the same lines the
	// Logger's slog JSON or text handler would write, without their
	// allocations); the caller sets it only when the log level writes
	// INFO.
	AccessLog *AccessLog
	// Transport calls upstreams; nil means a tuned *http.Transport (see
	// NewTransport).
	Transport http.RoundTripper
	// Metrics receives the gateway's measurements; nil means a private set
	// nobody scrapes. New registers nothing: the caller registers
	// Metrics.Collectors().
	Metrics *Metrics
	// Ready, when set, is also consulted by Ready (e.g. a Redis ping).
	Ready func(ctx context.Context) error
	// CacheClock is the response cache's time: when an entry was stored,
	// whether it is fresh or within a stale window, its Age. nil means the
	// node's clock (time.Now); tests inject one. Limits and usage never
	// read it: they run on Redis's time.
	CacheClock func() time.Time
	// Secrets opens the sealed private keys of custom domain names'
	// certificates (TOLLGATE_SECRETS_KEY; package seal); nil opens only
	// keys stored as given.
	Secrets *seal.Key
	// CertificateFiles are the certificates of this node's configuration
	// (TOLLGATE_GATEWAY_TLS_CERTIFICATES), by the regionalCertificateArn
	// a domain name names them with; WatchCertificateFiles reloads them.
	CertificateFiles map[string]CertificateFiles
}

// Server is the gateway's http.Handler. Create it with New and give it a
// snapshot with SetSnapshot; until then every API request answers 503.
type Server struct {
	cfg          atomic.Pointer[config]
	rejected     atomic.Pointer[error] // the last SetSnapshot error, nil once one succeeds
	lookup       KeyLookup
	engine       Engine           // the Engine of Options, wrapped by clock
	clock        *redisClock      // Redis time as the decisions tell it (expiry)
	hasher       *plans.KeyHasher // API key values to hashes, under Options.KeyPepper
	keyFmt       plans.KeyFormat
	failureMode  string
	trusted      []netip.Prefix
	log          *slog.Logger
	access       *AccessLog // nil: the access log goes through log
	metrics      *Metrics
	readyCheck   func(ctx context.Context) error
	proxy        *httputil.ReverseProxy
	attempts     *clientaddr.Failures
	limiterDown  atomic.Bool      // an outage was logged and has not ended
	failingSince atomic.Int64     // unix ns of the first failure since the last success; 0 none
	outageAfter  time.Duration    // see limiterFailed; tests shorten it
	nodeNow      func() time.Time // the node's clock, for outageAfter; tests step it
	bodyLimits   reqbody.Limits
	flight       cache.Flight     // concurrent misses and refreshes of one entry on this node
	now          func() time.Time // the cache's clock (Options.CacheClock)
	fills        sync.WaitGroup   // misses and refreshes until their fill landed (tests wait)
	certs        *certStore       // custom domain names' certificates (TLSConfig)
}

// New returns a Server configured by opts. It panics when Keys or Engine
// is nil or FailureMode is not "", "open" or "closed" (wiring bugs).
func New(opts Options) *Server {
	if opts.Keys == nil || opts.Engine == nil {
		panic("gateway: Options.Keys and Options.Engine are required")
	}
	s := &Server{
		lookup:      opts.Keys,
		clock:       newRedisClock(opts.Engine, time.Now),
		hasher:      plans.NewKeyHasher(opts.KeyPepper),
		keyFmt:      opts.KeyFormat,
		failureMode: opts.FailureMode,
		trusted:     opts.TrustedProxies,
		log:         opts.Logger,
		access:      opts.AccessLog,
		metrics:     opts.Metrics,
		readyCheck:  opts.Ready,
		attempts:    newAttempts(time.Now),
		bodyLimits:  opts.BodyLimits,
		outageAfter: outageAfter,
		nodeNow:     time.Now,
		now:         opts.CacheClock,
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.engine = s.clock
	if s.bodyLimits == (reqbody.Limits{}) {
		s.bodyLimits = reqbody.DefaultLimits
	}
	switch s.failureMode {
	case "":
		s.failureMode = FailOpen
	case FailOpen, FailClosed:
	default:
		panic("gateway: FailureMode must be open or closed, got " + opts.FailureMode)
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.metrics == nil {
		s.metrics = NewMetrics()
	}
	s.certs = newCertStore(opts.Secrets, opts.CertificateFiles, s.log)
	transport := opts.Transport
	if transport == nil {
		transport = NewTransport()
	}
	s.proxy = s.newProxy(transport)
	return s
}

// SetSnapshot validates and compiles snap (routers per stage, resolved
// buckets, custom domain names with their certificates) and swaps it in
// whole; requests already running keep the one
// they loaded. SetSnapshot does not change snap; the compiled form keeps
// references into it, so the caller must not change it afterwards. On
// error the previous snapshot keeps serving, Ready fails until a later
// SetSnapshot succeeds, and the error is returned.
//
// SetSnapshot does not count the rejection in
// Metrics.ConfigRejected: its caller does (push.Reader's OnReject sees
// every refused snapshot, including those that never reach SetSnapshot),
// so one rejection is counted once.
func (s *Server) SetSnapshot(snap *plans.Snapshot) error {
	cfg, err := compile(snap)
	if err != nil {
		s.rejected.Store(&err)
		s.log.LogAttrs(context.Background(), slog.LevelError, "config snapshot rejected; keeping the previous one", slog.String("error", err.Error()))
		return err
	}
	cfg.domains = s.certs.compileDomains(snap.Domains)
	old := s.cfg.Swap(cfg)
	s.rejected.Store(nil)
	s.metrics.ConfigVersion.Set(float64(cfg.version))
	if old != nil {
		for apiID, ac := range old.apis {
			for name := range ac.stages {
				if !cfg.hasStage(apiID, name) {
					s.metrics.forgetStage(apiID, name)
				}
			}
			if cfg.apis[apiID] == nil {
				s.metrics.forgetStage(apiID, "") // the partner usage endpoint's series
			}
		}
	}
	return nil
}

// ErrNoSnapshot is Ready's error before the first successful SetSnapshot.
var ErrNoSnapshot = errors.New("gateway: no config snapshot loaded")

// Ready returns nil when the gateway has a usable snapshot, the last
// snapshot it was given was usable, and Options.Ready (if set) passes.
// Otherwise it returns ErrNoSnapshot, the rejection error, or the check's
// error.
func (s *Server) Ready() error {
	if s.cfg.Load() == nil {
		return ErrNoSnapshot
	}
	if p := s.rejected.Load(); p != nil {
		return *p
	}
	if s.readyCheck != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return s.readyCheck(ctx)
	}
	return nil
}

// Version returns the config version being served, 0 before the first
// snapshot.
func (s *Server) Version() int64 {
	if c := s.cfg.Load(); c != nil {
		return c.version
	}
	return 0
}
