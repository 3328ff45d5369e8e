package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/plans"
)

// ImportApiKeys stores keys in one transaction, each row in its own
// savepoint: a row the store refuses (an unknown usage plan, a key that
// would be in two plans for one stage, a name too long to index) is
// rolled back alone and reported as a warning naming its line, or, with
// failOnWarnings, fails the whole import (nothing is stored). A key whose
// hash exists is updated and joins the listed plans. One change names
// every imported key's hash. Errors: KindInvalid (failOnWarnings and a
// refused row, naming its line), KindUnavailable.
func (db *DB) ImportApiKeys(ctx context.Context, keys []plans.KeyImport, failOnWarnings bool) (*plans.KeyImportResult, error) {
	var res *plans.KeyImportResult
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		res = &plans.KeyImportResult{IDs: []string{}, Warnings: []string{}}
		var hashes []string
		for _, k := range keys {
			id, err := importKey(ctx, tx, now, k)
			if err != nil {
				err = translate(err)
				if kind := plans.ErrorKind(err); kind == plans.KindUnavailable || kind == plans.KindInternal {
					return err
				}
				w := fmt.Sprintf("line %d: %s", k.Line, plans.ErrorMessage(err))
				if failOnWarnings {
					return plans.Invalid("body", "%s (failonwarnings: nothing was imported)", w)
				}
				res.Warnings = append(res.Warnings, w)
				continue
			}
			res.IDs, hashes = append(res.IDs, id), append(hashes, k.Hash)
		}
		if len(hashes) == 0 {
			return nil
		}
		return record(ctx, tx, now, &change{keys: hashes})
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// importKey upserts one key and its plan associations in a savepoint.
func importKey(ctx context.Context, tx pgx.Tx, now time.Time, k plans.KeyImport) (string, error) {
	var id string
	err := pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
		err := sp.QueryRow(ctx, `INSERT INTO api_keys (id, key_hash, name, description, enabled, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $6)
			ON CONFLICT (key_hash) DO UPDATE SET name = excluded.name, description = excluded.description,
				enabled = excluded.enabled, updated_at = excluded.updated_at
			RETURNING id`, plans.NewID(plans.LongIDLen), k.Hash, k.Name, k.Description, k.Enabled, now).Scan(&id)
		if err != nil {
			return err
		}
		for _, planID := range k.PlanIDs {
			if err := planExists(ctx, sp, planID); err != nil {
				return plans.Invalid("usageplanIds", "%s: %s", msgNoPlan, planID)
			}
			if _, err := sp.Exec(ctx, `INSERT INTO usage_plan_keys (plan_id, key_id, created_at) VALUES ($1, $2, $3)
				ON CONFLICT (plan_id, key_id) DO NOTHING`, planID, id, now); err != nil {
				return err
			}
		}
		return nil
	})
	return id, err
}
