package admin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/smithy-go"
)

const (
	testAKID   = "AKIDTOLLGATETEST"
	testSecret = "tollgate-test-secret-access-key"
	testToken  = "0123456789abcdef0123456789abcdef-bearer"
)

// authOnly starts a server that authenticates every request and answers
// {} (so the SDK parses any operation's response) when it passes. The
// server's clock is the real clock shifted by skew.
func authOnly(t *testing.T, skew time.Duration, trusted ...netip.Prefix) *httptest.Server {
	t.Helper()
	s := &Server{}
	s.log = testLogger(t)
	s.now = func() time.Time { return time.Now().Add(skew) }
	s.auth = newAuthenticator(Credentials{AccessKeyID: testAKID, SecretAccessKey: testSecret, BearerToken: testToken}, s.now, trusted)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{})
	})
	srv := httptest.NewServer(s.limitBody(s.authenticate(ok)))
	t.Cleanup(srv.Close)
	return srv
}

// sdkClient returns an apigateway client for url signing with akid/secret.
func sdkClient(url, akid, secret string) *apigateway.Client {
	return apigateway.New(apigateway.Options{
		BaseEndpoint: aws.String(url),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider(akid, secret, ""),
		Retryer:      aws.NopRetryer{},
	})
}

// errorCode returns the AWS error code of err ("" for nil).
func errorCode(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("got error %v (%T), want an AWS API error", err, err)
	}
	return ae.ErrorCode()
}

func TestSigV4AcceptsSDKSignatures(t *testing.T) {
	t.Parallel()
	srv := authOnly(t, 0)
	c := sdkClient(srv.URL, testAKID, testSecret)
	ctx := context.Background()
	calls := []struct {
		name string
		call func() error
	}{
		{"GET without body", func() error { _, err := c.GetAccount(ctx, nil); return err }},
		{"POST with JSON body", func() error {
			_, err := c.CreateRestApi(ctx, &apigateway.CreateRestApiInput{Name: aws.String("pets ünïcode")})
			return err
		}},
		{"query string", func() error {
			_, err := c.GetApiKeys(ctx, &apigateway.GetApiKeysInput{NameQuery: aws.String("a b&c=d/é"), Limit: aws.Int32(7)})
			return err
		}},
		{"path label escaped twice (ARN with slashes and colons)", func() error {
			_, err := c.GetTags(ctx, &apigateway.GetTagsInput{ResourceArn: aws.String("arn:aws:apigateway:us-east-1::/restapis/abc/stages/prod")})
			return err
		}},
		{"path label with spaces and braces", func() error {
			_, err := c.GetResource(ctx, &apigateway.GetResourceInput{RestApiId: aws.String("a b"), ResourceId: aws.String("{petId}~1%")})
			return err
		}},
	}
	for _, tc := range calls {
		t.Run(tc.name, func(t *testing.T) {
			if got := errorCode(t, tc.call()); got != "" {
				t.Fatalf("got error %s, want success", got)
			}
		})
	}
}

func TestSigV4Refusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name   string
		skew   time.Duration
		akid   string
		secret string
		want   string
	}{
		{"wrong secret", 0, testAKID, "not-the-secret", typeInvalidSignature},
		{"unknown access key id", 0, "AKIDUNKNOWN", testSecret, typeUnrecognizedClient},
		{"date 6 minutes old", 6 * time.Minute, testAKID, testSecret, typeInvalidSignature},
		{"date 6 minutes ahead", -6 * time.Minute, testAKID, testSecret, typeInvalidSignature},
		{"date 4 minutes old is fine", 4 * time.Minute, testAKID, testSecret, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := authOnly(t, tc.skew)
			_, err := sdkClient(srv.URL, tc.akid, tc.secret).GetAccount(ctx, nil)
			if got := errorCode(t, err); got != tc.want {
				t.Fatalf("got error code %q, want %q", got, tc.want)
			}
		})
	}
}

// signedRequest returns a request to srv signed by the SDK's signer with
// the test credentials over body.
func signedRequest(t *testing.T, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/restapis", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	sum := sha256.Sum256([]byte(body))
	creds := aws.Credentials{AccessKeyID: testAKID, SecretAccessKey: testSecret}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), "apigateway", "eu-west-3", time.Now()); err != nil {
		t.Fatal(err)
	}
	return req
}

// signRequest signs a body-less r with SigV4 as akid/secret.
func signRequest(t *testing.T, r *http.Request, akid, secret string) {
	t.Helper()
	sum := sha256.Sum256(nil)
	creds := aws.Credentials{AccessKeyID: akid, SecretAccessKey: secret}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, r, hex.EncodeToString(sum[:]), "apigateway", "us-east-1", time.Now()); err != nil {
		t.Fatal(err)
	}
}

