package main

import (
	"fmt"
	"net/netip"
	"os"
	"strings"
	"time"

	"tollgate/gateway"
	"tollgate/internal/reqbody"
	"tollgate/seal"
)

// Config is everything tollgate reads at start (the README's table; docs/operations.md). Each
// field is a flag whose environment variable has the same name in upper
// case with a TOLLGATE_ prefix; secrets (Secrets) come only from the
// environment or a _FILE variant, never from flags.
type Config struct {
	Role                string        `help:"Which servers to run: admin, gateway or all." enum:"admin,gateway,all" default:"all" env:"TOLLGATE_ROLE"`
	DatabaseTimeout     time.Duration `help:"Deadline of one PostgreSQL operation (admin): a database that accepts connections but does not answer gets 503 within it; also the server's statement_timeout. Opening a connection has 5 s unless the URL sets connect_timeout." default:"10s" env:"TOLLGATE_DATABASE_TIMEOUT"`
	DatabaseURL         string        `help:"PostgreSQL URL (admin only)." default:"postgres://postgres@127.0.0.1:5432/tollgate" env:"TOLLGATE_DATABASE_URL"`
	RedisURL            string        `help:"Limiter Redis: redis://, rediss://, redis-sentinel://h1:p1,h2:p2/db?master=name, or Redis Cluster: redis-cluster://h1:p1,h2:p2 (rediss-cluster:// over TLS; docs/scale.md)." default:"redis://127.0.0.1:6379/0" env:"TOLLGATE_REDIS_URL"`
	CacheRedisURL       string        `help:"Cache Redis (default: the limiter Redis); any scheme of TOLLGATE_REDIS_URL." env:"TOLLGATE_CACHE_REDIS_URL"`
	RedisPrefix         string        `help:"Prefix of every Redis key tollgate writes (lets several installations or tests share one Redis); no { or }." default:"tg" env:"TOLLGATE_REDIS_PREFIX"`
	RedisTimeout        time.Duration `help:"After Redis failed to answer, how long decisions fail at once before one tries it again; deadline of a cache read. A decision waits for its reply up to 1 s (docs/behaviour.md)." default:"50ms" env:"TOLLGATE_REDIS_TIMEOUT"`
	LeaseLifetime       time.Duration `help:"Lifetime of a capacity lease: a hot key's decision takes several tokens and quota units and the node admits on them without a Redis round trip for at most this long (at most 100ms; 0 turns leases off; docs/leases.md)." default:"100ms" env:"TOLLGATE_LEASE_LIFETIME"`
	AdminAddr           string        `help:"Admin API listen address: loopback by default (reach it through a tunnel, or bind a private address on purpose; docs/operations.md)." default:"127.0.0.1:8001" env:"TOLLGATE_ADMIN_ADDR"`
	GatewayAddr         string        `help:"Gateway listen address: every interface by default (partners must reach it)." default:":8000" env:"TOLLGATE_GATEWAY_ADDR"`
	GatewayTLSAddr      string        `help:"Gateway HTTPS listen address for custom domain names: TLS 1.2 and newer, HTTP/2, each domain's certificate by SNI; empty: no HTTPS listener (docs/behaviour.md)." default:":8443" env:"TOLLGATE_GATEWAY_TLS_ADDR"`
	GatewayTLSCerts     string        `name:"gateway-tls-certificates" help:"Certificates of this node for custom domain names created with a regionalCertificateArn: ARN=CERTFILE,KEYFILE entries separated by ; or new lines (CERTFILE: the certificate, then its chain); changed files are served within 5 s." env:"TOLLGATE_GATEWAY_TLS_CERTIFICATES"`
	MetricsAddr         string        `help:"Metrics listen address of a gateway-only node (admin nodes serve /metrics on the admin port)." default:"127.0.0.1:9100" env:"TOLLGATE_METRICS_ADDR"`
	Pprof               bool          `help:"Also serve Go's runtime profiles (net/http/pprof) under /debug/pprof/ on the metrics listener of a gateway-only node; keep that listener private." env:"TOLLGATE_PPROF"`
	AccountRateLimit    float64       `help:"Account throttle rate in requests per second; seeds PostgreSQL on first start, after which PATCH /account is authoritative." default:"10000" env:"TOLLGATE_ACCOUNT_RATE_LIMIT"`
	AccountBurstLimit   int32         `help:"Account throttle burst in requests; seeds PostgreSQL on first start." default:"5000" env:"TOLLGATE_ACCOUNT_BURST_LIMIT"`
	LimiterFailureMode  string        `help:"When Redis cannot decide (down, or no reply within 1 s): open admits known keys without limits and charges their quota once Redis answers, closed answers 503." enum:"open,closed" default:"open" env:"TOLLGATE_LIMITER_FAILURE_MODE"`
	TrustedProxies      []string      `help:"CIDRs of proxies in front of the gateway whose X-Forwarded-For is trusted for the client address (failed key attempts are limited per client)." env:"TOLLGATE_TRUSTED_PROXIES"`
	AdminTrustedProxies []string      `help:"CIDRs of proxies in front of the admin API whose X-Forwarded-For is trusted for the client address (failed authentication is limited per client); none by default, so the admin counts by connection." env:"TOLLGATE_ADMIN_TRUSTED_PROXIES"`
	LogLevel            string        `help:"debug, info, warn or error." enum:"debug,info,warn,error" default:"info" env:"TOLLGATE_LOG_LEVEL"`
	LogFormat           string        `help:"json or text." enum:"json,text" default:"json" env:"TOLLGATE_LOG_FORMAT"`
	InsecureAdmin       bool          `help:"Run the admin without credentials, on 127.0.0.1 only." env:"TOLLGATE_INSECURE_ADMIN"`
	NoMigrate           bool          `help:"Do not run database migrations on start." env:"TOLLGATE_NO_MIGRATE"`
	ShutdownTimeout     time.Duration `help:"How long SIGTERM waits for in-flight requests, and then on an admin node for the last usage flush." default:"30s" env:"TOLLGATE_SHUTDOWN_TIMEOUT"`
	IdleTimeout         time.Duration `help:"How long every listener keeps an idle keep-alive connection open before closing it (1s to 1h); put a load balancer's own idle timeout below it (docs/operations.md)." default:"120s" env:"TOLLGATE_IDLE_TIMEOUT"`
	BodyTimeout         time.Duration `help:"How long a request body may take on either port before its rate counts; after that it must average --body-min-rate, else 408 and the connection is closed." default:"20s" env:"TOLLGATE_BODY_TIMEOUT"`
	BodyMinRate         int64         `help:"Bytes per second a request body must average once --body-timeout has passed." default:"4096" env:"TOLLGATE_BODY_MIN_RATE"`
	KeyPrefix           string        `help:"Prefix of generated API key values (1 to 20 letters and digits), followed by random characters and a checksum; set the same on every node: a gateway refuses a value of this shape whose checksum is wrong without a lookup (docs/behaviour.md, API keys)." default:"tg" env:"TOLLGATE_KEY_PREFIX"`
	AuditRetention      time.Duration `help:"How long the audit log keeps an entry; older ones are deleted hourly by admin nodes (0 keeps them forever; docs/operations.md)." default:"8760h" env:"TOLLGATE_AUDIT_RETENTION"`
	PortalAddr          string        `help:"Listen address of the developer portal (/portal/); empty serves it on the admin port (docs/portal.md)." env:"TOLLGATE_PORTAL_ADDR"`
	PortalURL           string        `help:"The developer portal's public base URL (https://developers.example.com): invite links point there, and its cookies are Secure unless it is http://. Default: its own address." env:"TOLLGATE_PORTAL_URL"`
	PortalGatewayURL    string        `help:"Where partners call an API, as the portal shows it, with {apiId} for the API's id." default:"http://{apiId}.execute-api.localhost:8000" env:"TOLLGATE_PORTAL_GATEWAY_URL"`
	PortalSignupPlan    string        `help:"Usage plan id that self-service sign-up on the developer portal puts new keys in; empty turns sign-up off." env:"TOLLGATE_PORTAL_SIGNUP_PLAN"`
	WebhookURL          string        `help:"Where admin nodes POST tollgate's webhooks (key expiry notices, quota alerts), signed with TOLLGATE_WEBHOOK_SECRET and retried with backoff until a 2xx (docs/operations.md, Webhooks); none by default." env:"TOLLGATE_WEBHOOK_URL"`
	KeyExpiryNotice     time.Duration `help:"How long before an API key's expiry a key.expiring webhook is sent (needs TOLLGATE_WEBHOOK_URL); 0 sends none." default:"168h" env:"TOLLGATE_KEY_EXPIRY_NOTICE"`
	UsageFlushInterval  time.Duration `help:"How often an admin node moves usage from the limiter Redis into the PostgreSQL ledger (100ms to 1m); if the limiter Redis loses its data, at most this interval plus one flush is forgotten (docs/usage.md)." default:"500ms" env:"TOLLGATE_USAGE_FLUSH_INTERVAL"`

	Secrets Secrets `kong:"-"`
}

