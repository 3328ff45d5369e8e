package admin

import (
	"context"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"tollgate/plans"
)

// DomainStore is the store's custom domain names and base path mappings
// (plans/postgres.DB; docs/behaviour.md, "Custom domain names"). Every
// write records a snapshot change. The store never sees a private key in
// plain text when the admin has a secrets key: it stores
// DomainCertificate as given.
type DomainStore interface {
	// CreateDomainName stores d with its certificate (the zero value when
	// d.RegionalCertificateArn names one); 409 when the name exists.
	CreateDomainName(ctx context.Context, d *plans.DomainName, cert plans.DomainCertificate) error
	GetDomainName(ctx context.Context, name string) (*plans.DomainName, error)
	ListDomainNames(ctx context.Context, p Page) ([]plans.DomainName, string, error)
	// UpdateDomainName lets fn change d and its stored certificate (zero
	// when none).
	UpdateDomainName(ctx context.Context, name string, fn func(*plans.DomainName, *plans.DomainCertificate) error) (*plans.DomainName, error)
	DeleteDomainName(ctx context.Context, name string) error // with its mappings

	CreateBasePathMapping(ctx context.Context, domain string, m *plans.BasePathMapping) error // 409 on a mapped base path
	GetBasePathMapping(ctx context.Context, domain, basePath string) (*plans.BasePathMapping, error)
	ListBasePathMappings(ctx context.Context, domain string, p Page) ([]plans.BasePathMapping, string, error)
	UpdateBasePathMapping(ctx context.Context, domain, basePath string, fn func(*plans.BasePathMapping) error) (*plans.BasePathMapping, error)
	DeleteBasePathMapping(ctx context.Context, domain, basePath string) error
}

const (
	domainPath  = "/domainnames/{domainName}"
	mappingPath = domainPath + "/basepathmappings"
)

func (s *Server) domainRoutes(r chi.Router) {
	r.Post("/domainnames", s.handle(s.createDomainName))
	r.Get("/domainnames", s.handle(s.getDomainNames))
	r.Get(domainPath, s.handle(s.getDomainName))
	r.Patch(domainPath, s.handle(s.updateDomainName))
	r.Delete(domainPath, s.handle(s.deleteDomainName))
	r.Post(mappingPath, s.handle(s.createBasePathMapping))
	r.Get(mappingPath, s.handle(s.getBasePathMappings))
	r.Get(mappingPath+"/{basePath}", s.handle(s.getBasePathMapping))
	r.Patch(mappingPath+"/{basePath}", s.handle(s.updateBasePathMapping))
	r.Delete(mappingPath+"/{basePath}", s.handle(s.deleteBasePathMapping))
}

// domainParam is the {domainName} of the route, lower case as stored.
func domainParam(r *http.Request) string { return strings.ToLower(param(r, "domainName")) }

// createDomainNameInput is CreateDomainName's body: AWS's fields, those
// of an edge-optimized or private domain name included so that they are
// refused by name rather than ignored.
type createDomainNameInput struct {
	DomainName              string                 `json:"domainName"`
	CertificateName         string                 `json:"certificateName"`
	CertificateBody         string                 `json:"certificateBody"`
	CertificateChain        string                 `json:"certificateChain"`
	CertificatePrivateKey   string                 `json:"certificatePrivateKey"`
	CertificateArn          string                 `json:"certificateArn"`
	RegionalCertificateName string                 `json:"regionalCertificateName"`
	RegionalCertificateArn  string                 `json:"regionalCertificateArn"`
	EndpointConfiguration   *endpointConfiguration `json:"endpointConfiguration"`
	SecurityPolicy          string                 `json:"securityPolicy"`
	MutualTLSAuthentication *struct {
		TruststoreURI string `json:"truststoreUri"`
	} `json:"mutualTlsAuthentication"`
	Tags map[string]string `json:"tags"`
}

type endpointConfiguration struct {
	Types []string `json:"types"`
}

