package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/plans"
)

// RotateApiKey gives key rot.KeyID the value whose hash is rot.NewHash,
// keeping its id, plans, customer, tags and counters. The previous value
// keeps working until PreviousValueExpiresAt (now plus rot.Overlap, in
// whole seconds), which its key record carries. With a rot.TokenHash seen
// on this key within plans.RotationReplayWindow it changes nothing and
// returns that rotation (Replayed, its SealedValue and end); otherwise it
// stores rot (the sealed value with it, for the window). The key's row
// lock serialises rotations of one key, so concurrent calls with one token
// mint one value. It records a change naming the old and new hashes.
// Errors: KindNotFound, KindConflict (the new hash is taken), KindInvalid.
func (db *DB) RotateApiKey(ctx context.Context, rot plans.KeyRotation) (plans.KeyRotation, error) {
	if err := plans.ValidateRotation(int64(rot.Overlap/time.Second), ""); err != nil {
		return rot, err
	}
	if rot.NewHash == "" {
		return rot, plans.Invalid("value", "the new value's hash is required")
	}
	out := rot
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		out = rot
		r, err := getKey(ctx, tx, rot.KeyID, true)
		if err != nil {
			return err
		}
		if rot.TokenHash != "" {
			prior, found, err := priorRotation(ctx, tx, rot.KeyID, rot.TokenHash, now)
			if err != nil || found {
				out = prior
				return err
			}
		}
		out.PreviousValueExpiresAt = now.Add(rot.Overlap).Truncate(time.Second)
		if _, err := tx.Exec(ctx, `UPDATE api_keys SET key_hash = $2, updated_at = $3 WHERE id = $1`, rot.KeyID, rot.NewHash, now); err != nil {
			return err
		}
		if out.PreviousValueExpiresAt.After(now) {
			if _, err := tx.Exec(ctx, `INSERT INTO api_key_previous_values (key_hash, key_id, expires_at, created_at) VALUES ($1, $2, $3, $4)`,
				r.KeyHash, rot.KeyID, out.PreviousValueExpiresAt, now); err != nil {
				return err
			}
		}
		if rot.TokenHash != "" {
			if _, err := tx.Exec(ctx, `INSERT INTO api_key_rotations (key_id, token_hash, sealed_value, previous_value_expires_at, created_at)
				VALUES ($1, $2, $3, $4, $5)`, rot.KeyID, rot.TokenHash, rot.SealedValue, out.PreviousValueExpiresAt, now); err != nil {
				return err
			}
		}
		return record(ctx, tx, now, &change{keys: []string{r.KeyHash, rot.NewHash}})
	})
	return out, err
}

type rotationRow struct {
	SealedValue string    `db:"sealed_value"`
	Ends        time.Time `db:"previous_value_expires_at"`
	CreatedAt   time.Time `db:"created_at"`
}

// priorRotation returns the rotation of key with tokenHash made within
// the replay window; an older one is deleted (the token is free again).
func priorRotation(ctx context.Context, tx pgx.Tx, keyID, tokenHash string, now time.Time) (plans.KeyRotation, bool, error) {
	rows, _ := tx.Query(ctx, `SELECT sealed_value, previous_value_expires_at, created_at FROM api_key_rotations
		WHERE key_id = $1 AND token_hash = $2`, keyID, tokenHash)
	r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[rotationRow])
	if errors.Is(err, pgx.ErrNoRows) {
		return plans.KeyRotation{}, false, nil
	}
	if err != nil {
		return plans.KeyRotation{}, false, err
	}
	if now.Sub(r.CreatedAt) >= plans.RotationReplayWindow {
		_, err := tx.Exec(ctx, `DELETE FROM api_key_rotations WHERE key_id = $1 AND token_hash = $2`, keyID, tokenHash)
		return plans.KeyRotation{}, false, err
	}
	return plans.KeyRotation{KeyID: keyID, TokenHash: tokenHash, SealedValue: r.SealedValue,
		PreviousValueExpiresAt: r.Ends.UTC(), Replayed: true}, true, nil
}

// PreviousValueRetention is how long the previous value of a rotated key
// stays known after its overlap ended (refused with reason rotated) before
// PruneKeyRotations forgets it (then it is an unknown key).
const PreviousValueRetention = 24 * time.Hour

// PruneKeyRotations deletes the rotation answers older than the replay
// window and the previous values whose overlap ended more than
// PreviousValueRetention ago (recording a change naming those hashes, so
// their records become tombstones); it returns how many rows it deleted.
// Errors: KindUnavailable.
func (db *DB) PruneKeyRotations(ctx context.Context) (int64, error) {
	var n int64
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		tag, err := tx.Exec(ctx, `DELETE FROM api_key_rotations WHERE created_at < $1`, now.Add(-plans.RotationReplayWindow))
		if err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `DELETE FROM api_key_previous_values WHERE expires_at < $1 RETURNING key_hash`,
			now.Add(-PreviousValueRetention))
		hashes, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		n = tag.RowsAffected() + int64(len(hashes))
		if len(hashes) == 0 {
			return nil
		}
		return record(ctx, tx, now, &change{keys: hashes})
	})
	return n, err
}
