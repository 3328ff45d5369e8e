package redisurl_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redistest"
	"tollgate/internal/redisurl"
)

// A rediss-cluster:// URL reaches a Redis Cluster over TLS: the client
// learns the nodes from the cluster and checks each one's certificate
// against the host it dials (here 127.0.0.1, a certificate of the test's
// own CA in place of the system's roots).
func TestRedissClusterReachesATLSCluster(t *testing.T) {
	t.Parallel()
	certFile, keyFile, roots := mustCertificate(t)
	tlsPort := redistest.FreePort(t)
	redistest.MustClusterServer(t, 1, "--tls-port", tlsPort, "--tls-cluster", "yes", "--tls-auth-clients", "no",
		"--tls-cert-file", certFile, "--tls-key-file", keyFile, "--tls-ca-cert-file", certFile)
	c, err := redisurl.Open("rediss-cluster://127.0.0.1:" + tlsPort)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	cc, ok := c.(*redis.ClusterClient)
	if !ok || cc.Options().TLSConfig == nil {
		t.Fatalf("got %T with TLS %v, want a cluster client over TLS", c, ok && cc.Options().TLSConfig != nil)
	}
	cc.Options().TLSConfig.RootCAs = roots
	for _, k := range []string{"a", "b", "{x}c"} { // keys of several slots
		if err := cc.Set(t.Context(), k, "v", time.Minute).Err(); err != nil {
			t.Fatalf("SET %s over TLS: %v", k, err)
		}
		if v, err := cc.Get(t.Context(), k).Result(); err != nil || v != "v" {
			t.Fatalf("GET %s over TLS: got %q, %v", k, v, err)
		}
	}
}

// mustCertificate writes a self-signed CA certificate for 127.0.0.1 and
// its key into a temporary directory and returns their files and a pool
// holding it.
func mustCertificate(t *testing.T) (certFile, keyFile string, roots *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tollgate test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots = x509.NewCertPool()
	roots.AddCert(cert)
	return certFile, keyFile, roots
}
