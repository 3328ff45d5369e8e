package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/plans"
)

func planExists(ctx context.Context, tx pgx.Tx, planID string) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM usage_plans WHERE id = $1`, planID).Scan(&one)
	return notFound(err, msgNoPlan)
}

// CreateUsagePlanKey puts API key keyID in usage plan planID and records a
// change naming the key's hash (its record gains the plan; the plan itself
// does not change). Errors: KindNotFound ("Invalid
// Usage Plan ID specified", "Invalid API Key identifier specified");
// KindConflict when the key is in the plan already, or in another plan
// that covers one of the same (api, stage) pairs (the key_stage_claims
// constraint).
func (db *DB) CreateUsagePlanKey(ctx context.Context, planID, keyID string) (*plans.UsagePlanKey, error) {
	var out *plans.UsagePlanKey
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		if err := planExists(ctx, tx, planID); err != nil {
			return err
		}
		k, err := getKey(ctx, tx, keyID, true)
		if err != nil {
			return err
		}
		if err := keyClaimFree(ctx, tx, planID, keyID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO usage_plan_keys (plan_id, key_id, created_at) VALUES ($1, $2, $3)`,
			planID, keyID, now); err != nil {
			return err
		}
		if err := keyAnchorsFit(ctx, tx, `k.plan_id = $1 AND k.key_id = $2`, planID, keyID); err != nil {
			return err
		}
		out = &plans.UsagePlanKey{ID: keyID, Type: plans.KeyTypeAPIKey, Name: k.Name}
		return record(ctx, tx, now, &change{keys: []string{k.KeyHash}})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// claimConflict is the 409 of a key that already reaches (apiID, stage)
// through another plan; the constraint key_stage_claims_pkey is the same
// rule's last word (a race between two transactions gets its plain
// message).
func claimConflict(keyID, apiID, stage string) error {
	return plans.Conflict("%s: key %s, stage %s:%s", conflicts["key_stage_claims_pkey"], keyID, apiID, stage)
}

// keyClaimFree returns claimConflict when key keyID reaches, through
// another plan, a stage plan planID covers.
func keyClaimFree(ctx context.Context, tx pgx.Tx, planID, keyID string) error {
	var apiID, stage string
	err := tx.QueryRow(ctx, `SELECT c.api_id, c.stage FROM key_stage_claims c
		JOIN usage_plan_stages s ON s.api_id = c.api_id AND s.stage = c.stage AND s.plan_id = $1
		WHERE c.key_id = $2 AND c.plan_id <> $1 ORDER BY c.api_id, c.stage LIMIT 1`, planID, keyID).Scan(&apiID, &stage)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return claimConflict(keyID, apiID, stage)
}

// stageClaimFree returns claimConflict when a key of plan planID reaches
// (apiID, stage) through another plan.
func stageClaimFree(ctx context.Context, tx pgx.Tx, planID, apiID, stage string) error {
	var keyID string
	err := tx.QueryRow(ctx, `SELECT c.key_id FROM key_stage_claims c
		JOIN usage_plan_keys k ON k.key_id = c.key_id AND k.plan_id = $1
		WHERE c.api_id = $2 AND c.stage = $3 AND c.plan_id <> $1 ORDER BY c.key_id LIMIT 1`, planID, apiID, stage).Scan(&keyID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return claimConflict(keyID, apiID, stage)
}

// GetUsagePlanKey returns the association of key keyID with plan planID.
// Errors: KindNotFound (plan; "Invalid API Key identifier specified" when
// the key is not in the plan).
func (db *DB) GetUsagePlanKey(ctx context.Context, planID, keyID string) (*plans.UsagePlanKey, error) {
	var out *plans.UsagePlanKey
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		if err := planExists(ctx, tx, planID); err != nil {
			return err
		}
		var name string
		err := tx.QueryRow(ctx, `SELECT a.name FROM usage_plan_keys k JOIN api_keys a ON a.id = k.key_id
			WHERE k.plan_id = $1 AND k.key_id = $2`, planID, keyID).Scan(&name)
		out = &plans.UsagePlanKey{ID: keyID, Type: plans.KeyTypeAPIKey, Name: name}
		return notFound(err, msgNoKey)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

type planKeyRow struct {
	ID   string `db:"id"`
	Name string `db:"name"`
}

// ListUsagePlanKeys returns one page of a plan's keys ordered by key id,
// filtered by key name prefix nameQuery when not empty. Errors:
// KindNotFound (plan), KindInvalid ("position").
func (db *DB) ListUsagePlanKeys(ctx context.Context, planID, nameQuery string, p plans.Page) ([]plans.UsagePlanKey, string, error) {
	after, limit, err := pageArgs(p)
	if err != nil {
		return nil, "", err
	}
	var out []plans.UsagePlanKey
	err = db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		if err := planExists(ctx, tx, planID); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `SELECT a.id, a.name FROM usage_plan_keys k JOIN api_keys a ON a.id = k.key_id
			WHERE k.plan_id = $1 AND a.id > $2 AND a.name LIKE $3 ORDER BY a.id LIMIT $4`,
			planID, after, likePrefix(nameQuery), limit+1)
		rs, err := pgx.CollectRows(rows, pgx.RowToStructByName[planKeyRow])
		for _, r := range rs {
			out = append(out, plans.UsagePlanKey{ID: r.ID, Type: plans.KeyTypeAPIKey, Name: r.Name})
		}
		return err
	})
	if err != nil {
		return nil, "", err
	}
	out, next := cut(out, limit, func(k plans.UsagePlanKey) string { return k.ID })
	return out, next, nil
}

// DeleteUsagePlanKey removes key keyID from plan planID and records a
// change naming the key's hash. Errors: KindNotFound (plan;
// "Invalid API Key identifier specified" when the key is not in the plan).
func (db *DB) DeleteUsagePlanKey(ctx context.Context, planID, keyID string) error {
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		if err := planExists(ctx, tx, planID); err != nil {
			return err
		}
		var hash string
		err := tx.QueryRow(ctx, `DELETE FROM usage_plan_keys k USING api_keys a
			WHERE k.plan_id = $1 AND k.key_id = $2 AND a.id = k.key_id RETURNING a.key_hash`, planID, keyID).Scan(&hash)
		if err != nil {
			return notFound(err, msgNoKey)
		}
		return record(ctx, tx, now, &change{keys: []string{hash}})
	})
}
