package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/plans"
)

// accountFeatures and apiKeyVersion are what AWS's GetAccount reports.
var accountFeatures = []string{"UsagePlans"}

const apiKeyVersion = "4"

func getAccount(ctx context.Context, tx pgx.Tx, forUpdate bool) (*plans.Account, error) {
	q := `SELECT rate_limit, burst_limit FROM account`
	if forUpdate {
		q += ` FOR UPDATE`
	}
	a := &plans.Account{Features: append([]string(nil), accountFeatures...), ApiKeyVersion: apiKeyVersion}
	err := tx.QueryRow(ctx, q).Scan(&a.ThrottleSettings.RateLimit, &a.ThrottleSettings.BurstLimit)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// GetAccount returns the account throttle (seeded by Open) with features
// ["UsagePlans"]. Errors: KindUnavailable.
func (db *DB) GetAccount(ctx context.Context) (*plans.Account, error) {
	var a *plans.Account
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		var err error
		a, err = getAccount(ctx, tx, false)
		return err
	})
	return a, err
}

// UpdateAccount lets fn modify the account throttle, validates it
// ("throttleSettings.rateLimit", "throttleSettings.burstLimit"), stores
// it and records a snapshot change. Errors: KindInvalid, or fn's error.
func (db *DB) UpdateAccount(ctx context.Context, fn func(*plans.Account) error) (*plans.Account, error) {
	var a *plans.Account
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		var err error
		if a, err = getAccount(ctx, tx, true); err != nil {
			return err
		}
		if err := fn(a); err != nil {
			return err
		}
		a.Features, a.ApiKeyVersion = append([]string(nil), accountFeatures...), apiKeyVersion
		if err := a.ThrottleSettings.Validate("throttleSettings"); err != nil {
			return err
		}
		t := a.ThrottleSettings
		if _, err := tx.Exec(ctx, `UPDATE account SET rate_limit = $1, burst_limit = $2, updated_at = $3`,
			t.RateLimit, t.BurstLimit, now); err != nil {
			return err
		}
		return record(ctx, tx, now, &change{snapshot: true})
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}
