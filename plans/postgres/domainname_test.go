package postgres_test

import (
	"testing"

	"tollgate/plans"
	"tollgate/plans/postgres"
)

// storedCert is a certificate as the store takes it: the store checks only
// that one is there; its content is the admin's to check.
var storedCert = plans.DomainCertificate{Body: "BODY", Chain: "CHAIN", PrivateKey: "KEY"}

func newDomain(t *testing.T, db *postgres.DB, name string) *plans.DomainName {
	t.Helper()
	d := &plans.DomainName{DomainName: name, RegionalCertificateName: "label"}
	must(t, db.CreateDomainName(ctx, d, storedCert))
	return d
}

func TestDomainNameLifecycle(t *testing.T) {
	db := newDB(t)
	v := version(t, db)
	d := newDomain(t, db, "API.example.test")
	if d.DomainName != "api.example.test" || d.CertificateUploadDate == nil || d.DomainNameStatus != plans.DomainNameAvailable {
		t.Fatalf("created: got %+v, want the name lower case, an upload date and AVAILABLE", d)
	}
	if c := lastChange(t, db); c.Version != v+1 || !c.Snapshot {
		t.Errorf("create recorded %+v, want a snapshot change at %d", c, v+1)
	}
	wantMsg(t, db.CreateDomainName(ctx, &plans.DomainName{DomainName: "api.example.test"}, storedCert),
		plans.KindConflict, "The domain name you provided already exists")

	got, err := db.GetDomainName(ctx, "api.example.test")
	must(t, err)
	if got.RegionalCertificateName != "label" || got.SecurityPolicy != plans.SecurityPolicyTLS12 || got.CertificateUploadDate == nil {
		t.Errorf("get: got %+v", got)
	}
	_, err = db.GetDomainName(ctx, "nope.example.test")
	wantMsg(t, err, plans.KindNotFound, "Invalid domain name identifier specified")

	// A label change keeps the upload date; a new certificate moves it.
	up, err := db.UpdateDomainName(ctx, "api.example.test", func(d *plans.DomainName, _ *plans.DomainCertificate) error {
		d.RegionalCertificateName = "renamed"
		return nil
	})
	must(t, err)
	if up.RegionalCertificateName != "renamed" || !up.CertificateUploadDate.Equal(got.CertificateUploadDate.Time) {
		t.Errorf("label update: got %+v, want the upload date %v kept", up, got.CertificateUploadDate)
	}
	up, err = db.UpdateDomainName(ctx, "api.example.test", func(_ *plans.DomainName, c *plans.DomainCertificate) error {
		c.Body = "BODY2"
		return nil
	})
	must(t, err)
	if !up.CertificateUploadDate.After(got.CertificateUploadDate.Time) {
		t.Errorf("certificate update: upload date %v, want after %v", up.CertificateUploadDate, got.CertificateUploadDate)
	}
	// Switching to a certificate of the nodes' configuration drops the stored one.
	up, err = db.UpdateDomainName(ctx, "api.example.test", func(d *plans.DomainName, c *plans.DomainCertificate) error {
		*c = plans.DomainCertificate{}
		d.RegionalCertificateArn = "arn:aws:acm:us-east-1:123456789012:certificate/abc"
		return nil
	})
	must(t, err)
	if up.CertificateUploadDate != nil || up.RegionalCertificateArn == "" {
		t.Errorf("switch to an ARN: got %+v", up)
	}
	s, err := db.Snapshot(ctx)
	must(t, err)
	if dc := s.Domains["api.example.test"]; dc == nil || dc.Certificate != nil || dc.CertificateArn != up.RegionalCertificateArn {
		t.Errorf("snapshot domain: got %+v", dc)
	}

	list, next, err := db.ListDomainNames(ctx, plansPage(10))
	must(t, err)
	if len(list) != 1 || next != "" {
		t.Errorf("list: got %+v %q", list, next)
	}
	must(t, db.DeleteDomainName(ctx, "api.example.test"))
	_, err = db.GetDomainName(ctx, "api.example.test")
	wantErr(t, err, plans.KindNotFound, "-")
}

func TestDomainNameNeedsExactlyOneCertificate(t *testing.T) {
	db := newDB(t)
	arn := "arn:aws:acm:us-east-1:123456789012:certificate/abc"
	for _, tt := range []struct {
		name  string
		d     plans.DomainName
		cert  plans.DomainCertificate
		field string
	}{
		{"none", plans.DomainName{DomainName: "a.example.test"}, plans.DomainCertificate{}, "certificateBody"},
		{"both", plans.DomainName{DomainName: "a.example.test", RegionalCertificateArn: arn}, storedCert, "regionalCertificateArn"},
		{"key without body", plans.DomainName{DomainName: "a.example.test"}, plans.DomainCertificate{PrivateKey: "K"}, "certificateBody"},
		{"body without key", plans.DomainName{DomainName: "a.example.test"}, plans.DomainCertificate{Body: "B"}, "certificatePrivateKey"},
		{"bad name", plans.DomainName{DomainName: "a..test"}, storedCert, "domainName"},
		{"TLS 1.0", plans.DomainName{DomainName: "a.example.test", SecurityPolicy: "TLS_1_0"}, storedCert, "securityPolicy"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantErr(t, db.CreateDomainName(ctx, &tt.d, tt.cert), plans.KindInvalid, tt.field)
		})
	}
	d := &plans.DomainName{DomainName: "b.example.test", RegionalCertificateArn: arn}
	must(t, db.CreateDomainName(ctx, d, plans.DomainCertificate{}))
	if d.CertificateUploadDate != nil {
		t.Errorf("an ARN domain has an upload date %v", d.CertificateUploadDate)
	}
}

