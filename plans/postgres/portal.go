package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/plans"
)

// Portal store: the developer portal's accounts, invites and sessions
// (docs/portal.md). None of them is part of what the gateways see, so no
// write here takes a config version.

// msgNoInvite is the not-found message of an unknown, used or expired invite.
const msgNoInvite = "This invite link is not valid: it was used already, it expired, or it never existed"

// CreatePortalInvite stores an invite (validated; its plans must exist,
// 400 naming usagePlanIds) under tokenHash, valid for plans.PortalInviteTTL.
// Errors: KindInvalid, KindUnavailable.
func (db *DB) CreatePortalInvite(ctx context.Context, in *plans.PortalInvite, tokenHash string) error {
	if err := in.Validate(); err != nil {
		return err
	}
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		rows, _ := tx.Query(ctx, `SELECT id FROM unnest($1::text[]) AS id WHERE id NOT IN (SELECT id FROM usage_plans)`, in.UsagePlanIDs)
		missing, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		if len(missing) > 0 {
			return plans.Invalid("usagePlanIds", "usagePlanIds: no usage plan %q", missing[0])
		}
		_, err = tx.Exec(ctx, `INSERT INTO portal_invites (token_hash, email, customer_id, usage_plan_ids, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6)`, tokenHash, in.Email, in.CustomerID, in.UsagePlanIDs, now, now.Add(plans.PortalInviteTTL))
		return err
	})
}

// PortalInvite returns the invite stored under tokenHash while it is
// valid. Errors: KindNotFound, KindUnavailable.
func (db *DB) PortalInvite(ctx context.Context, tokenHash string) (*plans.PortalInvite, error) {
	var in plans.PortalInvite
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		err := tx.QueryRow(ctx, `SELECT email, customer_id, usage_plan_ids FROM portal_invites WHERE token_hash = $1 AND expires_at > $2`,
			tokenHash, now).Scan(&in.Email, &in.CustomerID, &in.UsagePlanIDs)
		return notFound(err, msgNoInvite)
	})
	if err != nil {
		return nil, err
	}
	return &in, nil
}

// AcceptPortalInvite uses up the invite stored under tokenHash: the
// account of its email gets passwordHash, the invite's customer and plans
// (created when it does not exist). Errors: KindNotFound (unknown, used
// or expired), KindUnavailable.
func (db *DB) AcceptPortalInvite(ctx context.Context, tokenHash, passwordHash string) (*plans.PortalAccount, error) {
	var a *plans.PortalAccount
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		var in plans.PortalInvite
		err := tx.QueryRow(ctx, `DELETE FROM portal_invites WHERE token_hash = $1 AND expires_at > $2
			RETURNING email, customer_id, usage_plan_ids`, tokenHash, now).Scan(&in.Email, &in.CustomerID, &in.UsagePlanIDs)
		if err != nil {
			return notFound(err, msgNoInvite)
		}
		rows, _ := tx.Query(ctx, `INSERT INTO portal_accounts (id, email, customer_id, usage_plan_ids, password_hash, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $6)
			ON CONFLICT (email) DO UPDATE SET customer_id = excluded.customer_id, usage_plan_ids = excluded.usage_plan_ids,
				password_hash = excluded.password_hash, updated_at = excluded.updated_at
			RETURNING `+accountCols, plans.NewID(plans.LongIDLen), in.Email, in.CustomerID, in.UsagePlanIDs, passwordHash, now)
		r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[accountRow])
		a = r.account()
		if err != nil {
			return err
		}
		// A changed password ends every session of the account.
		_, err = tx.Exec(ctx, `DELETE FROM portal_sessions WHERE account_id = $1`, a.ID)
		return err
	})
	return a, err
}

