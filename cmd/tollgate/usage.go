package main

import (
	"context"

	"tollgate/admin"
	"tollgate/gateway/limiter"
	"tollgate/plans"
	"tollgate/push"
)

// usageCounter adapts the limiter to admin.UsageCounter (GetUsage and
// UpdateUsage), so that the admin need not import gateway/limiter.
type usageCounter struct {
	*limiter.Limiter
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
