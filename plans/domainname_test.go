package plans

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"tollgate/internal/tlstest"
)

func TestDomainNameValidate(t *testing.T) {
	tests := []struct {
		name, domain string
		field        string // "" means valid
	}{
		{"two labels", "example.com", ""},
		{"subdomain", "api.example.test", ""},
		{"wildcard", "*.example.com", ""},
		{"digits and hyphens", "a-1.b2.example.com", ""},
		{"punycode", "xn--bcher-kva.example", ""},
		{"empty", "", "domainName"},
		{"one label", "localhost", "domainName"},
		{"upper case (Normalize lowers it first)", "API.example.com", "domainName"},
		{"trailing dot", "api.example.com.", "domainName"},
		{"leading hyphen", "-api.example.com", "domainName"},
		{"trailing hyphen", "api-.example.com", "domainName"},
		{"underscore", "a_b.example.com", "domainName"},
		{"wildcard not first", "api.*.example.com", "domainName"},
		{"partial wildcard", "a*.example.com", "domainName"},
		{"address", "192.168.1.10", "domainName"},
		{"execute-api host", "abc123.execute-api.localhost", "domainName"},
		{"label of 64", strings.Repeat("a", 64) + ".example.com", "domainName"},
		{"longer than 253", strings.Repeat("abcdefghi.", 26) + "com", "domainName"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertField(t, ValidateDomainName(tt.domain), tt.field)
		})
	}
}

func TestDomainNameNormalizeAndPolicy(t *testing.T) {
	d := DomainName{DomainName: "API.Example.COM"}
	d.Normalize()
	if d.DomainName != "api.example.com" || d.SecurityPolicy != SecurityPolicyTLS12 ||
		d.DomainNameStatus != DomainNameAvailable || len(d.EndpointConfiguration.Types) != 1 || d.EndpointConfiguration.Types[0] != EndpointRegional {
		t.Fatalf("Normalize: got %+v", d)
	}
	assertField(t, d.Validate(), "")
	d.SecurityPolicy = "TLS_1_0"
	assertField(t, d.Validate(), "securityPolicy")
	d.SecurityPolicy = SecurityPolicyTLS12
	d.RegionalCertificateArn = "arn:aws:acm:eu-west-1:123456789012:certificate/1c2d"
	assertField(t, d.Validate(), "")
	for _, bad := range []string{"arn with space", "a=b", "a;b", "a,b"} {
		d.RegionalCertificateArn = bad
		assertField(t, d.Validate(), "regionalCertificateArn")
	}
}

func TestBasePathValidate(t *testing.T) {
	tests := []struct {
		name, path, field string
	}{
		{"none", "(none)", ""},
		{"one segment", "v1", ""},
		{"multi-level", "v1/orders", ""},
		{"deep", "orders/v2/items/categories", ""},
		{"every allowed character", "a-Z_0.9$+!*'()", ""},
		{"leading slash", "/v1", "basePath"},
		{"trailing slash", "v1/", "basePath"},
		{"double slash", "v1//orders", "basePath"},
		{"dot segment", "v1/../admin", "basePath"},
		{"space", "v 1", "basePath"},
		{"percent", "v%201", "basePath"},
		{"query", "v1?x", "basePath"},
		{"brace", "{proxy+}", "basePath"},
		{"301 characters", strings.Repeat("a", 301), "basePath"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertField(t, ValidateBasePath(tt.path), tt.field)
		})
	}
	m := BasePathMapping{RestApiID: "abc", Stage: "(none)"}
	m.Normalize()
	if m.BasePath != NoBasePath || m.Stage != "" {
		t.Errorf("Normalize of an empty mapping: got %+v, want basePath (none) and no stage", m)
	}
	assertField(t, m.Validate(), "")
	m.Stage = "bad stage"
	assertField(t, m.Validate(), "stage")
	m.Stage, m.RestApiID = "prod", ""
	assertField(t, m.Validate(), "restApiId")
}

