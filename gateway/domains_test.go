package gateway

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"tollgate/internal/tlstest"
	"tollgate/internal/waittest"
	"tollgate/plans"
	"tollgate/seal"
)

const testDomain = "api.example.test"

// upstreamPath is an upstream that answers with the path it was called
// with, so a test sees which stage (its uri carries the stage variable
// tag) and which resource path a request reached.
func upstreamPath(t *testing.T) string {
	t.Helper()
	return httptestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.URL.Path)
	})).URL
}

// domainSnapshot serves testAPI on stages prod and beta (stage variable
// tag names the stage): GET / and ANY /{proxy+} proxied to up as
// /<tag>/root and /<tag>/<proxy>. Domains are added by the caller.
func domainSnapshot(up string) *plans.Snapshot {
	rs := []res{
		{path: "/", methods: methods(proxy(false, up+"/${stageVariables.tag}/root"), "GET")},
		{path: "/{proxy+}", methods: methods(proxy(false, up+"/${stageVariables.tag}/{proxy}"), "ANY")},
	}
	snap := snapshot(plans.Stage{StageName: "prod", Variables: map[string]string{"tag": "prod"}}, rs...)
	snap.Apis[testAPI].Stages["beta"] = &plans.StageConfig{
		Stage:     plans.Stage{StageName: "beta", Variables: map[string]string{"tag": "beta"}},
		Resources: resources(rs...),
	}
	snap.Domains = map[string]*plans.DomainConfig{}
	return snap
}

// addDomain adds a domain with a stored certificate and mappings
// ("basePath=stage", stage "" for none) of testAPI to snap.
func addDomain(snap *plans.Snapshot, name string, cert *plans.DomainCertificate, mappings ...string) {
	d := &plans.DomainConfig{DomainName: name, Certificate: cert, Mappings: []plans.BasePathMapping{}}
	if cert == nil {
		d.CertificateArn = "arn:test:" + name
	}
	for _, m := range mappings {
		bp, stage, _ := strings.Cut(m, "=")
		d.Mappings = append(d.Mappings, plans.BasePathMapping{BasePath: plans.NormalizeBasePath(bp), RestApiID: testAPI, Stage: stage})
	}
	snap.Domains[name] = d
}

// atHost sends GET path with Host host to the gateway's plain listener.
func (tg *testGateway) atHost(t *testing.T, host, path string) response {
	t.Helper()
	req := mustRequest(t, tg.http.URL+path)
	req.Host = host
	got, _ := send(t, tg.http.Client(), req)
	return got
}

// send sends req with c and returns the response and its HTTP major
// version.
func send(t *testing.T, c *http.Client, req *http.Request) (response, int) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: string(b)}, resp.ProtoMajor
}

func TestCustomDomainRoutesByLongestBasePath(t *testing.T) {
	t.Parallel()
	snap := domainSnapshot(upstreamPath(t))
	addDomain(snap, testDomain, nil, "=prod", "v1=beta", "v1/orders=prod", "any=")
	addDomain(snap, "*.wild.test", nil, "v2=beta")
	tg := mustGateway(t, snap, nil)
	for _, tt := range []struct {
		host, path string
		status     int
		upstream   string // the path the upstream saw
	}{
		{testDomain, "/pets/1", 200, "/prod/pets/1"},
		{testDomain, "/", 200, "/prod/root"},
		{testDomain, "/v1/pets/1", 200, "/beta/pets/1"},
		{testDomain, "/v1", 200, "/beta/root"},
		{testDomain, "/v1/", 200, "/beta/root"},
		{testDomain, "/v1/orders/7", 200, "/prod/7"},
		{testDomain, "/v1/ORDERS/7", 200, "/beta/ORDERS/7"}, // base paths are case-sensitive
		{testDomain, "/%76%31/pets", 200, "/beta/pets"},     // segments compare decoded
		{testDomain, "/v1x/pets", 200, "/prod/v1x/pets"},    // whole segments only
		{testDomain, "/any/beta/pets", 200, "/beta/pets"},   // no stage: the next segment is it
		{testDomain, "/any/gamma/pets", 404, ""},
		{testDomain, "//v1/pets", 403, ""}, // an empty segment matches no base path
		{"API.Example.Test:8443", "/v1/pets", 200, "/beta/pets"},
		{"a.wild.test", "/v2/pets", 200, "/beta/pets"},
		{"a.wild.test", "/pets", 403, ""},
		{"a.wild.test", "/", 403, ""},
		{"a.b.wild.test", "/v2/pets", 404, ""}, // a wildcard covers one label
		{testAPI + ".execute-api.localhost", "/beta/pets", 200, "/beta/pets"},
	} {
		got := tg.atHost(t, tt.host, tt.path)
		if got.status != tt.status || tt.upstream != "" && got.body != tt.upstream {
			t.Errorf("%s%s: got %d %q, want %d %q", tt.host, tt.path, got.status, got.body, tt.status, tt.upstream)
		}
	}
	wantError(t, tg.atHost(t, "a.wild.test", "/pets"), http.StatusForbidden, "Forbidden", "ForbiddenException")

	// The partner usage endpoint sits under the base path (a POST is 405
	// there; the API's ANY /{proxy+} would have proxied it).
	req, err := http.NewRequest(http.MethodPost, tg.http.URL+"/v1"+UsagePath, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = testDomain
	if got, _ := send(t, tg.http.Client(), req); got.status != http.StatusMethodNotAllowed || got.header.Get("Allow") != "GET,HEAD" {
		t.Errorf("POST /v1%s: got %d Allow %q, want 405 GET,HEAD", UsagePath, got.status, got.header.Get("Allow"))
	}
}

// tlsGateway serves tg on a TLS listener with tg.TLSConfig(), as cmd does,
// and returns its address.
func tlsGateway(t *testing.T, tg *testGateway) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: tg.Server, TLSConfig: tg.TLSConfig(), ReadHeaderTimeout: ReadHeaderTimeout}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// httpsClient trusts ca's root only and dials addr whatever the URL's host.
func httpsClient(ca *tlstest.CA, addr string, edit func(*tls.Config)) *http.Client {
	cfg := &tls.Config{RootCAs: ca.Pool}
	if edit != nil {
		edit(cfg)
	}
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:   cfg,
		ForceAttemptHTTP2: true,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}}
}

