package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"tollgate/admin"
	"tollgate/engine"
	"tollgate/engine/failopen"
	"tollgate/engine/lease"
	"tollgate/engine/refusal"
	"tollgate/gateway"
	"tollgate/internal/redisurl"
	"tollgate/ledger"
	"tollgate/migrations"
	"tollgate/plans"
	"tollgate/plans/postgres"
	"tollgate/push"
	"tollgate/seal"
	"tollgate/usage"
	"tollgate/web"
)

// Main is one running tollgate: it loads nothing itself (Config is filled
// by the caller), opens everything in Run and closes it in reverse in
// Close. Tests start it with addresses ":0" and read the bound addresses
// from AdminAddr and GatewayAddr.
type Main struct {
	Config Config
	Logger *slog.Logger

	// AdminAddr and GatewayAddr are the addresses bound by Run
	// ("127.0.0.1:41234"); empty for a role that does not run.
	AdminAddr      string
	GatewayAddr    string
	GatewayTLSAddr string // the HTTPS listener of custom domain names; empty when off
	MetricsAddr    string
	PortalAddr     string // the developer portal's own listener (TOLLGATE_PORTAL_ADDR); empty on the admin port

	// UsageSource is where an admin node's flush worker takes usage from
	// (docs/usage.md); nil means the limiter Redis's own (usage.Source).
	// Tests may set another before Run.
	UsageSource ledger.UsageSource

	registry       *prometheus.Registry
	secrets        *seal.Key      // from TOLLGATE_SECRETS_KEY; nil without it
	gatewayProxies []netip.Prefix // TOLLGATE_TRUSTED_PROXIES, parsed
	adminProxies   []netip.Prefix // TOLLGATE_ADMIN_TRUSTED_PROXIES, parsed
	rdb            redis.UniversalClient
	cacheRDB       redis.UniversalClient // nil when the cache shares rdb
	db             *postgres.DB
	gw             *gateway.Server
	engine         *engine.Engine    // the gateway's Redis engine: the core of its limiter
	refusals       *refusal.Memory   // the limiter layers stacked on it (limiterStack)
	leases         *lease.Table      // nil without capacity leases
	charges        *failopen.Charges // pending charges: settles, and fail-open admissions in failure mode open
	clock          engine.Clock      // replaces Redis TIME in the scripts; nil in production, set by tests
	keyScanEvery   time.Duration     // expiry notice scan interval; 0 means defaultKeyScanEvery (tests shorten it)
	reader         *push.Reader
	servers        []*http.Server
	cancel         context.CancelFunc
	wg             sync.WaitGroup
	closeErr       error
	once           sync.Once
	logs           *logWriter   // buffers Logger's output; flushed by Close
	ownLogger      *slog.Logger // the Logger NewMain built (on logs)
}

// NewMain returns a Main for cfg with a logger built from its log
// settings, writing to stderr through a buffer (logWriter) that Close
// flushes.
func NewMain(cfg Config) *Main {
	logs := newLogWriter(os.Stderr)
	l := newLogger(logs, cfg.LogLevel, cfg.LogFormat)
	return &Main{Config: cfg, Logger: l, logs: logs, ownLogger: l}
}

func newLogger(w io.Writer, level, format string) *slog.Logger {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lv}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

func (m *Main) runsAdmin() bool   { return m.Config.Role == "admin" || m.Config.Role == "all" }
func (m *Main) runsGateway() bool { return m.Config.Role == "gateway" || m.Config.Role == "all" }