func TestSigV4RawRequests(t *testing.T) {
	t.Parallel()
	srv := authOnly(t, 0)
	cases := []struct {
		name     string
		mutate   func(r *http.Request)
		wantCode int
		wantType string
	}{
		{"untouched, any region", func(*http.Request) {}, http.StatusOK, ""},
		{"tampered body", func(r *http.Request) {
			r.Body = ioNopCloser(`{"name":"evil"}`)
		}, http.StatusForbidden, typeInvalidSignature},
		{"tampered signed header", func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") }, http.StatusForbidden, typeInvalidSignature},
		{"claimed payload hash differs from body", func(r *http.Request) {
			sum := sha256.Sum256([]byte(`{"name":"other"}`))
			r.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(sum[:]))
		}, http.StatusForbidden, typeInvalidSignature},
		{"tampered query", func(r *http.Request) { r.URL.RawQuery = "mode=import" }, http.StatusForbidden, typeInvalidSignature},
		{"no credentials", func(r *http.Request) { r.Header.Del("Authorization") }, http.StatusForbidden, typeMissingToken},
		{"malformed authorization", func(r *http.Request) {
			r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=x")
		}, http.StatusForbidden, typeInvalidSignature},
		{"bearer token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+testToken) }, http.StatusOK, ""},
		{"bearer scheme in lower case", func(r *http.Request) { r.Header.Set("Authorization", "bearer "+testToken) }, http.StatusOK, ""},
		{"bearer token with a suffix", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+testToken+"x") }, http.StatusForbidden, typeUnrecognizedClient},
		{"unknown scheme", func(r *http.Request) { r.Header.Set("Authorization", "Basic dXNlcjpwYXNz") }, http.StatusForbidden, typeMissingToken},
		{"wrong bearer token", func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+strings.Repeat("x", len(testToken)))
		}, http.StatusForbidden, typeUnrecognizedClient},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"name":"pets"}`
			req := signedRequest(t, srv.URL, body)
			tc.mutate(req)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.wantCode {
				t.Fatalf("got status %d, want %d", resp.StatusCode, tc.wantCode)
			}
			if got := resp.Header.Get("x-amzn-ErrorType"); got != tc.wantType {
				t.Fatalf("got x-amzn-ErrorType %q, want %q", got, tc.wantType)
			}
		})
	}
}

func TestFailedAttemptsAreLimitedPerAddress(t *testing.T) {
	t.Parallel()
	srv := authOnly(t, 0)
	statuses := map[int]int{}
	for range failureBurst + 5 {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/account", nil)
		req.Header.Set("Authorization", "Bearer "+strings.Repeat("y", 40))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		statuses[resp.StatusCode]++
	}
	if statuses[http.StatusForbidden] != failureBurst {
		t.Fatalf("got %d refusals with 403, want %d (the burst)", statuses[http.StatusForbidden], failureBurst)
	}
	if statuses[http.StatusTooManyRequests] != 5 {
		t.Fatalf("got %d answers 429, want 5", statuses[http.StatusTooManyRequests])
	}
	// Valid credentials always work: only failures are throttled, so
	// nobody sharing the operator's address (a proxy without
	// TOLLGATE_ADMIN_TRUSTED_PROXIES) can lock the operator out, however
	// many bad tokens came first.
	for _, c := range []struct {
		auth   func(*http.Request)
		status int
	}{
		{func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+testToken) }, http.StatusOK},
		{func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+strings.Repeat("y", 40)) }, http.StatusTooManyRequests},
		{func(r *http.Request) { signRequest(t, r, testAKID, testSecret) }, http.StatusOK},
		{func(r *http.Request) { signRequest(t, r, testAKID, "wrong-secret") }, http.StatusTooManyRequests},
		{func(r *http.Request) {}, http.StatusTooManyRequests},
	} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/account", nil)
		c.auth(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("after the burst, %q: got %d, want %d", req.Header.Get("Authorization"), resp.StatusCode, c.status)
		}
	}
}

// Behind a trusted proxy, failures count per client (the nearest
// untrusted X-Forwarded-For hop), not against the proxy: one client using
// up its attempts does not lock out another coming through the same proxy.
func TestFailedAttemptsBehindTrustedProxy(t *testing.T) {
	t.Parallel()
	srv := authOnly(t, 0, netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128"))
	call := func(client, token string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/account", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("X-Forwarded-For", client)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	bad := strings.Repeat("y", 40)
	for range failureBurst {
		call("203.0.113.7", bad)
	}
	resp := call("203.0.113.7", bad)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("client over its limit: got %d, Retry-After %q, want 429 and 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if resp := call("198.51.100.9", testToken); resp.StatusCode != http.StatusOK {
		t.Fatalf("another client through the same proxy: got %d, want 200", resp.StatusCode)
	}
}

func ioNopCloser(s string) *nopCloser { return &nopCloser{bytes.NewReader([]byte(s))} }

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

func TestInsecureAcceptsEverything(t *testing.T) {
	t.Parallel()
	s := &Server{log: testLogger(t), now: time.Now}
	s.auth = newAuthenticator(Credentials{}, s.now, nil)
	s.auth.insecure = true
	srv := httptest.NewServer(s.authenticate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{})
	})))
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/account")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("got status %d without credentials in insecure mode, want 200", resp.StatusCode)
	}
}

func TestNoCredentialsConfiguredRefusesAll(t *testing.T) {
	t.Parallel()
	a := newAuthenticator(Credentials{BearerToken: ""}, time.Now, nil)
	r := httptest.NewRequest(http.MethodGet, "/account", nil)
	r.Header.Set("Authorization", "Bearer ")
	if _, err := a.verify(r); err == nil {
		t.Fatal("got an empty bearer token accepted with no token configured, want refused")
	}
	r.Header.Set("Authorization", "Bearer "+strings.Repeat("z", 40))
	if _, err := a.verify(r); err == nil {
		t.Fatal("got a bearer token accepted with no token configured, want refused")
	}
}