// CreatePortalAccount stores a self-service account (ID and date filled).
// Errors: KindConflict when the email has an account, KindUnavailable.
func (db *DB) CreatePortalAccount(ctx context.Context, a *plans.PortalAccount) error {
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		a.ID, a.CreatedDate = plans.NewID(plans.LongIDLen), now
		if a.CustomerID == "" {
			a.CustomerID = "portal-" + a.ID
		}
		_, err := tx.Exec(ctx, `INSERT INTO portal_accounts (id, email, customer_id, usage_plan_ids, password_hash, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $6)`, a.ID, a.Email, a.CustomerID, set(a.UsagePlanIDs), a.PasswordHash, now)
		return err
	})
}

type accountRow struct {
	ID           string    `db:"id"`
	Email        string    `db:"email"`
	CustomerID   string    `db:"customer_id"`
	UsagePlanIDs []string  `db:"usage_plan_ids"`
	PasswordHash string    `db:"password_hash"`
	CreatedAt    time.Time `db:"created_at"`
}

const accountCols = `id, email, customer_id, usage_plan_ids, password_hash, created_at`

// prefixed qualifies each column of a column list with prefix ("a.").
func prefixed(prefix, cols string) string {
	return prefix + strings.ReplaceAll(cols, ", ", ", "+prefix)
}

func (r accountRow) account() *plans.PortalAccount {
	return &plans.PortalAccount{ID: r.ID, Email: r.Email, CustomerID: r.CustomerID, UsagePlanIDs: r.UsagePlanIDs,
		PasswordHash: r.PasswordHash, CreatedDate: r.CreatedAt.UTC()}
}

// PortalAccountByEmail returns the account of an email (lowercase).
// Errors: KindNotFound, KindUnavailable.
func (db *DB) PortalAccountByEmail(ctx context.Context, email string) (*plans.PortalAccount, error) {
	var a *plans.PortalAccount
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		rows, _ := tx.Query(ctx, `SELECT `+accountCols+` FROM portal_accounts WHERE email = $1`, email)
		r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[accountRow])
		a = r.account()
		return notFound(err, "no such account")
	})
	return a, err
}

// CreatePortalSession stores a session of account accountID under
// tokenHash with its CSRF token, for plans.PortalSessionTTL. Errors:
// KindUnavailable.
func (db *DB) CreatePortalSession(ctx context.Context, tokenHash, accountID, csrf string) error {
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		_, err := tx.Exec(ctx, `INSERT INTO portal_sessions (token_hash, account_id, csrf_token, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5)`, tokenHash, accountID, csrf, now, now.Add(plans.PortalSessionTTL))
		return err
	})
}

// PortalSession returns the account and CSRF token of the live session
// stored under tokenHash. Errors: KindNotFound (none, or expired),
// KindUnavailable.
func (db *DB) PortalSession(ctx context.Context, tokenHash string) (*plans.PortalAccount, string, error) {
	var a *plans.PortalAccount
	var csrf string
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		rows, _ := tx.Query(ctx, `SELECT s.csrf_token, `+prefixed("a.", accountCols)+` FROM portal_sessions s
			JOIN portal_accounts a ON a.id = s.account_id WHERE s.token_hash = $1 AND s.expires_at > $2`, tokenHash, now)
		r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[sessionRow])
		a, csrf = r.accountRow.account(), r.CSRF
		return notFound(err, "no such session")
	})
	return a, csrf, err
}

type sessionRow struct {
	CSRF string `db:"csrf_token"`
	accountRow
}

// DeletePortalSession ends the session stored under tokenHash (none is
// not an error). Errors: KindUnavailable.
func (db *DB) DeletePortalSession(ctx context.Context, tokenHash string) error {
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		_, err := tx.Exec(ctx, `DELETE FROM portal_sessions WHERE token_hash = $1`, tokenHash)
		return err
	})
}

// PrunePortal deletes expired sessions and invites; it returns how many.
// Errors: KindUnavailable.
func (db *DB) PrunePortal(ctx context.Context) (int64, error) {
	var n int64
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		a, err := tx.Exec(ctx, `DELETE FROM portal_sessions WHERE expires_at <= $1`, now)
		if err != nil {
			return err
		}
		b, err := tx.Exec(ctx, `DELETE FROM portal_invites WHERE expires_at <= $1`, now)
		n = a.RowsAffected() + b.RowsAffected()
		return err
	})
	return n, err
}