// Run connects to Redis (and PostgreSQL for the admin), migrates, starts
// the servers of the configured role and returns once they listen. Errors
// name what failed; Close must be called even when Run fails.
func (m *Main) Run(ctx context.Context) error {
	ctx, m.cancel = context.WithCancel(ctx)
	m.registry = prometheus.NewRegistry()
	m.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if m.runsAdmin() && !m.Config.Secrets.HasAdminCredentials() && !m.Config.InsecureAdmin {
		return errNoAdminCredentials // before anything binds a port
	}
	var err error
	if err := checkFlushInterval(m.Config.UsageFlushInterval); err != nil {
		return err
	}
	if err := checkIdleTimeout(m.Config.IdleTimeout); err != nil {
		return err
	}
	if err := engine.CheckPrefix(m.Config.RedisPrefix); err != nil {
		return fmt.Errorf("TOLLGATE_REDIS_PREFIX: %w", err)
	}
	if err := plans.ValidKeyPrefix(m.Config.KeyPrefix); err != nil && m.Config.KeyPrefix != "" {
		return fmt.Errorf("TOLLGATE_KEY_PREFIX: %w", err)
	}
	if m.Config.WebhookURL != "" && len(m.Config.Secrets.WebhookSecret) == 0 {
		return errors.New("TOLLGATE_WEBHOOK_URL is set without TOLLGATE_WEBHOOK_SECRET: receivers could not check the signatures")
	}
	if m.gatewayProxies, err = trustedProxies("TOLLGATE_TRUSTED_PROXIES", m.Config.TrustedProxies); err != nil {
		return err
	}
	if m.adminProxies, err = trustedProxies("TOLLGATE_ADMIN_TRUSTED_PROXIES", m.Config.AdminTrustedProxies); err != nil {
		return err
	}
	if m.secrets, err = secretsKey(m.Config.Secrets.SecretsKey); err != nil {
		return err
	}
	if m.rdb, err = redisurl.Open(m.Config.RedisURL); err != nil {
		return fmt.Errorf("TOLLGATE_REDIS_URL: %w", err)
	}
	if m.runsGateway() {
		if err := m.startGateway(ctx); err != nil {
			return fmt.Errorf("gateway: %w", err)
		}
	}
	if m.runsAdmin() {
		if err := m.startAdmin(ctx); err != nil {
			return fmt.Errorf("admin: %w", err)
		}
	} else if err := m.startMetrics(); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}

func (m *Main) startAdmin(ctx context.Context) error {
	cfg := m.Config
	addr := cfg.AdminAddr
	if !cfg.Secrets.HasAdminCredentials() { // Run allowed it: --insecure-admin
		addr = loopbackOnly(addr)
		m.Logger.Warn("admin API runs without credentials (--insecure-admin); listening on loopback only", "addr", addr)
	}
	if !cfg.NoMigrate {
		if err := migrations.Up(cfg.DatabaseURL); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	}
	db, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.Options{
		AccountDefault:   plans.Throttle{RateLimit: cfg.AccountRateLimit, BurstLimit: cfg.AccountBurstLimit},
		StatementTimeout: cfg.DatabaseTimeout,
	})
	if err != nil {
		return err
	}
	m.db = db
	if m.secrets == nil {
		m.Logger.Warn("TOLLGATE_SECRETS_KEY is not set: the private keys of custom domain names' certificates (in PostgreSQL and Redis) and the secrets of SigV4 credentials (in PostgreSQL) are stored as given, unencrypted, and the answers of key rotations made with an idempotency token are sealed under that token only")
	} else {
		m.Logger.Info("the private keys of custom domain names' certificates and the secrets of SigV4 credentials are stored encrypted", "secretsKeyId", m.secrets.ID())
	}
	pub := push.NewPublisher(db, m.rdb, push.Options{Prefix: cfg.RedisPrefix, Logger: m.Logger})
	if err := pub.Reconcile(ctx); err != nil {
		m.Logger.Warn("first publish failed; the reconciler retries every second", "err", err)
	}
	m.goRun(func() { pub.RunReconciler(ctx, time.Second) })
	m.goRun(func() { m.pruneChanges(ctx, db) })
	if cfg.AuditRetention > 0 {
		m.goRun(func() { m.pruneAudit(ctx, db, cfg.AuditRetention) })
	}
	limiter := usage.New(m.rdb, usage.Options{Prefix: cfg.RedisPrefix, Clock: m.clock})
	m.restore(ctx, db, limiter) // a fresh or emptied limiter serves keyed requests once restored
	m.goRun(func() { m.runRestore(ctx, db, limiter) })
	m.startFlusher(ctx, db, limiter)
	m.startKeyUpkeep(ctx, db)
	late := &lateHandler{}
	bound, err := m.listen("admin", addr, late, 0)
	m.AdminAddr = bound
	if err != nil {
		return err
	}
	onAdmin, portalURL, portalUsage, err := m.startPortal(db, pub, bound)
	if err != nil {
		return fmt.Errorf("portal: %w", err)
	}
	handler := admin.New(admin.Options{
		TrustedProxies:  m.adminProxies,
		Store:           db,
		CredentialStore: db,
		Audit:           db,
		Config:          db,
		Publisher:       pub,
		Credentials: admin.Credentials{
			AccessKeyID:     cfg.Secrets.AdminAccessKeyID,
			SecretAccessKey: cfg.Secrets.AdminSecretAccessKey,
			BearerToken:     cfg.Secrets.AdminToken,
		},
		Insecure:   !cfg.Secrets.HasAdminCredentials(), // only reached with --insecure-admin, bound to loopback above
		KeyPepper:  cfg.Secrets.KeyPepper,
		KeyFormat:  plans.KeyFormat{Prefix: cfg.KeyPrefix},
		Logger:     m.Logger,
		Web:        web.FS(),
		Metrics:    promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{}),
		Ready:      m.adminReady,
		BodyLimits: cfg.bodyLimits(),
		Usage:      limiter,
		Ledger:     db,
		Secrets:    m.secrets,

		Portal:        onAdmin,
		PortalInvites: db,
		PortalURL:     portalURL,
	})
	portalUsage.set(handler)
	late.set(handler)
	return nil
}

