package main

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"
	"go.yaml.in/yaml/v4"

	"tollgate/internal/browsertest"
	"tollgate/internal/tlstest"
	"tollgate/internal/waittest"
	"tollgate/seal"
)

const testDomain = "api.example.test"

// httpsAnswer is what one HTTPS request to a gateway node saw.
type httpsAnswer struct {
	status int
	serial string // the serial number of the certificate served
	proto  int
	err    error
}

// callHTTPS sends GET https://<name><path> to gateway node i's HTTPS
// listener on a new connection, trusting ca's root.
func (s *stack) callHTTPS(ca *tlstest.CA, i int, name, path, key string) httpsAnswer {
	addr := s.gateways[i].GatewayTLSAddr
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: ca.Pool},
		ForceAttemptHTTP2: true,
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}}
	req, err := http.NewRequest(http.MethodGet, "https://"+name+path, nil)
	if err != nil {
		return httpsAnswer{err: err}
	}
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	res, err := c.Do(req)
	if err != nil {
		return httpsAnswer{err: err}
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return httpsAnswer{status: res.StatusCode, serial: res.TLS.PeerCertificates[0].SerialNumber.String(), proto: res.ProtoMajor}
}

// waitHTTPS calls both gateways (without a key) until each answers
// status with the certificate of serial, or fails after limit; it returns
// how long that took.
func (s *stack) waitHTTPS(t *testing.T, ca *tlstest.CA, path, serial string, status int, limit time.Duration) time.Duration {
	t.Helper()
	var a, b httpsAnswer
	took, ok := waittest.Poll(limit, func() bool {
		a, b = s.callHTTPS(ca, 0, testDomain, path, ""), s.callHTTPS(ca, 1, testDomain, path, "")
		return a.status == status && b.status == status && a.serial == serial && b.serial == serial
	})
	if !ok {
		t.Fatalf("%s: got %+v and %+v from the two gateways after %v, want %d with certificate %s", path, a, b, limit, status, serial)
	}
	return took
}

// mockAPI creates, through the SDK, an API whose GET / and GET /items/{id}
// answer 200 from a MOCK integration without a key, deployed to prod.
func (s *stack) mockAPI(t *testing.T, ctx context.Context) string {
	t.Helper()
	c := s.sdk
	api, root, item := s.itemsAPI(t, ctx, "domain")
	var err error
	for _, rid := range []*string{root, item} {
		_, err = c.PutMethod(ctx, &apigateway.PutMethodInput{RestApiId: api, ResourceId: rid, HttpMethod: aws.String("GET"), AuthorizationType: aws.String("NONE")})
		must(t, "PutMethod", err)
		_, err = c.PutIntegration(ctx, &apigateway.PutIntegrationInput{RestApiId: api, ResourceId: rid, HttpMethod: aws.String("GET"), Type: types.IntegrationTypeMock})
		must(t, "PutIntegration", err)
	}
	_, err = c.CreateDeployment(ctx, &apigateway.CreateDeploymentInput{RestApiId: api, StageName: aws.String("prod")})
	must(t, "CreateDeployment", err)
	return *api
}