func FuzzBasePathValidate(f *testing.F) {
	for _, s := range []string{"(none)", "v1", "v1/orders", "/v1", "a//b", "..", "v1/.."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if ValidateBasePath(p) != nil || p == NoBasePath {
			return
		}
		// What validates routes segment by segment: no empty, dot or
		// escaped segments, nothing a URL would reinterpret.
		for _, seg := range strings.Split(p, "/") {
			if seg == "" || seg == "." || seg == ".." || strings.ContainsAny(seg, "%?#{} \\") {
				t.Fatalf("ValidateBasePath accepted %q (segment %q)", p, seg)
			}
		}
	})
}

func FuzzDomainNameValidate(f *testing.F) {
	for _, s := range []string{"api.example.com", "*.example.com", "a..b", "1.2.3.4", "x.execute-api.y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, d string) {
		if ValidateDomainName(d) != nil {
			return
		}
		if d != strings.ToLower(d) || strings.ContainsAny(d, ":/ _[]") || strings.Contains(d, "..") || len(d) > MaxDomainNameLen {
			t.Fatalf("ValidateDomainName accepted %q", d)
		}
	})
}

func TestCheckCertificate(t *testing.T) {
	ca := tlstest.MustCA(t)
	now := time.Now()
	good := ca.Issue(t, time.Time{}, "api.example.test")
	wild := ca.Issue(t, time.Time{}, "*.example.test")
	other := ca.Issue(t, time.Time{}, "other.example.test")
	expired := ca.Issue(t, now.Add(-time.Minute), "api.example.test")
	tests := []struct {
		name, domain, body, chain, key, field string
	}{
		{"leaf, chain and key", "api.example.test", good.Body, ca.ChainPEM, good.Key, ""},
		{"full chain in the body", "api.example.test", good.Body + ca.ChainPEM, "", good.Key, ""},
		{"wildcard certificate for a name under it", "api.example.test", wild.Body, ca.ChainPEM, wild.Key, ""},
		{"wildcard domain with its wildcard certificate", "*.example.test", wild.Body, "", wild.Key, ""},
		{"wildcard domain with a single-name certificate", "*.example.test", good.Body, "", good.Key, "certificateBody"},
		{"certificate for another name", "api.example.test", other.Body, "", other.Key, "certificateBody"},
		{"key of another certificate", "api.example.test", good.Body, "", other.Key, "certificatePrivateKey"},
		{"expired", "api.example.test", expired.Body, "", expired.Key, "certificateBody"},
		{"body not PEM", "api.example.test", "hello", "", good.Key, "certificateBody"},
		{"body empty", "api.example.test", "", "", good.Key, "certificateBody"},
		{"body holds a key", "api.example.test", good.Key, "", good.Key, "certificateBody"},
		{"chain holds a key", "api.example.test", good.Body, good.Key, good.Key, "certificateChain"},
		{"chain garbage", "api.example.test", good.Body, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", good.Key, "certificateChain"},
		{"key missing", "api.example.test", good.Body, "", "", "certificatePrivateKey"},
		{"key is a certificate", "api.example.test", good.Body, "", good.Body, "certificatePrivateKey"},
		{"two keys", "api.example.test", good.Body, "", good.Key + good.Key, "certificatePrivateKey"},
		{"body too long", "api.example.test", good.Body + strings.Repeat(" ", MaxCertificatePEMLen), "", good.Key, "certificateBody"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertField(t, CheckCertificate(tt.domain, tt.body, tt.chain, tt.key, now), tt.field)
		})
	}
}

func TestCheckCertificateTakesSEC1AndRefusesEncryptedKeys(t *testing.T) {
	ca := tlstest.MustCA(t)
	c := ca.Issue(t, time.Time{}, "api.example.test")
	block, _ := pem.Decode([]byte(c.Key))
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	sec1, err := x509.MarshalECPrivateKey(k.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	ecPEM := string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}))
	assertField(t, CheckCertificate("api.example.test", c.Body, "", ecPEM, time.Now()), "")
	enc := string(pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte{1, 2, 3}}))
	assertField(t, CheckCertificate("api.example.test", c.Body, "", enc, time.Now()), "certificatePrivateKey")
	stray, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(stray)
	strayPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	assertField(t, CheckCertificate("api.example.test", c.Body, "", strayPEM, time.Now()), "certificatePrivateKey")
}