func TestBasePathMappingLifecycle(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	f.addStage(t, db, "beta")
	newDomain(t, db, "api.example.test")
	for _, m := range []plans.BasePathMapping{
		{BasePath: "", RestApiID: f.api.ID, Stage: "prod"},
		{BasePath: "v1", RestApiID: f.api.ID, Stage: "prod"},
		{BasePath: "v1/orders", RestApiID: f.api.ID, Stage: "beta"},
		{BasePath: "any", RestApiID: f.api.ID, Stage: "(none)"},
	} {
		must(t, db.CreateBasePathMapping(ctx, "api.example.test", &m))
	}
	wantMsg(t, db.CreateBasePathMapping(ctx, "api.example.test", &plans.BasePathMapping{BasePath: "(none)", RestApiID: f.api.ID}),
		plans.KindConflict, "Base path already exists for this domain name")
	wantErr(t, db.CreateBasePathMapping(ctx, "api.example.test", &plans.BasePathMapping{BasePath: "x", RestApiID: "nope"}),
		plans.KindInvalid, "restApiId")
	wantErr(t, db.CreateBasePathMapping(ctx, "api.example.test", &plans.BasePathMapping{BasePath: "x", RestApiID: f.api.ID, Stage: "gamma"}),
		plans.KindInvalid, "stage")
	wantErr(t, db.CreateBasePathMapping(ctx, "api.example.test", &plans.BasePathMapping{BasePath: "/x", RestApiID: f.api.ID}),
		plans.KindInvalid, "basePath")
	wantErr(t, db.CreateBasePathMapping(ctx, "nope.example.test", &plans.BasePathMapping{RestApiID: f.api.ID}),
		plans.KindNotFound, "-")

	m, err := db.GetBasePathMapping(ctx, "api.example.test", "")
	must(t, err)
	if m.BasePath != "(none)" || m.Stage != "prod" {
		t.Errorf("get (none): got %+v", m)
	}
	if m, err = db.GetBasePathMapping(ctx, "api.example.test", "any"); err != nil || m.Stage != "" {
		t.Errorf("get any: got %+v, %v; want no stage", m, err)
	}
	first, next, err := db.ListBasePathMappings(ctx, "api.example.test", plansPage(2))
	must(t, err)
	rest, last, err := db.ListBasePathMappings(ctx, "api.example.test", plans.Page{Position: next, Limit: 10})
	must(t, err)
	if len(first) != 2 || next == "" || len(rest) != 2 || last != "" {
		t.Errorf("paging: got %+v / %+v", first, rest)
	}

	m, err = db.UpdateBasePathMapping(ctx, "api.example.test", "v1/orders", func(m *plans.BasePathMapping) error {
		m.BasePath, m.Stage = "v2/orders", "prod"
		return nil
	})
	must(t, err)
	if m.BasePath != "v2/orders" {
		t.Errorf("update: got %+v", m)
	}
	_, err = db.GetBasePathMapping(ctx, "api.example.test", "v1/orders")
	wantMsg(t, err, plans.KindNotFound, "Invalid base path mapping identifier specified")
	_, err = db.UpdateBasePathMapping(ctx, "api.example.test", "v2/orders", func(m *plans.BasePathMapping) error {
		m.BasePath = "v1"
		return nil
	})
	wantErr(t, err, plans.KindConflict, "-")

	s, err := db.Snapshot(ctx)
	must(t, err)
	dc := s.Domains["api.example.test"]
	if dc == nil || dc.Certificate == nil || dc.Certificate.PrivateKey != "KEY" || len(dc.Mappings) != 4 {
		t.Fatalf("snapshot domain: got %+v", dc)
	}
	must(t, s.Validate())

	// A mapped stage or API cannot go before its mapping; the domain takes its mappings along.
	must(t, db.DeleteStage(ctx, f.api.ID, "beta")) // no longer mapped
	must(t, db.DeleteBasePathMapping(ctx, "api.example.test", "any"))
	wantErr(t, db.DeleteStage(ctx, f.api.ID, "prod"), plans.KindInvalid, "stage")
	wantErr(t, db.DeleteRestApi(ctx, f.api.ID), plans.KindInvalid, "-")
	must(t, db.DeleteDomainName(ctx, "api.example.test"))
	must(t, db.DeleteRestApi(ctx, f.api.ID))
}
