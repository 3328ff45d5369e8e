package main

import (
	"context"

	"tollgate/admin"
	"tollgate/engine"
	"tollgate/plans"
	"tollgate/push"
)

// usageCounter adapts the engine to admin.UsageCounter (GetUsage and
// UpdateUsage), so that the admin need not import the engine.
type usageCounter struct {
	*engine.Engine
}

var (
	_ admin.UsageCounter   = usageCounter{}
	_ admin.UsageAnnouncer = (*push.Publisher)(nil)
)

// QuotaRemaining returns the requests left to keyID under q in the current
// period, charging nothing.
func (u usageCounter) QuotaRemaining(ctx context.Context, keyID, planID string, q plans.Quota) (int64, error) {
	st, err := u.QuotaState(ctx, keyID, planID, q)
	if err != nil {
		return 0, err
	}
	return st.Remaining, nil
}