var errNoAdminCredentials = errors.New("admin: no admin credentials: set TOLLGATE_ADMIN_TOKEN or TOLLGATE_ADMIN_ACCESS_KEY_ID/TOLLGATE_ADMIN_SECRET_ACCESS_KEY, or pass --insecure-admin")

func (m *Main) adminReady(ctx context.Context) error {
	if err := m.db.Ping(ctx); err != nil {
		return fmt.Errorf("postgresql: %w", err)
	}
	if err := m.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return nil
}

func (m *Main) startGateway(ctx context.Context) error {
	cfg := m.Config
	cacheRDB, err := m.openCacheRedis()
	if err != nil {
		return err
	}
	m.engine = engine.New(m.rdb, engine.Options{Prefix: cfg.RedisPrefix, Timeout: cfg.RedisTimeout, Clock: m.clock, CacheRedis: cacheRDB,
		AwaitRestore: true, LeaseHold: 2 * lease.MaxLifetime})
	if err := m.engine.Load(ctx); err != nil {
		m.Logger.Warn("engine scripts not loaded; they load on first use", "err", err)
	}
	certFiles, err := certificateFiles(cfg.GatewayTLSCerts)
	if err != nil {
		return err
	}
	top := m.limiterStack()
	metrics := gateway.NewMetrics()
	m.registry.MustRegister(metrics.Collectors()...)
	// The reader feeds snapshots to the gateway and serves it key lookups;
	// it starts only after both exist. Config, usage and reload events
	// clear the engine's node-side memory of refusals.
	m.reader = push.NewReader(m.rdb, push.ReaderOptions{
		Prefix:     cfg.RedisPrefix,
		OnSnapshot: func(s *plans.Snapshot) error { return m.gw.SetSnapshot(s) },
		OnReject:   func(int64, error) { metrics.ConfigRejected.Inc() },
		OnEvent:    m.forgetChange,
		OnUsage:    m.forgetUsage,
		OnReload:   m.forgetAll,
		Logger:     m.Logger,
		// A cold key lookup reads the same Redis as a decision, so it
		// waits as long.
		LookupTimeout: engine.ReplyDeadline(cfg.RedisTimeout),
	})
	var access *gateway.AccessLog // else the access log goes through Logger
	if m.Logger == m.ownLogger && m.Logger.Enabled(ctx, slog.LevelInfo) {
		access = gateway.NewAccessLog(m.logs, cfg.LogFormat == "text") // where and as Logger writes
	}
	m.gw = gateway.New(gateway.Options{
		AccessLog:        access,
		Keys:             m.reader,
		Engine:           engine.Port{Engine: m.engine, Top: top, Settler: m.charges},
		KeyPepper:        cfg.Secrets.KeyPepper,
		KeyFormat:        plans.KeyFormat{Prefix: cfg.KeyPrefix},
		FailureMode:      cfg.LimiterFailureMode,
		TrustedProxies:   m.gatewayProxies,
		BodyLimits:       cfg.bodyLimits(),
		Logger:           m.Logger,
		Metrics:          metrics,
		Ready:            func(context.Context) error { return m.reader.Ready() },
		Secrets:          m.secrets,
		CertificateFiles: certFiles,
	})
	if err := m.reader.Start(ctx); err != nil {
		return err
	}
	m.goRun(func() { m.reader.Run(ctx) })
	bound, err := m.listen("gateway", cfg.GatewayAddr, m.gw, gateway.ServerMaxHeaderBytes)
	m.GatewayAddr = bound
	if err != nil || cfg.GatewayTLSAddr == "" {
		return err
	}
	m.goRun(func() { m.gw.WatchCertificateFiles(ctx, 0) })
	m.GatewayTLSAddr, err = m.listenTLS("gateway-tls", cfg.GatewayTLSAddr, m.gw, gateway.ServerMaxHeaderBytes, m.gw.TLSConfig())
	return err
}

