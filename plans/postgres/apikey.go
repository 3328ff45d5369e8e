package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/plans"
)

type keyRow struct {
	ID          string            `db:"id"`
	KeyHash     string            `db:"key_hash"`
	Name        string            `db:"name"`
	Description string            `db:"description"`
	Enabled     bool              `db:"enabled"`
	CustomerID  string            `db:"customer_id"`
	StageKeys   []string          `db:"stage_keys"`
	Tags        map[string]string `db:"tags"`
	CreatedAt   time.Time         `db:"created_at"`
	UpdatedAt   time.Time         `db:"updated_at"`
	ExpiresAt   *time.Time        `db:"expires_at"`
	Anchor      string            `db:"quota_anchor"`
	TimeZone    string            `db:"quota_time_zone"`
}

const keyCols = `id, key_hash, name, description, enabled, customer_id, stage_keys, tags, created_at, updated_at, expires_at, quota_anchor, quota_time_zone`

func (r keyRow) key() plans.ApiKey {
	sk := r.StageKeys
	if sk == nil {
		sk = []string{}
	}
	return plans.ApiKey{ID: r.ID, Name: r.Name, Description: r.Description, Enabled: r.Enabled,
		CustomerID: r.CustomerID, StageKeys: sk, Tags: nilIfEmptyMap(r.Tags),
		CreatedDate: epoch(r.CreatedAt), LastUpdatedDate: epoch(r.UpdatedAt), ExpiresAt: utc(r.ExpiresAt),
		QuotaAnchor: r.Anchor, QuotaTimeZone: r.TimeZone}
}

// utc returns t in UTC, nil for nil.
func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// keyExpiry returns the expires_at of a key with tags (validated
// already): the time its plans.ExpiresAtTag names, or nil.
func keyExpiry(tags map[string]string) *time.Time {
	t, ok, _ := plans.KeyExpiry(tags)
	if !ok {
		return nil
	}
	return &t
}

func getKey(ctx context.Context, tx pgx.Tx, id string, forUpdate bool) (keyRow, error) {
	q := `SELECT ` + keyCols + ` FROM api_keys WHERE id = $1`
	if forUpdate {
		q += ` FOR UPDATE`
	}
	rows, _ := tx.Query(ctx, q, id)
	r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[keyRow])
	return r, notFound(err, msgNoKey)
}

// CreateApiKey validates k and stores it (ID of 10 characters and dates
// filled) with hash, the SHA-256 or HMAC-SHA-256 hex digest of its value
// (plans.HashKey); k.Value is never stored. It records a change naming
// hash. Errors: KindInvalid naming the field ("value" when hash is
// empty), KindConflict when a key with the same hash exists.
func (db *DB) CreateApiKey(ctx context.Context, k *plans.ApiKey, hash string) error {
	if err := k.Validate(); err != nil {
		return err
	}
	if hash == "" {
		return plans.Invalid("value", "the key value's hash is required")
	}
	if k.StageKeys == nil {
		k.StageKeys = []string{}
	}
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		k.ID, k.CreatedDate, k.LastUpdatedDate = plans.NewID(plans.LongIDLen), epoch(now), epoch(now)
		k.ExpiresAt = keyExpiry(k.Tags)
		if _, err := tx.Exec(ctx, `INSERT INTO api_keys (`+keyCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			k.ID, hash, k.Name, k.Description, k.Enabled, k.CustomerID, k.StageKeys, emptyIfNil(k.Tags), now, now, k.ExpiresAt,
			k.QuotaAnchor, k.QuotaTimeZone); err != nil {
			return err
		}
		return record(ctx, tx, now, &change{keys: []string{hash}})
	})
}

// GetApiKey returns an API key without its value. Errors: KindNotFound
// ("Invalid API Key identifier specified").
func (db *DB) GetApiKey(ctx context.Context, id string) (*plans.ApiKey, error) {
	var k plans.ApiKey
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		r, err := getKey(ctx, tx, id, false)
		k = r.key()
		return err
	})
	if err != nil {
		return nil, err
	}
	return &k, nil
}

// ListApiKeys returns one page of API keys ordered by id, filtered by name
// prefix nameQuery and exact customerID when those are not empty. Errors:
// KindInvalid ("position").
func (db *DB) ListApiKeys(ctx context.Context, nameQuery, customerID string, p plans.Page) ([]plans.ApiKey, string, error) {
	after, limit, err := pageArgs(p)
	if err != nil {
		return nil, "", err
	}
	var out []plans.ApiKey
	err = db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		rows, _ := tx.Query(ctx, `SELECT `+keyCols+` FROM api_keys WHERE id > $1
			AND name LIKE $2 AND ($3 = '' OR customer_id = $3) ORDER BY id LIMIT $4`,
			after, likePrefix(nameQuery), customerID, limit+1)
		rs, err := pgx.CollectRows(rows, pgx.RowToStructByName[keyRow])
		for _, r := range rs {
			out = append(out, r.key())
		}
		return err
	})
	if err != nil {
		return nil, "", err
	}
	out, next := cut(out, limit, func(k plans.ApiKey) string { return k.ID })
	return out, next, nil
}

// likePrefix returns a LIKE pattern matching strings that start with s.
func likePrefix(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s) + "%"
}

// UpdateApiKey lets fn modify an API key (ID, dates and the stored hash are
// kept; a Value set by fn is ignored), validates and stores it, and
// records a change naming its hash. Errors: KindNotFound, KindInvalid, or
// fn's error.
func (db *DB) UpdateApiKey(ctx context.Context, id string, fn func(*plans.ApiKey) error) (*plans.ApiKey, error) {
	var k plans.ApiKey
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		r, err := getKey(ctx, tx, id, true)
		if err != nil {
			return err
		}
		k = r.key()
		if err := fn(&k); err != nil {
			return err
		}
		k.ID, k.Value, k.CreatedDate, k.LastUpdatedDate = id, "", epoch(r.CreatedAt), epoch(now)
		if k.StageKeys == nil {
			k.StageKeys = []string{}
		}
		if err := k.Validate(); err != nil {
			return err
		}
		k.ExpiresAt = keyExpiry(k.Tags)
		if _, err := tx.Exec(ctx, `UPDATE api_keys SET name = $2, description = $3, enabled = $4, customer_id = $5,
				stage_keys = $6, tags = $7, updated_at = $8, expires_at = $9, quota_anchor = $10, quota_time_zone = $11 WHERE id = $1`,
			id, k.Name, k.Description, k.Enabled, k.CustomerID, k.StageKeys, emptyIfNil(k.Tags), now, k.ExpiresAt,
			k.QuotaAnchor, k.QuotaTimeZone); err != nil {
			return err
		}
		if err := keyAnchorsFit(ctx, tx, `k.key_id = $1`, id); err != nil {
			return err
		}
		return record(ctx, tx, now, &change{keys: []string{r.KeyHash}})
	})
	if err != nil {
		return nil, err
	}
	return &k, nil
}

// DeleteApiKey deletes an API key, its plan associations and its previous
// values, and records a change naming their hashes. Errors: KindNotFound.
func (db *DB) DeleteApiKey(ctx context.Context, id string) error {
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		r, err := getKey(ctx, tx, id, true)
		if err != nil {
			return err
		}
		prev, err := previousHashes(ctx, tx, `a.id = $1`, id) // gone with the key: named here
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM api_keys WHERE id = $1`, id); err != nil {
			return err
		}
		return record(ctx, tx, now, &change{keys: append(prev, r.KeyHash)})
	})
}
