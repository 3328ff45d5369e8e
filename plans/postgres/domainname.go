package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/plans"
)

const msgNoDomain = "Invalid domain name identifier specified"

type domainRow struct {
	DomainName              string            `db:"domain_name"`
	CertificateName         string            `db:"certificate_name"`
	RegionalCertificateName string            `db:"regional_certificate_name"`
	RegionalCertificateArn  string            `db:"regional_certificate_arn"`
	CertificateBody         string            `db:"certificate_body"`
	CertificateChain        string            `db:"certificate_chain"`
	CertificatePrivateKey   string            `db:"certificate_private_key"`
	CertificateUploadedAt   *time.Time        `db:"certificate_uploaded_at"`
	SecurityPolicy          string            `db:"security_policy"`
	Tags                    map[string]string `db:"tags"`
}

const domainCols = `domain_name, certificate_name, regional_certificate_name, regional_certificate_arn,
	certificate_body, certificate_chain, certificate_private_key, certificate_uploaded_at, security_policy, tags`

func (r domainRow) domain() plans.DomainName {
	d := plans.DomainName{DomainName: r.DomainName, CertificateName: r.CertificateName,
		RegionalCertificateName: r.RegionalCertificateName, RegionalCertificateArn: r.RegionalCertificateArn,
		SecurityPolicy: r.SecurityPolicy, Tags: nilIfEmptyMap(r.Tags)}
	if r.CertificateUploadedAt != nil {
		e := epoch(*r.CertificateUploadedAt)
		d.CertificateUploadDate = &e
	}
	d.Normalize()
	return d
}

func (r domainRow) certificate() plans.DomainCertificate {
	return plans.DomainCertificate{Body: r.CertificateBody, Chain: r.CertificateChain, PrivateKey: r.CertificatePrivateKey}
}

// getDomain loads one domain name, locking its row when forUpdate.
// Errors: KindNotFound.
func getDomain(ctx context.Context, tx pgx.Tx, name string, forUpdate bool) (domainRow, error) {
	q := `SELECT ` + domainCols + ` FROM domain_names WHERE domain_name = $1`
	if forUpdate {
		q += ` FOR UPDATE`
	}
	rows, _ := tx.Query(ctx, q, name)
	r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[domainRow])
	return r, notFound(err, msgNoDomain)
}

// checkDomain validates d (normalized) and that it has exactly one
// certificate source: a stored certificate (cert.Body and cert.PrivateKey)
// or RegionalCertificateArn. The certificate's content was checked by the
// caller, which alone sees the private key in plain text.
func checkDomain(d *plans.DomainName, cert *plans.DomainCertificate) error {
	d.Normalize()
	if err := d.Validate(); err != nil {
		return err
	}
	stored := cert.Body != "" || cert.Chain != "" || cert.PrivateKey != ""
	switch {
	case stored && d.RegionalCertificateArn != "":
		return plans.Invalid("regionalCertificateArn", "give either regionalCertificateArn or certificateBody and certificatePrivateKey, not both")
	case !stored && d.RegionalCertificateArn == "":
		return plans.Invalid("certificateBody", "a certificate is required: certificateBody and certificatePrivateKey, or regionalCertificateArn")
	case stored && cert.Body == "":
		return plans.Invalid("certificateBody", "certificateBody is required with certificatePrivateKey or certificateChain")
	case stored && cert.PrivateKey == "":
		return plans.Invalid("certificatePrivateKey", "certificatePrivateKey is required with certificateBody")
	}
	return nil
}

