package admin_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"

	"tollgate/admin"
	"tollgate/internal/clocktest"
	"tollgate/internal/tlstest"
	"tollgate/plans"
	"tollgate/plans/postgres"
	"tollgate/plans/postgres/postgrestest"
	"tollgate/seal"
)

const domain = "api.example.test"

// createDomain creates domain with cert (and the CA's chain) through the SDK.
func (e *env) createDomain(ca *tlstest.CA, cert tlstest.Cert) *apigateway.CreateDomainNameOutput {
	e.t.Helper()
	return call(e.c.CreateDomainName(e.ctx, &apigateway.CreateDomainNameInput{
		DomainName:              aws.String(domain),
		CertificateBody:         aws.String(cert.Body),
		CertificateChain:        aws.String(ca.ChainPEM),
		CertificatePrivateKey:   aws.String(cert.Key),
		RegionalCertificateName: aws.String("partner-cert"),
		EndpointConfiguration:   &types.EndpointConfiguration{Types: []types.EndpointType{types.EndpointTypeRegional}},
		SecurityPolicy:          types.SecurityPolicyTls12,
		Tags:                    map[string]string{"team": "edge"},
	})).must(e.t)
}

func TestDomainNameWithPEMCertificateThroughTheSDK(t *testing.T) {
	t.Parallel()
	// The store's clock moves a second per transaction, so the upload
	// date (epoch seconds) of a new certificate moves.
	e := newEnvWith(t, func(o *admin.Options) {
		db := postgrestest.MustDBWith(t, postgres.Options{Now: clocktest.Ticking(time.Now(), time.Second)})
		o.Store, o.Audit = db, db
	})
	ca := tlstest.MustCA(t)
	cert := ca.Issue(t, time.Time{}, domain)
	before := e.pub.count()
	d := e.createDomain(ca, cert)
	if aws.ToString(d.DomainName) != domain || aws.ToString(d.RegionalCertificateName) != "partner-cert" ||
		d.CertificateUploadDate == nil || d.DomainNameStatus != types.DomainNameStatusAvailable ||
		d.SecurityPolicy != types.SecurityPolicyTls12 || len(d.EndpointConfiguration.Types) != 1 ||
		d.EndpointConfiguration.Types[0] != types.EndpointTypeRegional || d.Tags["team"] != "edge" {
		t.Fatalf("CreateDomainName: got %+v", d)
	}
	if e.pub.count() != before+1 {
		t.Errorf("CreateDomainName published %d times, want once", e.pub.count()-before)
	}
	for _, path := range []string{"/domainnames/" + domain, "/domainnames"} {
		code, _, body := e.raw(http.MethodGet, path, "")
		if code != http.StatusOK || strings.Contains(body, "PRIVATE KEY") || strings.Contains(body, "BEGIN CERTIFICATE") {
			t.Errorf("GET %s: %d %s; want 200 without the certificate or its key", path, code, body)
		}
	}
	got := call(e.c.GetDomainName(e.ctx, &apigateway.GetDomainNameInput{DomainName: aws.String("API.Example.Test")})).must(t)
	if aws.ToString(got.DomainName) != domain {
		t.Errorf("GetDomainName in upper case: got %q", aws.ToString(got.DomainName))
	}
	list := call(e.c.GetDomainNames(e.ctx, &apigateway.GetDomainNamesInput{})).must(t)
	if len(list.Items) != 1 || aws.ToString(list.Items[0].DomainName) != domain {
		t.Errorf("GetDomainNames: got %+v", list.Items)
	}
	_, err := e.c.CreateDomainName(e.ctx, &apigateway.CreateDomainNameInput{DomainName: aws.String(domain),
		CertificateBody: aws.String(cert.Body), CertificatePrivateKey: aws.String(cert.Key)})
	wantCode(t, err, "ConflictException")

	// A new certificate and key through the patch paths move the upload date;
	// a body whose key is not the stored one is refused naming the key.
	next := ca.Issue(t, time.Time{}, domain)
	up := call(e.c.UpdateDomainName(e.ctx, &apigateway.UpdateDomainNameInput{DomainName: aws.String(domain),
		PatchOperations: []types.PatchOperation{
			op(types.OpReplace, "/certificateBody", next.Body),
			op(types.OpReplace, "/certificatePrivateKey", next.Key),
			op(types.OpReplace, "/regionalCertificateName", "renewed"),
		}})).must(t)
	if aws.ToString(up.RegionalCertificateName) != "renewed" || !up.CertificateUploadDate.After(*d.CertificateUploadDate) {
		t.Errorf("UpdateDomainName: got name %q upload %v, want renewed after %v", aws.ToString(up.RegionalCertificateName), up.CertificateUploadDate, d.CertificateUploadDate)
	}
	_, err = e.c.UpdateDomainName(e.ctx, &apigateway.UpdateDomainNameInput{DomainName: aws.String(domain),
		PatchOperations: []types.PatchOperation{op(types.OpReplace, "/certificateBody", cert.Body)}})
	wantBadRequest(t, err, "certificatePrivateKey")
	_, err = e.c.UpdateDomainName(e.ctx, &apigateway.UpdateDomainNameInput{DomainName: aws.String(domain),
		PatchOperations: []types.PatchOperation{op(types.OpReplace, "/domainName", "x.example.test")}})
	wantBadRequest(t, err, "/domainName")

	// The audit log records both changes, never the private keys.
	if code, _, body := e.raw(http.MethodGet, "/audit", ""); code != http.StatusOK || strings.Contains(body, "PRIVATE KEY") ||
		!strings.Contains(body, "CreateDomainName") || !strings.Contains(body, "UpdateDomainName") {
		t.Errorf("GET /audit: %d %s; want CreateDomainName and UpdateDomainName without a private key", code, body)
	}

	call(e.c.TagResource(e.ctx, &apigateway.TagResourceInput{ResourceArn: aws.String("arn:aws:apigateway:us-east-1::/domainnames/" + domain),
		Tags: map[string]string{"env": "prod"}})).must(t)
	tags := call(e.c.GetTags(e.ctx, &apigateway.GetTagsInput{ResourceArn: aws.String("arn:aws:apigateway:eu-west-1::/domainnames/" + domain)})).must(t)
	if tags.Tags["env"] != "prod" || tags.Tags["team"] != "edge" {
		t.Errorf("GetTags: got %v", tags.Tags)
	}

	call(e.c.DeleteDomainName(e.ctx, &apigateway.DeleteDomainNameInput{DomainName: aws.String(domain)})).must(t)
	_, err = e.c.GetDomainName(e.ctx, &apigateway.GetDomainNameInput{DomainName: aws.String(domain)})
	wantCode(t, err, "NotFoundException")
}

