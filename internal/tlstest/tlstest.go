// Package tlstest makes a certificate authority in the test that needs one
// (crypto/x509, ECDSA P-256), and certificates it issues for custom domain
// names, as PEM text the admin API takes and as a pool clients trust.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a test certificate authority with an intermediate: certificates
// it issues are signed by the intermediate, so a server must send the
// chain for clients that trust only the root (Pool) to accept it.
type CA struct {
	root, inter       *x509.Certificate
	rootKey, interKey *ecdsa.PrivateKey
	// Pool holds the root only.
	Pool *x509.CertPool
	// RootPEM is the root certificate, PEM.
	RootPEM string
	// ChainPEM is the intermediate certificate, PEM: what certificateChain
	// holds.
	ChainPEM string
}

// Cert is an issued certificate: Body (certificateBody, the leaf only)
// and Key (certificatePrivateKey, PKCS #8), PEM.
type Cert struct {
	Body, Key string
	Leaf      *x509.Certificate
}

// MustCA returns a new CA, valid for a day around now.
func MustCA(tb testing.TB) *CA {
	tb.Helper()
	ca := &CA{rootKey: mustKey(tb), interKey: mustKey(tb)}
	ca.root = mustSign(tb, &x509.Certificate{
		Subject: pkix.Name{CommonName: "tollgate test root"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign,
	}, nil, &ca.rootKey.PublicKey, ca.rootKey, time.Now().Add(24*time.Hour))
	ca.inter = mustSign(tb, &x509.Certificate{
		Subject: pkix.Name{CommonName: "tollgate test intermediate"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign,
	}, ca.root, &ca.interKey.PublicKey, ca.rootKey, time.Now().Add(24*time.Hour))
	ca.Pool = x509.NewCertPool()
	ca.Pool.AddCert(ca.root)
	ca.RootPEM = certPEM(ca.root)
	ca.ChainPEM = certPEM(ca.inter)
	return ca
}

// Issue returns a server certificate for names (DNS names, "*.x" allowed)
// signed by the intermediate, valid from an hour ago until notAfter (zero:
// a day from now).
func (ca *CA) Issue(tb testing.TB, notAfter time.Time, names ...string) Cert {
	tb.Helper()
	if notAfter.IsZero() {
		notAfter = time.Now().Add(24 * time.Hour)
	}
	key := mustKey(tb)
	leaf := mustSign(tb, &x509.Certificate{
		Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca.inter, &key.PublicKey, ca.interKey, notAfter)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	return Cert{Body: certPEM(leaf), Key: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), Leaf: leaf}
}

// ClientConfig returns a TLS client configuration that trusts the CA's
// root and sends serverName as SNI.
func (ca *CA) ClientConfig(serverName string) *tls.Config {
	return &tls.Config{RootCAs: ca.Pool, ServerName: serverName}
}

// WriteFiles writes c's certificate with the CA's chain (a full chain, as
// TOLLGATE_GATEWAY_TLS_CERTIFICATES files hold it) and its key into dir,
// and returns their paths.
func (ca *CA) WriteFiles(tb testing.TB, dir, name string, c Cert) (certFile, keyFile string) {
	tb.Helper()
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, []byte(c.Body+ca.ChainPEM), 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(keyFile, []byte(c.Key), 0o600); err != nil {
		tb.Fatal(err)
	}
	return certFile, keyFile
}

func mustKey(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

func mustSign(tb testing.TB, tpl, parent *x509.Certificate, pub *ecdsa.PublicKey, signer *ecdsa.PrivateKey, notAfter time.Time) *x509.Certificate {
	tb.Helper()
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		tb.Fatal(err)
	}
	tpl.SerialNumber = serial
	tpl.NotBefore = time.Now().Add(-time.Hour)
	tpl.NotAfter = notAfter
	if parent == nil {
		parent = tpl
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, parent, pub, signer)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func certPEM(c *x509.Certificate) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}))
}