// serial is the serial number of the leaf certificate addr serves for name.
func serial(t *testing.T, ca *tlstest.CA, addr, name string) string {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool, ServerName: name})
	if err != nil {
		return "handshake failed: " + err.Error()
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

func storedCert(ca *tlstest.CA, c tlstest.Cert) *plans.DomainCertificate {
	return &plans.DomainCertificate{Body: c.Body, Chain: ca.ChainPEM, PrivateKey: c.Key}
}

func TestCustomDomainServesHTTPSWithSNIAndHTTP2(t *testing.T) {
	t.Parallel()
	ca := tlstest.MustCA(t)
	snap := domainSnapshot(upstreamPath(t))
	addDomain(snap, testDomain, storedCert(ca, ca.Issue(t, time.Time{}, testDomain)), "v1=beta")
	other := ca.Issue(t, time.Time{}, "other.example.test")
	addDomain(snap, "other.example.test", storedCert(ca, other), "=prod")
	tg := mustGateway(t, snap, nil)
	addr := tlsGateway(t, tg)

	// The client trusts the root only: the intermediate was sent with the certificate.
	got, proto := send(t, httpsClient(ca, addr, nil), mustRequest(t, "https://"+testDomain+"/v1/pets/9"))
	if got.status != 200 || got.body != "/beta/pets/9" || proto != 2 {
		t.Errorf("HTTPS GET: got %d %q over HTTP/%d, want 200 /beta/pets/9 over HTTP/2", got.status, got.body, proto)
	}

	for name, cfg := range map[string]*tls.Config{
		"TLS 1.1":          {RootCAs: ca.Pool, ServerName: testDomain, MinVersion: tls.VersionTLS11, MaxVersion: tls.VersionTLS11},
		"unknown name":     {RootCAs: ca.Pool, ServerName: "nope.example.test"},
		"no server name":   {RootCAs: ca.Pool, InsecureSkipVerify: true},
		"execute-api host": {RootCAs: ca.Pool, ServerName: testAPI + ".execute-api.localhost", InsecureSkipVerify: true},
	} {
		conn, err := tls.Dial("tcp", addr, cfg)
		if err == nil {
			conn.Close()
			t.Errorf("%s: handshake succeeded, want it refused", name)
			continue
		}
		// The server refused (an alert), not the client's own checks.
		if !strings.Contains(err.Error(), "remote error") {
			t.Errorf("%s: got %v, want the server's alert", name, err)
		}
	}
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool, ServerName: testDomain, MaxVersion: tls.VersionTLS12})
	if err != nil {
		t.Errorf("TLS 1.2: %v", err)
	} else {
		conn.Close()
	}

	// A request for another domain on this domain's connection: 421.
	req := mustRequest(t, "https://"+testDomain+"/v1/pets")
	req.Host = "other.example.test"
	if got, _ := send(t, httpsClient(ca, addr, func(c *tls.Config) { c.ServerName = testDomain }), req); got.status != http.StatusMisdirectedRequest {
		t.Errorf("Host of another domain on the connection: got %d, want 421", got.status)
	}
}