// CreateDomainName stores a domain name with its certificate (cert: the
// stored certificate, its private key as the caller wants it stored; the
// zero value with RegionalCertificateArn set), filling
// CertificateUploadDate for a stored one, and records a snapshot change.
// Errors: KindInvalid naming the field, KindConflict when the name
// exists.
func (db *DB) CreateDomainName(ctx context.Context, d *plans.DomainName, cert plans.DomainCertificate) error {
	if err := checkDomain(d, &cert); err != nil {
		return err
	}
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		var uploaded *time.Time
		if cert.Body != "" {
			uploaded = &now
			e := epoch(now)
			d.CertificateUploadDate = &e
		}
		_, err := tx.Exec(ctx, `INSERT INTO domain_names (`+domainCols+`, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			d.DomainName, d.CertificateName, d.RegionalCertificateName, d.RegionalCertificateArn,
			cert.Body, cert.Chain, cert.PrivateKey, uploaded, d.SecurityPolicy, emptyIfNil(d.Tags), now)
		if err != nil {
			return err
		}
		return record(ctx, tx, now, &change{snapshot: true})
	})
}

// GetDomainName returns one domain name (never its certificate). Errors:
// KindNotFound.
func (db *DB) GetDomainName(ctx context.Context, name string) (*plans.DomainName, error) {
	var out plans.DomainName
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		r, err := getDomain(ctx, tx, name, false)
		out = r.domain()
		return err
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// ListDomainNames returns one page of domain names ordered by name.
// Errors: KindInvalid ("position").
func (db *DB) ListDomainNames(ctx context.Context, p plans.Page) ([]plans.DomainName, string, error) {
	after, limit, err := pageArgs(p)
	if err != nil {
		return nil, "", err
	}
	var out []plans.DomainName
	err = db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		rows, _ := tx.Query(ctx, `SELECT `+domainCols+` FROM domain_names WHERE domain_name > $1
			ORDER BY domain_name LIMIT $2`, after, limit+1)
		rs, err := pgx.CollectRows(rows, pgx.RowToStructByName[domainRow])
		for _, r := range rs {
			out = append(out, r.domain())
		}
		return err
	})
	if err != nil {
		return nil, "", err
	}
	out, next := cut(out, limit, func(d plans.DomainName) string { return d.DomainName })
	return out, next, nil
}

// UpdateDomainName lets fn modify a domain name and its stored
// certificate (the zero value when it has none; fn clears it to switch to
// RegionalCertificateArn), checks the result, stores it and records a
// snapshot change. A changed certificate gets a new CertificateUploadDate.
// The name cannot change. Errors: KindNotFound, KindInvalid naming the
// field, or fn's error.
func (db *DB) UpdateDomainName(ctx context.Context, name string, fn func(*plans.DomainName, *plans.DomainCertificate) error) (*plans.DomainName, error) {
	var d plans.DomainName
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		old, err := getDomain(ctx, tx, name, true)
		if err != nil {
			return err
		}
		d = old.domain()
		cert := old.certificate()
		if err := fn(&d, &cert); err != nil {
			return err
		}
		d.DomainName = old.DomainName
		if err := checkDomain(&d, &cert); err != nil {
			return err
		}
		uploaded := old.CertificateUploadedAt
		switch {
		case cert.Body == "":
			uploaded = nil
		case cert != old.certificate():
			uploaded = &now
		}
		d.CertificateUploadDate = nil
		if uploaded != nil {
			e := epoch(*uploaded)
			d.CertificateUploadDate = &e
		}
		if _, err := tx.Exec(ctx, `UPDATE domain_names SET certificate_name = $2, regional_certificate_name = $3,
				regional_certificate_arn = $4, certificate_body = $5, certificate_chain = $6,
				certificate_private_key = $7, certificate_uploaded_at = $8, security_policy = $9, tags = $10
			WHERE domain_name = $1`, d.DomainName, d.CertificateName, d.RegionalCertificateName, d.RegionalCertificateArn,
			cert.Body, cert.Chain, cert.PrivateKey, uploaded, d.SecurityPolicy, emptyIfNil(d.Tags)); err != nil {
			return err
		}
		return record(ctx, tx, now, &change{snapshot: true})
	})
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// DeleteDomainName deletes a domain name with its base path mappings and
// records a snapshot change. Errors: KindNotFound.
func (db *DB) DeleteDomainName(ctx context.Context, name string) error {
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		if _, err := getDomain(ctx, tx, name, true); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM domain_names WHERE domain_name = $1`, name); err != nil {
			return deleting(err)
		}
		return record(ctx, tx, now, &change{snapshot: true})
	})
}

// readSnapshotDomains adds every domain name with its certificate (or
// certificate ARN) and its mappings, ordered by base path, to s.
func readSnapshotDomains(ctx context.Context, tx pgx.Tx, s *plans.Snapshot) error {
	rows, _ := tx.Query(ctx, `SELECT `+domainCols+` FROM domain_names ORDER BY domain_name`)
	ds, err := pgx.CollectRows(rows, pgx.RowToStructByName[domainRow])
	if err != nil {
		return err
	}
	if len(ds) == 0 {
		return nil
	}
	s.Domains = make(map[string]*plans.DomainConfig, len(ds))
	for _, r := range ds {
		dc := &plans.DomainConfig{DomainName: r.DomainName, CertificateArn: r.RegionalCertificateArn, Mappings: []plans.BasePathMapping{}}
		if r.CertificateBody != "" {
			c := r.certificate()
			dc.Certificate = &c
		}
		s.Domains[r.DomainName] = dc
	}
	ms, err := queryMappings(ctx, tx, `SELECT `+mappingCols+` FROM base_path_mappings ORDER BY domain_name, base_path`)
	for _, m := range ms {
		if dc := s.Domains[m.DomainName]; dc != nil {
			dc.Mappings = append(dc.Mappings, m.mapping())
		}
	}
	return err
}