// A custom domain created through the admin reaches both gateway nodes
// within the push bound, its certificate (the key sealed with
// TOLLGATE_SECRETS_KEY) served over TLS with HTTP/2, and so does a renewed
// certificate and a removed mapping, without a restart.
func TestCustomDomainReachesEveryGatewayWithinThePushBound(t *testing.T) {
	s := mustStackWith(t, stackOptions{secretsKey: "stack-test-secrets-key-0123456789abcdef"})
	ctx := t.Context()
	w := s.setupWalk(t, ctx)
	apiID := s.mockAPI(t, ctx)
	ca := tlstest.MustCA(t)
	first := ca.Issue(t, time.Time{}, testDomain)
	_, err := s.sdk.CreateDomainName(ctx, &apigateway.CreateDomainNameInput{DomainName: aws.String(testDomain),
		CertificateBody: aws.String(first.Body), CertificateChain: aws.String(ca.ChainPEM), CertificatePrivateKey: aws.String(first.Key),
		EndpointConfiguration: &types.EndpointConfiguration{Types: []types.EndpointType{types.EndpointTypeRegional}}})
	must(t, "CreateDomainName", err)
	for bp, api := range map[string]string{"v1": apiID, "keyed": w.apiID} {
		_, err = s.sdk.CreateBasePathMapping(ctx, &apigateway.CreateBasePathMappingInput{DomainName: aws.String(testDomain),
			BasePath: aws.String(bp), RestApiId: aws.String(api), Stage: aws.String("prod")})
		must(t, "CreateBasePathMapping", err)
	}
	took := s.waitHTTPS(t, ca, "/v1/items/7", first.Leaf.SerialNumber.String(), http.StatusOK, time.Second)
	t.Logf("new domain served by both gateways %v after CreateBasePathMapping returned", took)
	if got := s.callHTTPS(ca, 0, testDomain, "/v1/items/7", ""); got.proto != 2 {
		t.Errorf("HTTPS request: HTTP/%d, want HTTP/2", got.proto)
	}
	for i := range 2 {
		if got := s.callHTTPS(ca, i, testDomain, "/keyed/items/7", w.keyValue); got.status != http.StatusOK {
			t.Errorf("gateway %d, keyed API with its key: got %+v, want 200", i, got)
		}
		if got := s.callHTTPS(ca, i, testDomain, "/keyed/items/7", ""); got.status != http.StatusForbidden {
			t.Errorf("gateway %d, keyed API without a key: got %+v, want 403", i, got)
		}
	}

	renewed := ca.Issue(t, time.Time{}, testDomain)
	_, err = s.sdk.UpdateDomainName(ctx, &apigateway.UpdateDomainNameInput{DomainName: aws.String(testDomain),
		PatchOperations: []types.PatchOperation{
			{Op: types.OpReplace, Path: aws.String("/certificateBody"), Value: aws.String(renewed.Body)},
			{Op: types.OpReplace, Path: aws.String("/certificatePrivateKey"), Value: aws.String(renewed.Key)},
		}})
	must(t, "UpdateDomainName", err)
	took = s.waitHTTPS(t, ca, "/v1/items/7", renewed.Leaf.SerialNumber.String(), http.StatusOK, time.Second)
	t.Logf("renewed certificate served by both gateways %v after UpdateDomainName returned", took)

	_, err = s.sdk.DeleteBasePathMapping(ctx, &apigateway.DeleteBasePathMappingInput{DomainName: aws.String(testDomain), BasePath: aws.String("v1")})
	must(t, "DeleteBasePathMapping", err)
	s.waitHTTPS(t, ca, "/v1/items/7", renewed.Leaf.SerialNumber.String(), http.StatusForbidden, time.Second)

	if got := s.callHTTPS(ca, 0, "other.example.test", "/v1/items/7", ""); got.err == nil {
		t.Errorf("a name no domain holds: got %+v, want a failed handshake", got)
	}
}

// A domain created with a regionalCertificateArn is served with the
// certificate files TOLLGATE_GATEWAY_TLS_CERTIFICATES maps it to.
func TestCustomDomainWithTheGatewaysCertificateFiles(t *testing.T) {
	ca := tlstest.MustCA(t)
	cert := ca.Issue(t, time.Time{}, testDomain)
	certFile, keyFile := ca.WriteFiles(t, t.TempDir(), "api", cert)
	arn := "arn:aws:acm:eu-west-1:123456789012:certificate/1c2d3e4f"
	s := mustStackWith(t, stackOptions{tlsCerts: "arn:aws:acm:eu-west-1:123456789012:certificate/other=/nope.crt,/nope.key;\n" +
		arn + "=" + certFile + "," + keyFile})
	ctx := t.Context()
	apiID := s.mockAPI(t, ctx)
	_, err := s.sdk.CreateDomainName(ctx, &apigateway.CreateDomainNameInput{DomainName: aws.String(testDomain), RegionalCertificateArn: aws.String(arn)})
	must(t, "CreateDomainName", err)
	_, err = s.sdk.CreateBasePathMapping(ctx, &apigateway.CreateBasePathMappingInput{DomainName: aws.String(testDomain),
		RestApiId: aws.String(apiID), Stage: aws.String("prod")})
	must(t, "CreateBasePathMapping", err)
	s.waitHTTPS(t, ca, "/items/7", cert.Leaf.SerialNumber.String(), http.StatusOK, time.Second)
}