// bodyLimits are the slow-body limits of both ports: reqbody.DefaultLimits
// with BodyTimeout and BodyMinRate when they are set (tests leave them 0).
func (c Config) bodyLimits() reqbody.Limits {
	l := reqbody.DefaultLimits
	if c.BodyTimeout > 0 {
		l.Grace = c.BodyTimeout
	}
	if c.BodyMinRate > 0 {
		l.MinRate = c.BodyMinRate
	}
	return l
}

// Bounds and default of Config.IdleTimeout.
const (
	defaultIdleTimeout = 120 * time.Second
	minIdleTimeout     = time.Second
	maxIdleTimeout     = time.Hour
)

// idleTimeout is IdleTimeout, or its default when unset (tests leave it 0).
func (c Config) idleTimeout() time.Duration {
	if c.IdleTimeout == 0 {
		return defaultIdleTimeout
	}
	return c.IdleTimeout
}

// checkIdleTimeout refuses an idle timeout outside 1s..1h: a negative or
// tiny one closes connections between a client's requests, and a huge one
// holds file descriptors for clients long gone.
func checkIdleTimeout(d time.Duration) error {
	if d != 0 && (d < minIdleTimeout || d > maxIdleTimeout) {
		return fmt.Errorf("TOLLGATE_IDLE_TIMEOUT %v must be between %v and %v", d, minIdleTimeout, maxIdleTimeout)
	}
	return nil
}

