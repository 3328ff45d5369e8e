package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"tollgate/plans"
	"tollgate/seal"
)

// CertificateFiles are the PEM files of a certificate the node's own
// configuration holds (TOLLGATE_GATEWAY_TLS_CERTIFICATES): CertFile has
// the certificate followed by its chain, KeyFile its private key.
type CertificateFiles struct {
	CertFile, KeyFile string
}

// CertificateFileCheck is how often WatchCertificateFiles looks for
// changed certificate files by default.
const CertificateFileCheck = 5 * time.Second

// TLSConfig returns the configuration of the gateway's HTTPS listener
// (TOLLGATE_GATEWAY_TLS_ADDR): TLS 1.2 and newer; the certificate of the
// custom domain name the client names (SNI), taken from the snapshot
// being served, so a new domain or certificate is served from the next
// handshake on; HTTP/2 and HTTP/1.1. A handshake naming no domain (or
// none) fails.
func (s *Server) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: s.getCertificate,
		NextProtos:     []string{"h2", "http/1.1"},
	}
}

// errNoDomain fails the handshake of a server name no domain holds.
var errNoDomain = errors.New("gateway: no custom domain name for this server name")

func (s *Server) getCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	d := s.cfg.Load().domainFor(hello.ServerName)
	if d == nil || hello.ServerName == "" {
		return nil, errNoDomain
	}
	if d.cert != nil {
		return d.cert, nil
	}
	if f := s.certs.files[d.arn]; f != nil {
		if c := f.cur.Load(); c != nil {
			return c, nil
		}
	}
	return nil, fmt.Errorf("gateway: domain %s has no usable certificate", d.name)
}

// certStore makes the certificates of a snapshot's domains usable: it
// opens sealed private keys, parses each stored certificate once (kept by
// content from one snapshot to the next) and holds the certificates of
// the node's files by ARN.
type certStore struct {
	secrets *seal.Key
	log     *slog.Logger
	files   map[string]*fileCert // by ARN; fixed at New

	mu      sync.Mutex
	parsed  map[[32]byte]parsedCert // certificates of the last snapshot, by content
	missing map[string]bool         // ARNs of the last snapshot that no files serve (logged once)
}

type parsedCert struct {
	cert *tls.Certificate
	err  error
}

func newCertStore(secrets *seal.Key, files map[string]CertificateFiles, log *slog.Logger) *certStore {
	cs := &certStore{secrets: secrets, log: log, files: map[string]*fileCert{}}
	for arn, f := range files {
		fc := &fileCert{arn: arn, CertificateFiles: f}
		cs.files[arn] = fc
		cs.reload(fc)
	}
	return cs
}

// compileDomains builds the routes of a snapshot's domains with their
// certificates. A domain whose certificate cannot be used is kept (its
// mappings route requests of a Host header on the plain listener) and
// logged; its handshakes fail. A certificate or a missing ARN is logged
// once, in the first snapshot that has it.
func (cs *certStore) compileDomains(domains map[string]*plans.DomainConfig) map[string]*domainRoute {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	out := make(map[string]*domainRoute, len(domains))
	parsed := make(map[[32]byte]parsedCert, len(domains))
	missing := map[string]bool{}
	for name, d := range domains {
		dr := compileDomainRoute(d)
		out[name] = dr
		if d.Certificate == nil {
			if cs.files[d.CertificateArn] == nil {
				if !cs.missing[d.CertificateArn] {
					cs.log.Error("custom domain name names a certificate this node's TOLLGATE_GATEWAY_TLS_CERTIFICATES does not have; its TLS handshakes fail",
						"domain", name, "regionalCertificateArn", d.CertificateArn)
				}
				missing[d.CertificateArn] = true
			}
			continue
		}
		sum := certSum(name, d.Certificate)
		pc, seen := cs.parsed[sum]
		if !seen {
			pc = cs.parse(name, d.Certificate)
			if pc.err != nil {
				cs.log.Error("custom domain name's certificate is not usable; its TLS handshakes fail", "domain", name, "err", pc.err)
			}
		}
		parsed[sum], dr.cert = pc, pc.cert
	}
	cs.parsed, cs.missing = parsed, missing
	return out
}

// certSum identifies a stored certificate by its domain and content.
func certSum(domain string, c *plans.DomainCertificate) [32]byte {
	h := sha256.New()
	for _, s := range []string{domain, c.Body, c.Chain, c.PrivateKey} {
		fmt.Fprintf(h, "%d:%s", len(s), s)
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// parse opens the private key of a stored certificate and parses the pair.
func (cs *certStore) parse(domain string, c *plans.DomainCertificate) parsedCert {
	key, err := cs.secrets.Open(c.PrivateKey, plans.PrivateKeyContext(domain))
	if err != nil {
		return parsedCert{err: err}
	}
	pair, err := tls.X509KeyPair([]byte(c.Body+"\n"+c.Chain), key)
	if err != nil {
		return parsedCert{err: err}
	}
	return parsedCert{cert: &pair}
}

// fileCert is a certificate of the node's files: the pair last loaded and
// the files' state it was loaded from.
type fileCert struct {
	CertificateFiles
	arn   string
	cur   atomic.Pointer[tls.Certificate]
	stamp string // size and modification time of both files at the last load attempt
}

// fileStamp describes the state of the files: a change of either shows.
func (f *fileCert) fileStamp() string {
	var out string
	for _, p := range []string{f.CertFile, f.KeyFile} {
		st, err := os.Stat(p)
		if err != nil {
			return "missing"
		}
		out += fmt.Sprintf("%d/%d;", st.Size(), st.ModTime().UnixNano())
	}
	return out
}

// reload loads f's files when they changed since the last attempt. A
// pair that does not load keeps the previous one serving, and is logged.
func (cs *certStore) reload(f *fileCert) {
	stamp := f.fileStamp()
	if stamp == f.stamp {
		return
	}
	f.stamp = stamp
	pair, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		cs.log.Error("certificate files do not load; keeping the previous pair", "regionalCertificateArn", f.arn,
			"certFile", f.CertFile, "keyFile", f.KeyFile, "err", err)
		return
	}
	f.cur.Store(&pair)
	cs.log.Info("certificate files loaded", "regionalCertificateArn", f.arn, "certFile", f.CertFile)
}

// WatchCertificateFiles reloads the certificate files of
// Options.CertificateFiles that changed, every interval (0 means
// CertificateFileCheck), until ctx ends: a renewed certificate is served
// from the next handshake on, without a restart.
func (s *Server) WatchCertificateFiles(ctx context.Context, interval time.Duration) {
	if len(s.certs.files) == 0 {
		return
	}
	if interval <= 0 {
		interval = CertificateFileCheck
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, f := range s.certs.files {
				s.certs.reload(f)
			}
		}
	}
}