// refuseUnsupported refuses what a REGIONAL domain name of tollgate cannot
// be: another endpoint type, an edge certificate, mutual TLS.
func (in *createDomainNameInput) refuseUnsupported() error {
	if ec := in.EndpointConfiguration; ec != nil && len(ec.Types) > 0 && (len(ec.Types) != 1 || ec.Types[0] != plans.EndpointRegional) {
		return plans.Invalid("endpointConfiguration.types", "endpointConfiguration.types %v is not supported: tollgate serves REGIONAL domain names", ec.Types)
	}
	if in.CertificateArn != "" {
		return errEdgeCertificate
	}
	if m := in.MutualTLSAuthentication; m != nil && m.TruststoreURI != "" {
		return plans.Invalid("mutualTlsAuthentication", "mutualTlsAuthentication is not supported by tollgate")
	}
	return nil
}

var errEdgeCertificate = plans.Invalid("certificateArn", "certificateArn is the certificate of an edge-optimized domain name; tollgate serves REGIONAL ones: give regionalCertificateArn, or certificateBody and certificatePrivateKey")

// createDomainName: POST /domainnames → 201 DomainName. A certificate
// given as PEM is checked against the name and its private key (400
// naming the field), and the key is sealed with the secrets key when the
// admin has one.
func (s *Server) createDomainName(w http.ResponseWriter, r *http.Request) error {
	var in createDomainNameInput
	if err := decode(r, &in); err != nil {
		return err
	}
	if err := in.refuseUnsupported(); err != nil {
		return err
	}
	d := &plans.DomainName{DomainName: in.DomainName, CertificateName: in.CertificateName,
		RegionalCertificateName: in.RegionalCertificateName, RegionalCertificateArn: in.RegionalCertificateArn,
		SecurityPolicy: in.SecurityPolicy, Tags: in.Tags}
	d.Normalize()
	if err := d.Validate(); err != nil {
		return err
	}
	var cert plans.DomainCertificate
	if in.CertificateBody != "" || in.CertificatePrivateKey != "" || in.CertificateChain != "" {
		if err := plans.CheckCertificate(d.DomainName, in.CertificateBody, in.CertificateChain, in.CertificatePrivateKey, s.now()); err != nil {
			return err
		}
		cert = s.sealCertificate(d.DomainName, in.CertificateBody, in.CertificateChain, in.CertificatePrivateKey)
	}
	if err := s.store.CreateDomainName(r.Context(), d, cert); err != nil {
		return err
	}
	s.published(r.Context(), "CreateDomainName")
	writeJSON(w, http.StatusCreated, d)
	return nil
}

// sealCertificate returns the certificate as stored: the key sealed with
// the secrets key, or as given without one.
func (s *Server) sealCertificate(domain, body, chain, key string) plans.DomainCertificate {
	return plans.DomainCertificate{Body: body, Chain: chain, PrivateKey: s.secrets.Seal([]byte(key), plans.PrivateKeyContext(domain))}
}

// getDomainNames: GET /domainnames → 200 list by name.
func (s *Server) getDomainNames(w http.ResponseWriter, r *http.Request) error {
	pg, err := page(r)
	if err != nil {
		return err
	}
	ds, next, err := s.store.ListDomainNames(r.Context(), pg)
	if err != nil {
		return err
	}
	writeList(w, ds, next)
	return nil
}