// Secrets are read only from the environment (NAME) or from the file named
// by NAME_FILE (trailing newline trimmed).
type Secrets struct {
	AdminAccessKeyID     string // TOLLGATE_ADMIN_ACCESS_KEY_ID
	AdminSecretAccessKey string // TOLLGATE_ADMIN_SECRET_ACCESS_KEY
	AdminToken           string // TOLLGATE_ADMIN_TOKEN, at least 32 characters
	KeyPepper            []byte // TOLLGATE_KEY_PEPPER: key hashes become HMAC-SHA-256
	// SecretsKey (TOLLGATE_SECRETS_KEY, at least 32 bytes) encrypts the
	// private keys of custom domain names' certificates in PostgreSQL and
	// Redis; admin and gateway nodes need the same one (package seal).
	SecretsKey    []byte
	WebhookSecret []byte // TOLLGATE_WEBHOOK_SECRET: signs webhooks (Tollgate-Signature)
}

// LoadSecrets reads Secrets from getenv (os.Getenv in production). It
// returns an error naming the variable when a _FILE cannot be read, the
// admin token or the secrets key is shorter than 32 characters, or only
// half of the SigV4 credential pair is set.
func LoadSecrets(getenv func(string) string) (Secrets, error) {
	var s Secrets
	var pepper, secretsKey, webhookSecret string
	for _, v := range []struct {
		name string
		dst  *string
	}{
		{"TOLLGATE_ADMIN_ACCESS_KEY_ID", &s.AdminAccessKeyID},
		{"TOLLGATE_ADMIN_SECRET_ACCESS_KEY", &s.AdminSecretAccessKey},
		{"TOLLGATE_ADMIN_TOKEN", &s.AdminToken},
		{"TOLLGATE_KEY_PEPPER", &pepper},
		{"TOLLGATE_SECRETS_KEY", &secretsKey},
		{"TOLLGATE_WEBHOOK_SECRET", &webhookSecret},
	} {
		val, err := secret(getenv, v.name)
		if err != nil {
			return s, err
		}
		*v.dst = val
	}
	s.KeyPepper = []byte(pepper)
	if secretsKey != "" && len(secretsKey) < seal.MinSecretLen {
		return s, fmt.Errorf("TOLLGATE_SECRETS_KEY must be at least %d bytes (for example openssl rand -base64 32)", seal.MinSecretLen)
	}
	s.SecretsKey = []byte(secretsKey)
	s.WebhookSecret = []byte(webhookSecret)
	if s.AdminToken != "" && len(s.AdminToken) < 32 {
		return s, fmt.Errorf("TOLLGATE_ADMIN_TOKEN must be at least 32 characters")
	}
	if (s.AdminAccessKeyID == "") != (s.AdminSecretAccessKey == "") {
		return s, fmt.Errorf("TOLLGATE_ADMIN_ACCESS_KEY_ID and TOLLGATE_ADMIN_SECRET_ACCESS_KEY must be set together")
	}
	return s, nil
}

