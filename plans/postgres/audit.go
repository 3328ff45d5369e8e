package postgres

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/plans"
)

// audited wraps a write transaction's body so that it also records the
// audit entry its context carries (plans.WithAudit), in the same
// transaction, unless an earlier transaction of the context did.
func audited(fn txFunc) txFunc {
	return func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		if err := fn(ctx, tx, now); err != nil {
			return err
		}
		e := plans.AuditOf(ctx)
		if e == nil || e.Recorded {
			return nil
		}
		return insertAudit(ctx, tx, now, e)
	}
}

// markRecorded notes, after a transaction committed (err nil), that the
// entry its context carries is recorded.
func markRecorded(ctx context.Context, err error) {
	if e := plans.AuditOf(ctx); e != nil && err == nil {
		e.Recorded = true
	}
}

func insertAudit(ctx context.Context, tx pgx.Tx, now time.Time, e *plans.AuditEntry) error {
	change := e.Change
	if len(change) == 0 {
		change = json.RawMessage(`{}`)
	}
	e.Time = now
	return tx.QueryRow(ctx, `INSERT INTO audit_log (time, actor, source, operation, region, resource, change)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
		now, e.Actor, e.Source, e.Operation, e.Region, e.Resource, string(change)).Scan(&e.ID)
}

// RecordAudit records e in a transaction of its own: a change that wrote
// nothing to PostgreSQL (a cache flush, a quota reset in Redis) or a read
// of key values. It sets e.ID, e.Time and e.Recorded.
func (db *DB) RecordAudit(ctx context.Context, e *plans.AuditEntry) error {
	err := db.write(plans.WithAudit(ctx, nil), func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		return insertAudit(ctx, tx, now, e)
	})
	if err == nil {
		e.Recorded = true
	}
	return err
}

// SetAuditResource names the resource a recorded entry created, once the
// creating request's answer tells its id.
func (db *DB) SetAuditResource(ctx context.Context, id int64, resource string) error {
	return db.write(plans.WithAudit(ctx, nil), func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		_, err := tx.Exec(ctx, `UPDATE audit_log SET resource = $2 WHERE id = $1`, id, resource)
		return err
	})
}

type auditRow struct {
	ID        int64           `db:"id"`
	Time      time.Time       `db:"time"`
	Actor     string          `db:"actor"`
	Source    string          `db:"source"`
	Operation string          `db:"operation"`
	Region    string          `db:"region"`
	Resource  string          `db:"resource"`
	Change    json.RawMessage `db:"change"`
}

// AuditEntries returns one page of entries q selects, newest first, and
// the position of the next page ("" when no more remain). Errors:
// KindInvalid naming "position".
func (db *DB) AuditEntries(ctx context.Context, q plans.AuditQuery) ([]plans.AuditEntry, string, error) {
	limit := q.Limit
	if limit <= 0 || limit > maxLimit {
		limit = defaultLimit
	}
	before := int64(-1)
	if q.Position != "" {
		b, err := base64.RawURLEncoding.DecodeString(q.Position)
		n, perr := strconv.ParseInt(string(b), 10, 64)
		if err != nil || perr != nil || n < 1 {
			return nil, "", plans.Invalid("position", "Invalid position")
		}
		before = n
	}
	var out []plans.AuditEntry
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		rows, _ := tx.Query(ctx, `SELECT id, time, actor, source, operation, region, resource, change FROM audit_log
			WHERE ($1 < 0 OR id < $1)
			  AND ($2 = '' OR resource = $2 OR resource LIKE replace(replace(replace($2, '\', '\\'), '%', '\%'), '_', '\_') || '/%')
			  AND ($3 = '' OR actor = $3)
			  AND ($4::timestamptz IS NULL OR time >= $4)
			  AND ($5::timestamptz IS NULL OR time <= $5)
			ORDER BY id DESC LIMIT $6`,
			before, q.Resource, q.Actor, nullTime(q.From), nullTime(q.To), limit+1)
		rs, err := pgx.CollectRows(rows, pgx.RowToStructByName[auditRow])
		out = make([]plans.AuditEntry, len(rs))
		for i, r := range rs {
			out[i] = plans.AuditEntry{ID: r.ID, Time: r.Time.UTC(), Actor: r.Actor, Source: r.Source, Operation: r.Operation,
				Region: r.Region, Resource: r.Resource, Change: r.Change, Recorded: true}
		}
		return err
	})
	if err != nil {
		return nil, "", err
	}
	if len(out) <= limit {
		return out, "", nil
	}
	out = out[:limit]
	return out, base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(out[limit-1].ID, 10))), nil
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// PruneAudit deletes entries older than olderThan (by the store's clock)
// and returns how many.
func (db *DB) PruneAudit(ctx context.Context, olderThan time.Duration) (int64, error) {
	var n int64
	err := db.write(plans.WithAudit(ctx, nil), func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		tag, err := tx.Exec(ctx, `DELETE FROM audit_log WHERE time < $1`, now.Add(-olderThan))
		n = tag.RowsAffected()
		return err
	})
	return n, err
}

// CountConfig counts the stored REST APIs, usage plans, API keys and
// domain names (tollgate config checks that it read them all).
func (db *DB) CountConfig(ctx context.Context) (plans.ConfigCounts, error) {
	var n plans.ConfigCounts
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		return tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM rest_apis), (SELECT count(*) FROM usage_plans),
			(SELECT count(*) FROM api_keys), (SELECT count(*) FROM domain_names)`).Scan(&n.Apis, &n.UsagePlans, &n.ApiKeys, &n.DomainNames)
	})
	return n, err
}