func TestDomainNameRefusesWhatItCannotServe(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ca := tlstest.MustCA(t)
	cert := ca.Issue(t, time.Time{}, domain)
	other := ca.Issue(t, time.Time{}, "other.example.test")
	expired := ca.Issue(t, time.Now().Add(-time.Minute), domain)
	regional := &types.EndpointConfiguration{Types: []types.EndpointType{types.EndpointTypeRegional}}
	for _, tt := range []struct {
		name  string
		in    apigateway.CreateDomainNameInput
		field string
	}{
		{"key of another certificate", apigateway.CreateDomainNameInput{CertificateBody: &cert.Body, CertificatePrivateKey: &other.Key}, "certificatePrivateKey"},
		{"certificate of another name", apigateway.CreateDomainNameInput{CertificateBody: &other.Body, CertificatePrivateKey: &other.Key}, "certificateBody"},
		{"expired certificate", apigateway.CreateDomainNameInput{CertificateBody: &expired.Body, CertificatePrivateKey: &expired.Key}, "certificateBody"},
		{"chain that is not PEM", apigateway.CreateDomainNameInput{CertificateBody: &cert.Body, CertificateChain: aws.String("chain"), CertificatePrivateKey: &cert.Key}, "certificateChain"},
		{"no certificate", apigateway.CreateDomainNameInput{EndpointConfiguration: regional}, "certificateBody"},
		{"both certificates", apigateway.CreateDomainNameInput{CertificateBody: &cert.Body, CertificatePrivateKey: &cert.Key, RegionalCertificateArn: aws.String("arn:aws:acm:us-east-1:1:certificate/x")}, "regionalCertificateArn"},
		{"edge endpoint", apigateway.CreateDomainNameInput{CertificateBody: &cert.Body, CertificatePrivateKey: &cert.Key,
			EndpointConfiguration: &types.EndpointConfiguration{Types: []types.EndpointType{types.EndpointTypeEdge}}}, "endpointConfiguration"},
		{"edge certificate", apigateway.CreateDomainNameInput{CertificateArn: aws.String("arn:aws:acm:us-east-1:1:certificate/x")}, "certificateArn"},
		{"TLS 1.0", apigateway.CreateDomainNameInput{CertificateBody: &cert.Body, CertificatePrivateKey: &cert.Key, SecurityPolicy: types.SecurityPolicyTls10}, "securityPolicy"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.DomainName = aws.String(domain)
			_, err := e.c.CreateDomainName(e.ctx, &in)
			wantBadRequest(t, err, tt.field)
		})
	}
	_, err := e.c.CreateDomainName(e.ctx, &apigateway.CreateDomainNameInput{DomainName: aws.String("abc.execute-api.localhost"),
		CertificateBody: &cert.Body, CertificatePrivateKey: &cert.Key})
	wantBadRequest(t, err, "domainName")
}

