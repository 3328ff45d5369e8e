package admin

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// SigV4 constants: the algorithm, the service name tollgate answers to,
// the X-Amz-Date layout and the allowed clock skew.
const (
	sigV4Algorithm = "AWS4-HMAC-SHA256"
	sigV4Service   = "apigateway"
	amzDateLayout  = "20060102T150405Z"
	maxClockSkew   = 5 * time.Minute
)

// sigV4Header is a parsed "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=..." value.
type sigV4Header struct {
	Credential    string // AKID/date/region/service/aws4_request
	SignedHeaders string // lowercase names joined by ";"
	Signature     string // lowercase hex
}

// parseSigV4Header splits an Authorization value; ok is false when a part
// is missing.
func parseSigV4Header(h string) (sigV4Header, bool) {
	var out sigV4Header
	rest, found := strings.CutPrefix(h, sigV4Algorithm+" ")
	if !found {
		return out, false
	}
	for _, part := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Credential":
			out.Credential = v
		case "SignedHeaders":
			out.SignedHeaders = v
		case "Signature":
			out.Signature = v
		}
	}
	return out, out.Credential != "" && out.SignedHeaders != "" && out.Signature != ""
}

func invalidSignature(msg string) error { return &authError{typeInvalidSignature, msg} }

// verifySigV4 checks a request signed the way the AWS SDKs and CLI sign:
// it re-signs a copy holding only the signed headers, the same X-Amz-Date,
// r.Host with its port, the raw path as sent and the payload hash, with
// the AWS SDK's signer, and compares the signatures in constant time.
func (a *authenticator) verifySigV4(r *http.Request, authz string) (principal, error) {
	h, ok := parseSigV4Header(authz)
	if !ok {
		return principal{}, invalidSignature("Authorization header requires Credential, SignedHeaders and Signature")
	}
	scope := strings.Split(h.Credential, "/")
	if len(scope) != 5 || scope[3] != sigV4Service || scope[4] != "aws4_request" {
		return principal{}, invalidSignature("Credential must be <access key>/<date>/<region>/apigateway/aws4_request")
	}
	p, secret, err := a.accessKey(r.Context(), scope[0])
	if err != nil {
		return principal{}, err
	}
	signedAt, err := a.checkDate(r)
	if err != nil {
		return principal{}, err
	}
	payloadHash, err := payloadHash(r)
	if err != nil {
		return principal{}, err
	}
	c, err := signedCopy(r, h.SignedHeaders)
	if err != nil {
		return principal{}, err
	}
	creds := aws.Credentials{AccessKeyID: scope[0], SecretAccessKey: secret}
	if err := v4.NewSigner().SignHTTP(r.Context(), creds, c, payloadHash, sigV4Service, scope[2], signedAt); err != nil {
		return principal{}, invalidSignature("cannot compute the signature")
	}
	want, _ := parseSigV4Header(c.Header.Get("Authorization"))
	if want.Credential != h.Credential || want.SignedHeaders != h.SignedHeaders ||
		subtle.ConstantTimeCompare([]byte(want.Signature), []byte(h.Signature)) != 1 {
		return principal{}, invalidSignature("The request signature we calculated does not match the signature you provided.")
	}
	return p, nil
}

// checkDate parses X-Amz-Date and requires it within maxClockSkew of now.
func (a *authenticator) checkDate(r *http.Request) (time.Time, error) {
	t, err := time.Parse(amzDateLayout, r.Header.Get("X-Amz-Date"))
	if err != nil {
		return time.Time{}, invalidSignature("X-Amz-Date header is missing or not in the form 20060102T150405Z")
	}
	if d := a.now().Sub(t); d > maxClockSkew || d < -maxClockSkew {
		return time.Time{}, invalidSignature("Signature expired: X-Amz-Date " + t.Format(amzDateLayout) + " is more than 5 minutes from now")
	}
	return t, nil
}

// payloadHash reads (and restores) the body and returns its SHA-256 in
// hex. An X-Amz-Content-Sha256 header must equal it: a signature over a
// claimed hash proves nothing about a different body.
func payloadHash(r *http.Request) (string, error) {
	b, err := readBody(r)
	if err != nil {
		return "", err
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	sum := sha256.Sum256(b)
	got := hex.EncodeToString(sum[:])
	if claimed := r.Header.Get("X-Amz-Content-Sha256"); claimed != "" && claimed != got {
		return "", invalidSignature("X-Amz-Content-Sha256 does not match the request body")
	}
	return got, nil
}

// signedCopy returns a body-less copy of r holding only the headers listed
// in signedHeaders, r.Host with its port and the path exactly as sent (the
// signer encodes it once more, as the SDKs do).
func signedCopy(r *http.Request, signedHeaders string) (*http.Request, error) {
	rawPath, _, _ := strings.Cut(r.RequestURI, "?")
	if rawPath == "" || !strings.HasPrefix(rawPath, "/") {
		rawPath = r.URL.EscapedPath()
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	c := &http.Request{
		Method: r.Method,
		// Opaque "//host/path" makes the signer use the raw path verbatim.
		URL:    &url.URL{Scheme: scheme, Host: r.Host, Opaque: "//" + r.Host + rawPath, RawQuery: r.URL.RawQuery},
		Host:   r.Host,
		Header: http.Header{},
	}
	for _, name := range strings.Split(signedHeaders, ";") {
		switch name {
		case "host":
		case "content-length":
			c.ContentLength = r.ContentLength
		default:
			vs := r.Header.Values(name)
			if len(vs) == 0 {
				return nil, invalidSignature("signed header " + name + " is missing from the request")
			}
			c.Header[textproto.CanonicalMIMEHeaderKey(name)] = vs
		}
	}
	return c, nil
}
