package plans

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"time"
)

// DomainCertificate is the certificate a domain name is served with when
// it is stored with the domain, as CreateDomainName's certificateBody,
// certificateChain and certificatePrivateKey give it: PEM text. Body holds
// the domain's certificate first (and may hold its chain after it), Chain
// the intermediate certificates. PrivateKey is the PEM key as given, or,
// when the admin runs with TOLLGATE_SECRETS_KEY, that key sealed with it
// (package seal; PrivateKeyContext names what it is bound to). It is never
// returned by the admin API.
type DomainCertificate struct {
	Body       string `json:"body"`
	Chain      string `json:"chain,omitempty"`
	PrivateKey string `json:"privateKey"`
}

// MaxCertificatePEMLen bounds each of certificateBody, certificateChain
// and certificatePrivateKey, in bytes.
const MaxCertificatePEMLen = 64 << 10

// PrivateKeyContext is what a domain's sealed private key is bound to, so
// a sealed key copied to another domain does not open.
func PrivateKeyContext(domainName string) string {
	return "tollgate domainname " + domainName + " certificatePrivateKey"
}

// CheckCertificate checks a certificate given for domainName, with its
// private key in plain PEM: body holds at least one certificate, the
// first being the domain's, which covers domainName (a wildcard domain
// name needs that wildcard among its names) and has not expired at now;
// chain holds only certificates; key is one unencrypted PKCS #1, PKCS #8
// or SEC 1 key that belongs to that certificate. Errors are KindInvalid
// naming certificateBody, certificateChain or certificatePrivateKey.
func CheckCertificate(domainName, body, chain, key string, now time.Time) error {
	for _, f := range []struct{ field, v string }{
		{"certificateBody", body}, {"certificateChain", chain}, {"certificatePrivateKey", key},
	} {
		if len(f.v) > MaxCertificatePEMLen {
			return Invalid(f.field, "%s must be at most %d bytes", f.field, MaxCertificatePEMLen)
		}
	}
	certs, err := parseCertificates("certificateBody", body)
	if err != nil {
		return err
	}
	if len(certs) == 0 {
		return Invalid("certificateBody", "certificateBody holds no PEM CERTIFICATE block")
	}
	if _, err := parseCertificates("certificateChain", chain); err != nil {
		return err
	}
	leaf := certs[0]
	if err := coversDomain(leaf, domainName); err != nil {
		return err
	}
	if now.After(leaf.NotAfter) {
		return Invalid("certificateBody", "certificateBody expired on %s", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	priv, err := parsePrivateKey(key)
	if err != nil {
		return err
	}
	pub, ok := priv.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(leaf.PublicKey) {
		return Invalid("certificatePrivateKey", "certificatePrivateKey does not belong to the certificate in certificateBody")
	}
	if _, err := tls.X509KeyPair([]byte(body+"\n"+chain), []byte(key)); err != nil {
		return Invalid("certificatePrivateKey", "certificatePrivateKey and certificateBody are not a usable pair: %v", err)
	}
	return nil
}

// parseCertificates parses every PEM block of text as a certificate; text
// outside PEM blocks other than white space is refused.
func parseCertificates(field, text string) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	rest := []byte(text)
	for {
		block, r := pem.Decode(rest)
		if block == nil {
			break
		}
		rest = r
		if block.Type != "CERTIFICATE" {
			return nil, Invalid(field, "%s: PEM block %q is not a CERTIFICATE", field, block.Type)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, Invalid(field, "%s: certificate %d does not parse: %v", field, len(out)+1, err)
		}
		out = append(out, c)
	}
	if strings.TrimSpace(string(rest)) != "" {
		return nil, Invalid(field, "%s holds text that is not a PEM block", field)
	}
	return out, nil
}

// coversDomain checks that leaf is a certificate for domainName; for a
// wildcard domain name "*.example.com" that same wildcard must be one of
// its DNS names.
func coversDomain(leaf *x509.Certificate, domainName string) error {
	if strings.HasPrefix(domainName, "*.") {
		for _, n := range leaf.DNSNames {
			if strings.EqualFold(n, domainName) {
				return nil
			}
		}
		return Invalid("certificateBody", "certificateBody is not a certificate for %s: its names are %s", domainName, strings.Join(leaf.DNSNames, ", "))
	}
	if err := leaf.VerifyHostname(domainName); err != nil {
		return Invalid("certificateBody", "certificateBody is not a certificate for %s: %v", domainName, err)
	}
	return nil
}

// parsePrivateKey parses one PEM private key: PKCS #8, PKCS #1 (RSA) or
// SEC 1 (EC).
func parsePrivateKey(text string) (crypto.Signer, error) {
	const field = "certificatePrivateKey"
	block, rest := pem.Decode([]byte(text))
	switch {
	case block == nil:
		return nil, Invalid(field, "certificatePrivateKey holds no PEM block")
	case strings.TrimSpace(string(rest)) != "":
		return nil, Invalid(field, "certificatePrivateKey must hold one PEM block only")
	case block.Type == "ENCRYPTED PRIVATE KEY" || block.Headers["Proc-Type"] != "":
		return nil, Invalid(field, "certificatePrivateKey must not be encrypted with a passphrase")
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		return nil, Invalid(field, "certificatePrivateKey: PEM block %q is not a private key", block.Type)
	}
	if err != nil {
		return nil, Invalid(field, "certificatePrivateKey does not parse: %v", err)
	}
	switch k := key.(type) {
	case *rsa.PrivateKey, *ecdsa.PrivateKey, ed25519.PrivateKey:
		return k.(crypto.Signer), nil
	}
	return nil, Invalid(field, "certificatePrivateKey: unsupported key type %T", key)
}