func TestDomainNameWithCertificateOfTheNodesConfiguration(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	arn := "arn:aws:acm:eu-west-1:123456789012:certificate/1c2d3e4f"
	d := call(e.c.CreateDomainName(e.ctx, &apigateway.CreateDomainNameInput{DomainName: aws.String(domain),
		RegionalCertificateArn: aws.String(arn), RegionalCertificateName: aws.String("acm")})).must(t)
	if aws.ToString(d.RegionalCertificateArn) != arn || d.CertificateUploadDate != nil {
		t.Errorf("CreateDomainName with regionalCertificateArn: got %+v", d)
	}
	ca := tlstest.MustCA(t)
	cert := ca.Issue(t, time.Time{}, domain)
	up := call(e.c.UpdateDomainName(e.ctx, &apigateway.UpdateDomainNameInput{DomainName: aws.String(domain),
		PatchOperations: []types.PatchOperation{
			op(types.OpReplace, "/certificateBody", cert.Body),
			op(types.OpReplace, "/certificatePrivateKey", cert.Key),
		}})).must(t)
	if up.RegionalCertificateArn != nil || up.CertificateUploadDate == nil {
		t.Errorf("switch to a PEM certificate: got arn %v upload %v", up.RegionalCertificateArn, up.CertificateUploadDate)
	}
	up = call(e.c.UpdateDomainName(e.ctx, &apigateway.UpdateDomainNameInput{DomainName: aws.String(domain),
		PatchOperations: []types.PatchOperation{op(types.OpReplace, "/regionalCertificateArn", arn)}})).must(t)
	if aws.ToString(up.RegionalCertificateArn) != arn || up.CertificateUploadDate != nil {
		t.Errorf("switch back to the ARN: got %+v", up)
	}
}