// secretsKey derives the key of TOLLGATE_SECRETS_KEY; nil when unset.
func secretsKey(secret []byte) (*seal.Key, error) {
	if len(secret) == 0 {
		return nil, nil
	}
	k, err := seal.NewKey(secret)
	if err != nil {
		return nil, fmt.Errorf("TOLLGATE_SECRETS_KEY: %w", err)
	}
	return k, nil
}

// openCacheRedis opens TOLLGATE_CACHE_REDIS_URL; nil (the limiter Redis)
// when that is empty or the same URL.
func (m *Main) openCacheRedis() (redis.UniversalClient, error) {
	url := m.Config.CacheRedisURL
	if url == "" || url == m.Config.RedisURL {
		return nil, nil
	}
	rdb, err := redisurl.Open(url)
	if err != nil {
		return nil, fmt.Errorf("TOLLGATE_CACHE_REDIS_URL: %w", err)
	}
	m.cacheRDB = rdb
	return rdb, nil
}

func (m *Main) startMetrics() error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{}))
	if m.Config.Pprof {
		m.Logger.Info("serving runtime profiles under /debug/pprof/ on the metrics listener")
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	bound, err := m.listen("metrics", m.Config.MetricsAddr, mux, 0)
	m.MetricsAddr = bound
	return err
}

// Change log retention (config_changes): the admin deletes, at start and
// hourly, changes older than changeRetention that are more than changeKeep
// versions behind. A publisher further behind than that republishes the
// whole configuration instead of replaying changes.
const (
	changeRetention = 7 * 24 * time.Hour
	changeKeep      = 10000
	pruneEvery      = time.Hour
)

