package postgres

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/plans"
)

// change accumulates what one write touched; record stores it.
type change struct {
	snapshot bool
	keys     []string // key hashes whose KeyRecord changed
	plans    []string // plan ids
	stages   []string // "apiId:stage"
}

func stageRef(apiID, stage string) string { return apiID + ":" + stage }

// record increments config_version (the row lock orders commits, so
// commit order equals version order) and inserts the config_changes row
// of the new version. A change naming a key's hash names the hashes of
// its previous values too (a rotation's overlap: their records carry the
// key's state). Lists are stored sorted and deduplicated.
func record(ctx context.Context, tx pgx.Tx, now time.Time, c *change) error {
	if len(c.keys) > 0 {
		prev, err := previousHashes(ctx, tx, `a.key_hash = ANY($1)`, c.keys)
		if err != nil {
			return err
		}
		c.keys = append(c.keys, prev...)
	}
	var v int64
	if err := tx.QueryRow(ctx, `UPDATE config_version SET version = version + 1 RETURNING version`).Scan(&v); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO config_changes (version, snapshot, key_hashes, plans, stages, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, v, c.snapshot, set(c.keys), set(c.plans), set(c.stages), now)
	return err
}

// set returns s sorted without duplicates, never nil.
func set(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	out = slices.Compact(out)
	if out == nil {
		out = []string{}
	}
	return out
}

// ConfigVersion returns the current config version: 0 on an empty
// database, then +1 per committed write that changed what the data plane
// sees. Errors: KindUnavailable.
func (db *DB) ConfigVersion(ctx context.Context) (int64, error) {
	var v int64
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		var err error
		v, err = currentVersion(ctx, tx)
		return err
	})
	return v, err
}

func currentVersion(ctx context.Context, tx pgx.Tx) (int64, error) {
	var v int64
	err := tx.QueryRow(ctx, `SELECT version FROM config_version`).Scan(&v)
	return v, err
}

type changeRow struct {
	Version   int64    `db:"version"`
	Snapshot  bool     `db:"snapshot"`
	KeyHashes []string `db:"key_hashes"`
	Plans     []string `db:"plans"`
	Stages    []string `db:"stages"`
}

// Changes returns up to limit (1..10000; other values mean 1000) recorded
// changes with a version above afterVersion, in ascending version order.
// Empty lists are nil. Errors: KindUnavailable.
func (db *DB) Changes(ctx context.Context, afterVersion int64, limit int) ([]plans.Change, error) {
	if limit < 1 || limit > 10000 {
		limit = 1000
	}
	var out []plans.Change
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		rows, _ := tx.Query(ctx, `SELECT version, snapshot, key_hashes, plans, stages FROM config_changes
			WHERE version > $1 ORDER BY version LIMIT $2`, afterVersion, limit)
		rs, err := pgx.CollectRows(rows, pgx.RowToStructByName[changeRow])
		out = make([]plans.Change, len(rs))
		for i, r := range rs {
			out[i] = plans.Change{Version: r.Version, Snapshot: r.Snapshot,
				KeyHashes: nilIfEmpty(r.KeyHashes), Plans: nilIfEmpty(r.Plans), Stages: nilIfEmpty(r.Stages)}
		}
		return err
	})
	return out, err
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// PruneChanges deletes the oldest recorded changes: every change below the
// first one that is younger than olderThan (by the store's clock) and
// below the last keep versions, so what remains is always an unbroken run
// of versions up to the current one (created_at need not rise with the
// version: a transaction reads its clock before it takes its version). It
// returns how many it deleted. The change log only lets the publisher
// catch up from its watermark; a publisher whose next change was pruned
// republishes everything instead (push.Publisher.Publish), so pruning
// never loses configuration. keep < 1 counts as 1, so the current change
// always stays. Errors: KindUnavailable.
func (db *DB) PruneChanges(ctx context.Context, keep int64, olderThan time.Duration) (int64, error) {
	var n int64
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		tag, err := tx.Exec(ctx, `DELETE FROM config_changes
			WHERE version <= (SELECT version FROM config_version) - $1
			  AND version < COALESCE((SELECT min(version) FROM config_changes WHERE created_at >= $2),
			                         (SELECT version FROM config_version) + 1)`,
			max(keep, 1), now.Add(-olderThan))
		n = tag.RowsAffected()
		return err
	})
	return n, err
}

// previousHashes returns the hashes of the previous values of the keys
// (api_keys a) that where selects, with its one argument arg.
func previousHashes(ctx context.Context, tx pgx.Tx, where string, arg any) ([]string, error) {
	rows, _ := tx.Query(ctx, `SELECT p.key_hash FROM api_key_previous_values p JOIN api_keys a ON a.id = p.key_id
		WHERE `+where, arg)
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