// DeletePortalAccount deletes the account of an email (lowercase) and its
// sessions; its keys stay. Errors: KindNotFound, KindUnavailable.
func (db *DB) DeletePortalAccount(ctx context.Context, email string) error {
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		tag, err := tx.Exec(ctx, `DELETE FROM portal_accounts WHERE email = $1`, email)
		if err == nil && tag.RowsAffected() == 0 {
			return plans.NotFound("no portal account for %s", email)
		}
		return err
	})
}

// ListPortalAccounts returns one page of the portal's accounts ordered by
// email (their password hashes included: the caller shows none). Errors:
// KindInvalid ("position"), KindUnavailable.
func (db *DB) ListPortalAccounts(ctx context.Context, p plans.Page) ([]plans.PortalAccount, string, error) {
	after, limit, err := pageArgs(p)
	if err != nil {
		return nil, "", err
	}
	var out []plans.PortalAccount
	err = db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		rows, _ := tx.Query(ctx, `SELECT `+accountCols+` FROM portal_accounts WHERE email > $1 ORDER BY email LIMIT $2`, after, limit+1)
		rs, err := pgx.CollectRows(rows, pgx.RowToStructByName[accountRow])
		for _, r := range rs {
			out = append(out, *r.account())
		}
		return err
	})
	if err != nil {
		return nil, "", err
	}
	out, next := cut(out, limit, func(a plans.PortalAccount) string { return a.Email })
	return out, next, nil
}

// ListPortalInvites returns one page of the invites not used and not
// expired, ordered by email, then by when they end. Errors: KindInvalid
// ("position"), KindUnavailable.
func (db *DB) ListPortalInvites(ctx context.Context, p plans.Page) ([]plans.PendingInvite, string, error) {
	after, limit, err := pageArgs(p)
	if err != nil {
		return nil, "", err
	}
	var out []plans.PendingInvite
	err = db.read(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		// One page holds every invite of an email, so the email is the position.
		rows, _ := tx.Query(ctx, `SELECT email, customer_id, usage_plan_ids, created_at, expires_at FROM portal_invites
			WHERE expires_at > $1 AND email IN (SELECT DISTINCT email FROM portal_invites WHERE expires_at > $1 AND email > $2
				ORDER BY email LIMIT $3)
			ORDER BY email, expires_at`, now, after, limit+1)
		rs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (plans.PendingInvite, error) {
			var in plans.PendingInvite
			var created time.Time
			err := row.Scan(&in.Email, &in.CustomerID, &in.UsagePlanIDs, &created, &in.ExpiresAt)
			in.CreatedDate, in.ExpiresAt = epoch(created), in.ExpiresAt.UTC()
			return in, err
		})
		out = rs
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return cutByEmail(out, limit)
}

// cutByEmail trims invites of limit+1 emails to the first limit emails
// and returns the position of the next page ("" when no more remain).
func cutByEmail(in []plans.PendingInvite, limit int) ([]plans.PendingInvite, string, error) {
	var emails []string
	for _, x := range in {
		if len(emails) == 0 || emails[len(emails)-1] != x.Email {
			emails = append(emails, x.Email)
		}
	}
	if len(emails) <= limit {
		if in == nil {
			in = []plans.PendingInvite{}
		}
		return in, "", nil
	}
	last := emails[limit-1]
	n := 0
	for n < len(in) && in[n].Email <= last {
		n++
	}
	_, next := cut(emails, limit, func(e string) string { return e })
	return in[:n], next, nil
}

// DeletePortalInvites deletes the pending invites of an email
// (lowercase): their links stop working. Errors: KindNotFound when it has
// none, KindUnavailable.
func (db *DB) DeletePortalInvites(ctx context.Context, email string) error {
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		tag, err := tx.Exec(ctx, `DELETE FROM portal_invites WHERE email = $1 AND expires_at > $2`, email, now)
		if err == nil && tag.RowsAffected() == 0 {
			return plans.NotFound("no pending invite for %s", email)
		}
		return err
	})
}
