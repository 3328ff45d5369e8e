package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/plans"
)

const msgNoCredential = "Invalid credential identifier specified"

type credentialRow struct {
	ID          string    `db:"id"`
	Name        string    `db:"name"`
	Role        string    `db:"role"`
	Kind        string    `db:"kind"`
	AccessKeyID *string   `db:"access_key_id"`
	Secret      *string   `db:"secret"`
	CreatedAt   time.Time `db:"created_at"`
	RotatedAt   time.Time `db:"rotated_at"`
}

const credentialCols = `id, name, role, kind, access_key_id, secret, created_at, rotated_at`

func (r credentialRow) credential() plans.Credential {
	c := plans.Credential{ID: r.ID, Name: r.Name, Role: plans.Role(r.Role), Kind: r.Kind,
		CreatedDate: epoch(r.CreatedAt), LastRotatedDate: epoch(r.RotatedAt)}
	if r.AccessKeyID != nil {
		c.AccessKeyID = *r.AccessKeyID
	}
	return c
}

// nullable returns nil for "", so an unused secret column stays NULL.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// CreateCredential validates c and stores it (ID and dates filled) with
// secret: TokenHash for a token, AccessKeyID and SealedSecret for sigv4.
// Errors: KindInvalid naming the field; KindConflict when the name (or
// access key id) is taken.
func (db *DB) CreateCredential(ctx context.Context, c *plans.Credential, secret plans.CredentialSecret) error {
	if err := c.Validate(); err != nil {
		return err
	}
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		c.ID, c.CreatedDate, c.LastRotatedDate = plans.NewID(plans.LongIDLen), epoch(now), epoch(now)
		c.AccessKeyID = secret.AccessKeyID
		_, err := tx.Exec(ctx, `INSERT INTO admin_credentials
			(id, name, role, kind, access_key_id, token_hash, secret, created_at, rotated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)`,
			c.ID, c.Name, string(c.Role), c.Kind, nullable(secret.AccessKeyID), nullable(secret.TokenHash),
			nullable(secret.SealedSecret), now)
		return err
	})
}

// ListCredentials returns one page of credentials, without secrets,
// ordered by id.
func (db *DB) ListCredentials(ctx context.Context, p plans.Page) ([]plans.Credential, string, error) {
	after, limit, err := pageArgs(p)
	if err != nil {
		return nil, "", err
	}
	var out []plans.Credential
	var next string
	err = db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		rows, _ := tx.Query(ctx, `SELECT `+credentialCols+` FROM admin_credentials
			WHERE id > $1 ORDER BY id LIMIT $2`, after, limit+1)
		rs, err := pgx.CollectRows(rows, pgx.RowToStructByName[credentialRow])
		cs := make([]plans.Credential, len(rs))
		for i, r := range rs {
			cs[i] = r.credential()
		}
		out, next = cut(cs, limit, func(c plans.Credential) string { return c.ID })
		return err
	})
	return out, next, err
}

// GetCredential returns one credential without its secret. Errors:
// KindNotFound.
func (db *DB) GetCredential(ctx context.Context, id string) (*plans.Credential, error) {
	var c plans.Credential
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		rows, _ := tx.Query(ctx, `SELECT `+credentialCols+` FROM admin_credentials WHERE id = $1`, id)
		r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[credentialRow])
		c = r.credential()
		return notFound(err, msgNoCredential)
	})
	return &c, err
}

// RotateCredential replaces the secret of credential id (of the same
// kind) and returns it. Errors: KindNotFound.
func (db *DB) RotateCredential(ctx context.Context, id string, secret plans.CredentialSecret) (*plans.Credential, error) {
	var c plans.Credential
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		rows, _ := tx.Query(ctx, `UPDATE admin_credentials
			SET access_key_id = $2, token_hash = $3, secret = $4, rotated_at = $5
			WHERE id = $1 RETURNING `+credentialCols,
			id, nullable(secret.AccessKeyID), nullable(secret.TokenHash), nullable(secret.SealedSecret), now)
		r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[credentialRow])
		c = r.credential()
		return notFound(err, msgNoCredential)
	})
	return &c, err
}

// DeleteCredential removes credential id. Errors: KindNotFound.
func (db *DB) DeleteCredential(ctx context.Context, id string) error {
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		tag, err := tx.Exec(ctx, `DELETE FROM admin_credentials WHERE id = $1`, id)
		if err == nil && tag.RowsAffected() == 0 {
			return plans.NotFound(msgNoCredential)
		}
		return err
	})
}

// CredentialByToken returns the token credential whose token hashes to
// tokenHash (plans.HashToken). Errors: KindNotFound.
func (db *DB) CredentialByToken(ctx context.Context, tokenHash string) (*plans.Credential, error) {
	c, _, err := db.credentialWhere(ctx, `token_hash = $1`, tokenHash)
	return c, err
}

// CredentialByAccessKey returns the sigv4 credential of accessKeyID and
// its sealed secret. Errors: KindNotFound.
func (db *DB) CredentialByAccessKey(ctx context.Context, accessKeyID string) (*plans.Credential, string, error) {
	return db.credentialWhere(ctx, `access_key_id = $1`, accessKeyID)
}

func (db *DB) credentialWhere(ctx context.Context, cond, arg string) (*plans.Credential, string, error) {
	var c plans.Credential
	var secret string
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		rows, _ := tx.Query(ctx, `SELECT `+credentialCols+` FROM admin_credentials WHERE `+cond, arg)
		r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[credentialRow])
		c = r.credential()
		if r.Secret != nil {
			secret = *r.Secret
		}
		return notFound(err, msgNoCredential)
	})
	return &c, secret, err
}