// pruneChanges prunes the change log until ctx ends.
func (m *Main) pruneChanges(ctx context.Context, db *postgres.DB) {
	t := time.NewTicker(pruneEvery)
	defer t.Stop()
	for {
		n, err := db.PruneChanges(ctx, changeKeep, changeRetention)
		switch {
		case err != nil && ctx.Err() == nil:
			m.Logger.Warn("pruning the config change log failed; retrying in an hour", "err", err)
		case n > 0:
			m.Logger.Info("pruned the config change log", "deleted", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pruneAudit deletes audit entries older than retention, at start and
// hourly, until ctx ends.
func (m *Main) pruneAudit(ctx context.Context, db *postgres.DB, retention time.Duration) {
	t := time.NewTicker(pruneEvery)
	defer t.Stop()
	for {
		n, err := db.PruneAudit(ctx, retention)
		switch {
		case err != nil && ctx.Err() == nil:
			m.Logger.Warn("pruning the audit log failed; retrying in an hour", "err", err)
		case n > 0:
			m.Logger.Info("pruned the audit log", "deleted", n, "retention", retention.String())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// listen binds addr and serves h (the server named server: "admin",
// "gateway" or "metrics") in the background; it returns the bound address.
func (m *Main) listen(server, addr string, h http.Handler, maxHeader int) (string, error) {
	return m.listenTLS(server, addr, h, maxHeader, nil)
}

// listenTLS is listen over TLS with tlsCfg (nil: plain HTTP). A failed
// TLS handshake (a client naming no custom domain, or an old TLS version)
// is logged at debug level: scanners make many.
func (m *Main) listenTLS(server, addr string, h http.Handler, maxHeader int, tlsCfg *tls.Config) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: m.Config.idleTimeout(), MaxHeaderBytes: maxHeader,
		ErrorLog: slog.NewLogLogger(m.Logger.Handler(), slog.LevelWarn), TLSConfig: tlsCfg}
	if tlsCfg != nil {
		srv.ErrorLog = log.New(handshakeLog{m.Logger.With("server", server)}, "", 0)
	}
	m.servers = append(m.servers, srv)
	m.goRun(func() {
		serve := srv.Serve
		if tlsCfg != nil {
			serve = func(ln net.Listener) error { return srv.ServeTLS(ln, "", "") }
		}
		if err := serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.Logger.Error("server stopped", "addr", ln.Addr().String(), "err", err)
		}
	})
	m.Logger.Info("listening", "server", server, "addr", ln.Addr().String(), "role", m.Config.Role)
	return ln.Addr().String(), nil
}

// handshakeLog is the error log of a TLS listener: "TLS handshake error"
// lines at debug level, anything else at warn.
type handshakeLog struct{ log *slog.Logger }

func (h handshakeLog) Write(p []byte) (int, error) {
	level := slog.LevelWarn
	if bytes.Contains(p, []byte("TLS handshake error")) {
		level = slog.LevelDebug
	}
	h.log.Log(context.Background(), level, string(bytes.TrimSpace(p)))
	return len(p), nil
}

func (m *Main) goRun(f func()) {
	m.wg.Add(1)
	go func() { defer m.wg.Done(); f() }()
}

// Close stops accepting requests, waits up to Config.ShutdownTimeout for
// in-flight ones to finish, then stops background loops and closes the
// Redis and PostgreSQL clients. It is safe to call more than once.
func (m *Main) Close() error {
	m.once.Do(func() {
		timeout := m.Config.ShutdownTimeout
		if timeout <= 0 {
			timeout = 30 * time.Second
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		for _, s := range m.servers {
			if err := s.Shutdown(ctx); err != nil {
				m.closeErr = errors.Join(m.closeErr, err)
			}
		}
		if m.cancel != nil {
			m.cancel()
		}
		m.wg.Wait()
		if m.db != nil {
			m.db.Close()
		}
		if m.leases != nil {
			m.leases.Close() // give-backs land before the client closes
		}
		if m.charges != nil {
			m.charges.Close()
		}
		if m.engine != nil {
			_ = m.engine.Close()
		}
		if m.rdb != nil {
			_ = m.rdb.Close()
		}
		if m.logs != nil {
			m.logs.Flush()
		}
		if m.cacheRDB != nil {
			_ = m.cacheRDB.Close()
		}
	})
	return m.closeErr
}

// loopbackOnly rewrites ":8001" or "0.0.0.0:8001" to "127.0.0.1:8001".
func loopbackOnly(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if !isLoopback(host) { // "", 0.0.0.0 and :: included
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