// getDomainName: GET /domainnames/{domainName} → 200 DomainName.
func (s *Server) getDomainName(w http.ResponseWriter, r *http.Request) error {
	d, err := s.store.GetDomainName(r.Context(), domainParam(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}

// updateDomainName: PATCH /domainnames/{domainName} → 200 DomainName;
// paths in domainPatch.apply.
func (s *Server) updateDomainName(w http.ResponseWriter, r *http.Request) error {
	ops, err := decodePatch(r)
	if err != nil {
		return err
	}
	d, err := s.store.UpdateDomainName(r.Context(), domainParam(r), func(d *plans.DomainName, c *plans.DomainCertificate) error {
		return s.patchDomain(&domainPatch{d: d, cert: c}, ops)
	})
	if err != nil {
		return err
	}
	s.published(r.Context(), "UpdateDomainName")
	writeJSON(w, http.StatusOK, d)
	return nil
}

// domainPatch is a domain name being patched with its stored certificate;
// key is the plain private key once an operation gave one.
type domainPatch struct {
	d           *plans.DomainName
	cert        *plans.DomainCertificate
	key         *string
	certChanged bool
}

// patchDomain applies ops, then checks the result as a whole: a changed
// certificate is checked against the name and its private key (the one
// given, else the stored one) and its key sealed again.
func (s *Server) patchDomain(p *domainPatch, ops []patchOp) error {
	if err := applyAll(ops, p.apply); err != nil {
		return err
	}
	if err := p.d.Validate(); err != nil {
		return err
	}
	if !p.certChanged || p.cert.Body == "" && p.key == nil && p.cert.Chain == "" {
		return nil
	}
	key, err := s.plainKey(p)
	if err != nil {
		return err
	}
	if err := plans.CheckCertificate(p.d.DomainName, p.cert.Body, p.cert.Chain, key, s.now()); err != nil {
		return err
	}
	*p.cert = s.sealCertificate(p.d.DomainName, p.cert.Body, p.cert.Chain, key)
	return nil
}

// plainKey is the private key of a patched certificate: the one an
// operation gave, else the stored one opened.
func (s *Server) plainKey(p *domainPatch) (string, error) {
	if p.key != nil {
		return *p.key, nil
	}
	if p.cert.PrivateKey == "" {
		return "", nil // CheckCertificate names the missing key
	}
	key, err := s.secrets.Open(p.cert.PrivateKey, plans.PrivateKeyContext(p.d.DomainName))
	if err != nil {
		return "", plans.Invalid("certificatePrivateKey", "the stored certificatePrivateKey cannot be opened on this admin node (%v): give certificatePrivateKey with the new certificate", err)
	}
	return string(key), nil
}

// apply applies one operation. Paths: replace or remove /certificateName
// and /regionalCertificateName (labels); replace /regionalCertificateArn
// (the stored certificate is dropped); replace /certificateBody,
// /certificateChain and /certificatePrivateKey, remove /certificateChain
// (a tollgate extension: a new PEM certificate; regionalCertificateArn is
// cleared); replace /securityPolicy (TLS_1_2 only);
// replace /endpointConfiguration/types/0 with REGIONAL.
func (p *domainPatch) apply(op patchOp) error {
	switch op.Path {
	case "/certificateName":
		return setString(op, &p.d.CertificateName)
	case "/regionalCertificateName":
		return setString(op, &p.d.RegionalCertificateName)
	case "/regionalCertificateArn":
		if err := needOp(op, opReplace, opAdd); err != nil {
			return err
		}
		p.d.RegionalCertificateArn = op.Value
		*p.cert, p.key, p.certChanged = plans.DomainCertificate{}, nil, true
		return nil
	case "/certificateBody", "/certificatePrivateKey", "/certificateChain":
		return p.applyCertificate(op)
	case "/certificateArn":
		return errEdgeCertificate
	case "/securityPolicy":
		return setEnum(op, &p.d.SecurityPolicy, plans.SecurityPolicyTLS12)
	case "/endpointConfiguration/types/0":
		var t string
		return setEnum(op, &t, plans.EndpointRegional)
	}
	return badPath(op)
}

// applyCertificate sets one PEM field of the stored certificate.
func (p *domainPatch) applyCertificate(op patchOp) error {
	if op.Path == "/certificateChain" {
		if err := needOp(op, opReplace, opAdd, opRemove); err != nil {
			return err
		}
	} else if err := needOp(op, opReplace, opAdd); err != nil {
		return err
	}
	switch op.Path {
	case "/certificateBody":
		p.cert.Body = op.Value
	case "/certificateChain":
		_ = setString(op, &p.cert.Chain)
	case "/certificatePrivateKey":
		v := op.Value
		p.key = &v
	}
	p.d.RegionalCertificateArn = ""
	p.certChanged = true
	return nil
}

// deleteDomainName: DELETE /domainnames/{domainName} → 202, with its base
// path mappings.
func (s *Server) deleteDomainName(w http.ResponseWriter, r *http.Request) error {
	if err := s.store.DeleteDomainName(r.Context(), domainParam(r)); err != nil {
		return err
	}
	s.published(r.Context(), "DeleteDomainName")
	writeAccepted(w)
	return nil
}

// createBasePathMapping: POST /domainnames/{domainName}/basepathmappings
// {basePath, restApiId, stage} → 201 BasePathMapping (basePath "(none)"
// when empty).
func (s *Server) createBasePathMapping(w http.ResponseWriter, r *http.Request) error {
	var in plans.BasePathMapping
	if err := decode(r, &in); err != nil {
		return err
	}
	if err := s.store.CreateBasePathMapping(r.Context(), domainParam(r), &in); err != nil {
		return err
	}
	s.published(r.Context(), "CreateBasePathMapping")
	writeJSON(w, http.StatusCreated, &in)
	return nil
}

// getBasePathMappings: GET .../basepathmappings → 200 list by base path.
func (s *Server) getBasePathMappings(w http.ResponseWriter, r *http.Request) error {
	pg, err := page(r)
	if err != nil {
		return err
	}
	ms, next, err := s.store.ListBasePathMappings(r.Context(), domainParam(r), pg)
	if err != nil {
		return err
	}
	writeList(w, ms, next)
	return nil
}

// getBasePathMapping: GET .../basepathmappings/{basePath} → 200
// BasePathMapping; "(none)" names the empty base path, and a multi-level
// one comes escaped as one segment (v1%2Forders).
func (s *Server) getBasePathMapping(w http.ResponseWriter, r *http.Request) error {
	m, err := s.store.GetBasePathMapping(r.Context(), domainParam(r), param(r, "basePath"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, m)
	return nil
}

// updateBasePathMapping: PATCH .../basepathmappings/{basePath} → 200;
// replace /basePath, /restapiId (AWS's spelling; /restApiId too) and
// /stage ("(none)" or remove: callers name the stage).
func (s *Server) updateBasePathMapping(w http.ResponseWriter, r *http.Request) error {
	domain, basePath := domainParam(r), param(r, "basePath")
	m, err := patchRecord(s, r, "UpdateBasePathMapping", func(fn func(*plans.BasePathMapping) error) (*plans.BasePathMapping, error) {
		return s.store.UpdateBasePathMapping(r.Context(), domain, basePath, fn)
	}, each(applyMappingOp))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, m)
	return nil
}

func applyMappingOp(m *plans.BasePathMapping, op patchOp) error {
	switch op.Path {
	case "/basePath":
		if err := needOp(op, opReplace); err != nil {
			return err
		}
		m.BasePath = op.Value
		return nil
	case "/restapiId", "/restApiId":
		if err := needOp(op, opReplace); err != nil {
			return err
		}
		m.RestApiID = op.Value
		return nil
	case "/stage":
		return setString(op, &m.Stage)
	}
	return badPath(op)
}

// deleteBasePathMapping: DELETE .../basepathmappings/{basePath} → 202.
func (s *Server) deleteBasePathMapping(w http.ResponseWriter, r *http.Request) error {
	if err := s.store.DeleteBasePathMapping(r.Context(), domainParam(r), param(r, "basePath")); err != nil {
		return err
	}
	s.published(r.Context(), "DeleteBasePathMapping")
	writeAccepted(w)
	return nil
}