// With a secrets key the store holds the private key sealed; an admin
// holding the key opens it for a patch that keeps the key, one without it
// asks for the key.
func TestDomainPrivateKeyIsStoredSealedWithTheSecretsKey(t *testing.T) {
	t.Parallel()
	key, err := seal.NewKey([]byte("domain-test-secrets-key-0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	var db *postgres.DB
	e := newEnvWith(t, func(o *admin.Options) { o.Secrets, db = key, o.Store.(*postgres.DB) })
	ca := tlstest.MustCA(t)
	cert := ca.Issue(t, time.Time{}, domain)
	e.createDomain(ca, cert)
	stored := func() plans.DomainCertificate {
		s, err := db.Snapshot(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		return *s.Domains[domain].Certificate
	}
	sealed := stored().PrivateKey
	plain, err := key.Open(sealed, plans.PrivateKeyContext(domain))
	if !seal.IsSealed(sealed) || strings.Contains(sealed, "PRIVATE KEY") || err != nil || string(plain) != cert.Key {
		t.Fatalf("stored key %.40q…: sealed %v, opens to the given key: %v (%v)", sealed, seal.IsSealed(sealed), string(plain) == cert.Key, err)
	}
	call(e.c.UpdateDomainName(e.ctx, &apigateway.UpdateDomainNameInput{DomainName: aws.String(domain),
		PatchOperations: []types.PatchOperation{op(types.OpRemove, "/certificateChain", "")}})).must(t)
	if c := stored(); c.Chain != "" || !seal.IsSealed(c.PrivateKey) {
		t.Errorf("after removing the chain: chain %q, key sealed %v", c.Chain, seal.IsSealed(c.PrivateKey))
	}

	plainAdmin := newEnvWith(t, func(o *admin.Options) { o.Store, o.Secrets = db, nil })
	_, err = plainAdmin.c.UpdateDomainName(e.ctx, &apigateway.UpdateDomainNameInput{DomainName: aws.String(domain),
		PatchOperations: []types.PatchOperation{op(types.OpReplace, "/certificateChain", ca.ChainPEM)}})
	wantBadRequest(t, err, "certificatePrivateKey")
}

func TestBasePathMappingsThroughTheSDK(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	apiID, _ := e.api("orders", "prod")
	call(e.c.CreateStage(e.ctx, &apigateway.CreateStageInput{RestApiId: &apiID, StageName: aws.String("beta"),
		DeploymentId: call(e.c.GetStage(e.ctx, &apigateway.GetStageInput{RestApiId: &apiID, StageName: aws.String("prod")})).must(t).DeploymentId})).must(t)
	ca := tlstest.MustCA(t)
	e.createDomain(ca, ca.Issue(t, time.Time{}, domain))

	none := call(e.c.CreateBasePathMapping(e.ctx, &apigateway.CreateBasePathMappingInput{DomainName: aws.String(domain),
		RestApiId: &apiID, Stage: aws.String("prod")})).must(t)
	if aws.ToString(none.BasePath) != "(none)" || aws.ToString(none.Stage) != "prod" {
		t.Errorf("mapping without a base path: got %+v", none)
	}
	for _, bp := range []string{"v1", "v1/orders"} {
		call(e.c.CreateBasePathMapping(e.ctx, &apigateway.CreateBasePathMappingInput{DomainName: aws.String(domain),
			BasePath: aws.String(bp), RestApiId: &apiID, Stage: aws.String("beta")})).must(t)
	}
	_, err := e.c.CreateBasePathMapping(e.ctx, &apigateway.CreateBasePathMappingInput{DomainName: aws.String(domain),
		BasePath: aws.String("v1"), RestApiId: &apiID})
	wantCode(t, err, "ConflictException")
	_, err = e.c.CreateBasePathMapping(e.ctx, &apigateway.CreateBasePathMappingInput{DomainName: aws.String(domain),
		BasePath: aws.String("v2"), RestApiId: &apiID, Stage: aws.String("gamma")})
	wantBadRequest(t, err, "stage")
	_, err = e.c.CreateBasePathMapping(e.ctx, &apigateway.CreateBasePathMappingInput{DomainName: aws.String(domain),
		BasePath: aws.String("v2/"), RestApiId: &apiID})
	wantBadRequest(t, err, "basePath")
	_, err = e.c.CreateBasePathMapping(e.ctx, &apigateway.CreateBasePathMappingInput{DomainName: aws.String("nope.example.test"),
		RestApiId: &apiID})
	wantCode(t, err, "NotFoundException")

	multi := call(e.c.GetBasePathMapping(e.ctx, &apigateway.GetBasePathMappingInput{DomainName: aws.String(domain), BasePath: aws.String("v1/orders")})).must(t)
	if aws.ToString(multi.Stage) != "beta" || aws.ToString(multi.RestApiId) != apiID {
		t.Errorf("GetBasePathMapping v1/orders: got %+v", multi)
	}
	call(e.c.GetBasePathMapping(e.ctx, &apigateway.GetBasePathMappingInput{DomainName: aws.String(domain), BasePath: aws.String("(none)")})).must(t)
	all := call(e.c.GetBasePathMappings(e.ctx, &apigateway.GetBasePathMappingsInput{DomainName: aws.String(domain)})).must(t)
	if len(all.Items) != 3 {
		t.Errorf("GetBasePathMappings: got %d items, want 3", len(all.Items))
	}
	up := call(e.c.UpdateBasePathMapping(e.ctx, &apigateway.UpdateBasePathMappingInput{DomainName: aws.String(domain), BasePath: aws.String("v1/orders"),
		PatchOperations: []types.PatchOperation{op(types.OpReplace, "/stage", "prod"), op(types.OpReplace, "/basePath", "v2/orders")}})).must(t)
	if aws.ToString(up.BasePath) != "v2/orders" || aws.ToString(up.Stage) != "prod" {
		t.Errorf("UpdateBasePathMapping: got %+v", up)
	}
	_, err = e.c.UpdateBasePathMapping(e.ctx, &apigateway.UpdateBasePathMappingInput{DomainName: aws.String(domain), BasePath: aws.String("v1"),
		PatchOperations: []types.PatchOperation{op(types.OpReplace, "/description", "x")}})
	wantBadRequest(t, err, "/description")

	// A mapped stage and API stay until their mappings go.
	_, err = e.c.DeleteStage(e.ctx, &apigateway.DeleteStageInput{RestApiId: &apiID, StageName: aws.String("beta")})
	wantBadRequest(t, err, "stage")
	call(e.c.DeleteBasePathMapping(e.ctx, &apigateway.DeleteBasePathMappingInput{DomainName: aws.String(domain), BasePath: aws.String("v1")})).must(t)
	call(e.c.DeleteStage(e.ctx, &apigateway.DeleteStageInput{RestApiId: &apiID, StageName: aws.String("beta")})).must(t)
	_, err = e.c.DeleteRestApi(e.ctx, &apigateway.DeleteRestApiInput{RestApiId: &apiID})
	wantCode(t, err, "BadRequestException")
	call(e.c.DeleteDomainName(e.ctx, &apigateway.DeleteDomainNameInput{DomainName: aws.String(domain)})).must(t)
	call(e.c.DeleteRestApi(e.ctx, &apigateway.DeleteRestApiInput{RestApiId: &apiID})).must(t)
}