func mustRequest(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// A new domain and a changed certificate are served from the next
// handshake after the snapshot that carries them, without a restart.
func TestCustomDomainCertificateChangesWithTheSnapshot(t *testing.T) {
	t.Parallel()
	ca := tlstest.MustCA(t)
	first := ca.Issue(t, time.Time{}, testDomain)
	snap := domainSnapshot(upstreamPath(t))
	addDomain(snap, testDomain, storedCert(ca, first), "=prod")
	tg := mustGateway(t, snap, nil)
	addr := tlsGateway(t, tg)
	if got := serial(t, ca, addr, testDomain); got != first.Leaf.SerialNumber.String() {
		t.Fatalf("first certificate: got %s", got)
	}
	if got := serial(t, ca, addr, "new.example.test"); !strings.HasPrefix(got, "handshake failed") {
		t.Fatalf("unknown domain: got %s, want a failed handshake", got)
	}

	renewed := ca.Issue(t, time.Time{}, testDomain)
	added := ca.Issue(t, time.Time{}, "new.example.test")
	next := domainSnapshot(upstreamPath(t))
	next.Version = 2
	addDomain(next, testDomain, storedCert(ca, renewed), "=prod")
	addDomain(next, "new.example.test", storedCert(ca, added), "=beta")
	if err := tg.SetSnapshot(next); err != nil {
		t.Fatal(err)
	}
	if got := serial(t, ca, addr, testDomain); got != renewed.Leaf.SerialNumber.String() {
		t.Errorf("renewed certificate: got %s, want %s", got, renewed.Leaf.SerialNumber)
	}
	if got := serial(t, ca, addr, "new.example.test"); got != added.Leaf.SerialNumber.String() {
		t.Errorf("new domain: got %s, want %s", got, added.Leaf.SerialNumber)
	}
}

// A private key sealed with TOLLGATE_SECRETS_KEY opens on a node with the
// same secret; a node without it cannot serve the domain and logs why.
func TestCustomDomainSealedKeyNeedsTheNodesSecret(t *testing.T) {
	t.Parallel()
	ca := tlstest.MustCA(t)
	key, err := seal.NewKey([]byte("gateway-test-secrets-key-0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	c := ca.Issue(t, time.Time{}, testDomain)
	sealed := storedCert(ca, c)
	sealed.PrivateKey = key.Seal([]byte(c.Key), plans.PrivateKeyContext(testDomain))
	snap := domainSnapshot(upstreamPath(t))
	addDomain(snap, testDomain, sealed, "=prod")

	with := mustGateway(t, snap, func(o *Options) { o.Secrets = key })
	if got := serial(t, ca, tlsGateway(t, with), testDomain); got != c.Leaf.SerialNumber.String() {
		t.Errorf("node with the secret: got %s", got)
	}
	without := mustGateway(t, snap, nil)
	if got := serial(t, ca, tlsGateway(t, without), testDomain); !strings.HasPrefix(got, "handshake failed") {
		t.Errorf("node without the secret: got %s, want a failed handshake", got)
	}
	if logs := without.logs.String(); !strings.Contains(logs, "TOLLGATE_SECRETS_KEY") || !strings.Contains(logs, testDomain) {
		t.Errorf("node without the secret logged %s; want the domain and TOLLGATE_SECRETS_KEY named", logs)
	}
}

// A domain whose regionalCertificateArn the node maps to files is served
// with them, and a renewed pair in those files is served without a
// restart.
func TestCustomDomainCertificateFromTheNodesFiles(t *testing.T) {
	t.Parallel()
	ca := tlstest.MustCA(t)
	dir := t.TempDir()
	first := ca.Issue(t, time.Time{}, testDomain)
	certFile, keyFile := ca.WriteFiles(t, dir, "api", first)
	snap := domainSnapshot(upstreamPath(t))
	addDomain(snap, testDomain, nil, "=prod")
	arn := snap.Domains[testDomain].CertificateArn
	tg := mustGateway(t, snap, func(o *Options) {
		o.CertificateFiles = map[string]CertificateFiles{arn: {CertFile: certFile, KeyFile: keyFile}}
	})
	addr := tlsGateway(t, tg)
	if got := serial(t, ca, addr, testDomain); got != first.Leaf.SerialNumber.String() {
		t.Fatalf("certificate from files: got %s", got)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go tg.WatchCertificateFiles(ctx, 10*time.Millisecond)

	// The renewed pair is written beside the files and moved into place,
	// key first, as a renewal tool does.
	renewed := ca.Issue(t, time.Time{}, testDomain)
	nextCert, nextKey := ca.WriteFiles(t, t.TempDir(), "next", renewed)
	for _, mv := range [][2]string{{nextKey, keyFile}, {nextCert, certFile}} {
		if err := os.Rename(mv[0], mv[1]); err != nil {
			t.Fatal(err)
		}
	}
	served := func() bool { return serial(t, ca, addr, testDomain) == renewed.Leaf.SerialNumber.String() }
	if _, ok := waittest.Poll(10*time.Second, served); !ok {
		t.Fatalf("renewed files not served after 10 s: serving %s", serial(t, ca, addr, testDomain))
	}
}