func TestCertificateFilesSetting(t *testing.T) {
	got, err := certificateFiles(" a=/x.crt,/x.key ;\nb = /y.crt , /y.key\n")
	if err != nil || len(got) != 2 || got["a"].CertFile != "/x.crt" || got["b"].KeyFile != "/y.key" {
		t.Fatalf("got %+v, %v", got, err)
	}
	for _, bad := range []string{"a=/x.crt", "=/x.crt,/x.key", "a=/x.crt,", "a=/x,/y;a=/z,/w"} {
		if _, err := certificateFiles(bad); err == nil || !strings.Contains(err.Error(), "TOLLGATE_GATEWAY_TLS_CERTIFICATES") {
			t.Errorf("%q: got %v, want an error naming the variable", bad, err)
		}
	}
}

// TestComposeServesCustomDomains checks by reading docker-compose.yml (no
// Docker engine here) that both tollgate nodes publish the HTTPS port and
// share one TOLLGATE_SECRETS_KEY, as sealed private keys need.
func TestComposeServesCustomDomains(t *testing.T) {
	b, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Environment map[string]string `yaml:"environment"`
			Ports       []string          `yaml:"ports"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, name := range []string{"tollgate", "gateway"} {
		svc := compose.Services[name]
		keys = append(keys, svc.Environment["TOLLGATE_SECRETS_KEY"])
		if !slices.ContainsFunc(svc.Ports, func(p string) bool { return strings.HasSuffix(p, ":8443") }) {
			t.Errorf("service %s publishes %v, want the HTTPS port 8443", name, svc.Ports)
		}
	}
	if len(keys[0]) < seal.MinSecretLen || keys[0] != keys[1] {
		t.Errorf("TOLLGATE_SECRETS_KEY of tollgate and gateway: %q and %q, want one key of at least %d bytes", keys[0], keys[1], seal.MinSecretLen)
	}
}

// checkDomains creates a custom domain name with two base path mappings
// through the SDK, as an operator would with the AWS CLI, and finds them on
// the console's "Domain names" page, without the certificate's key.
func checkDomains(t *testing.T, p *browsertest.Page, s *stack, apiID string) {
	t.Helper()
	ctx := t.Context()
	ca := tlstest.MustCA(t)
	cert := ca.Issue(t, time.Time{}, testDomain)
	_, err := s.sdk.CreateDomainName(ctx, &apigateway.CreateDomainNameInput{DomainName: aws.String(testDomain),
		CertificateBody: aws.String(cert.Body), CertificatePrivateKey: aws.String(cert.Key), RegionalCertificateName: aws.String("partners")})
	must(t, "CreateDomainName", err)
	for _, bp := range []string{"", "v1/shop"} {
		_, err = s.sdk.CreateBasePathMapping(ctx, &apigateway.CreateBasePathMappingInput{DomainName: aws.String(testDomain),
			BasePath: aws.String(bp), RestApiId: aws.String(apiID), Stage: aws.String("prod")})
		must(t, "CreateBasePathMapping", err)
	}
	p.Role("link", "Domain names").Click()
	p.Role("heading", "Domain names")
	rows := p.Table("Domain names") // the header row, then one per domain
	if len(rows) != 2 || !rowWith(rows, testDomain, "/ → shop / prod, /v1/shop → shop / prod") ||
		!strings.HasPrefix(rows[1][1], "partners (stored, given ") {
		t.Errorf("Domain names table: got %q", rows)
	}
	if txt := p.Role("main", "").Text(); strings.Contains(txt, "PRIVATE KEY") {
		t.Error("the Domain names page shows a private key")
	}
	p.Screenshot("console-domains")
}