func secret(getenv func(string) string, name string) (string, error) {
	if v := getenv(name); v != "" {
		return v, nil
	}
	path := getenv(name + "_FILE")
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s_FILE: %w", name, err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// HasAdminCredentials reports whether any admin credential is configured.
func (s Secrets) HasAdminCredentials() bool {
	return s.AdminToken != "" || s.AdminAccessKeyID != ""
}

// trustedProxies parses CIDRs (a single address counts as /32 or /128) of
// the setting env.
func trustedProxies(env string, list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		for _, part := range strings.Split(s, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			p, err := netip.ParsePrefix(part)
			if err != nil {
				a, aerr := netip.ParseAddr(part)
				if aerr != nil {
					return nil, fmt.Errorf("%s: %q is not a CIDR or address", env, part)
				}
				p = netip.PrefixFrom(a, a.BitLen())
			}
			out = append(out, p.Masked())
		}
	}
	return out, nil
}

// certificateFiles parses TOLLGATE_GATEWAY_TLS_CERTIFICATES: entries
// ARN=CERTFILE,KEYFILE separated by ";" or new lines. Errors name the
// variable and the entry.
func certificateFiles(v string) (map[string]gateway.CertificateFiles, error) {
	out := map[string]gateway.CertificateFiles{}
	for _, entry := range strings.FieldsFunc(v, func(r rune) bool { return r == ';' || r == '\n' }) {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		arn, files, ok := strings.Cut(entry, "=")
		certFile, keyFile, ok2 := strings.Cut(files, ",")
		arn, certFile, keyFile = strings.TrimSpace(arn), strings.TrimSpace(certFile), strings.TrimSpace(keyFile)
		if !ok || !ok2 || arn == "" || certFile == "" || keyFile == "" {
			return nil, fmt.Errorf("TOLLGATE_GATEWAY_TLS_CERTIFICATES: entry %q is not ARN=CERTFILE,KEYFILE", entry)
		}
		if _, dup := out[arn]; dup {
			return nil, fmt.Errorf("TOLLGATE_GATEWAY_TLS_CERTIFICATES: %s is listed twice", arn)
		}
		out[arn] = gateway.CertificateFiles{CertFile: certFile, KeyFile: keyFile}
	}
	return out, nil
}
