package engine

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"tollgate/limit"
	"tollgate/plans"
)

// dayLayout is the format of usage days (UTC).
const dayLayout = "2006-01-02"

// Usage returns the admitted requests of one key in one plan per UTC day,
// for every day from from's to to's UTC date inclusive, keyed "YYYY-MM-DD"
// (0 for a day without requests, and for days older than the 100 days the
// limiter keeps). to before from gives an empty map. Callers bound the range
// (GetUsage allows 90 days). Errors are wrapped.
func (e *Engine) Usage(ctx context.Context, keyID, planID string, from, to time.Time) (map[string]int64, error) {
	days := usageDays(from, to)
	out := make(map[string]int64, len(days))
	if len(days) == 0 {
		return out, nil
	}
	vals, err := e.rdb.HMGet(ctx, e.keys.Usage(keyID, planID), days...).Result()
	if err != nil {
		return nil, fmt.Errorf("engine: usage of key %s: %w", keyID, err)
	}
	for i, d := range days {
		out[d] = 0
		if s, ok := vals[i].(string); ok {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("engine: usage of key %s on %s: %w", keyID, d, err)
			}
			out[d] = n
		}
	}
	return out, nil
}

// usageDays lists the UTC dates from from to to inclusive.
func usageDays(from, to time.Time) []string {
	f := utcDay(from)
	t := utcDay(to)
	var days []string
	for d := f; !d.After(t); d = d.AddDate(0, 0, 1) {
		days = append(days, d.Format(dayLayout))
	}
	return days
}

func utcDay(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// SetRemaining sets the remaining requests of one key's quota in the
// current period (Redis time) to remaining clamped to 0..q.Limit
// (UpdateUsage "replace /remaining"). Later decisions count from there; a
// later period starts afresh. Errors are wrapped.
func (e *Engine) SetRemaining(ctx context.Context, keyID, planID string, q plans.Quota, remaining int64) error {
	remaining = max(0, min(remaining, int64(q.Limit)))
	_, err := e.runQuota(ctx, keyID, planID, q, strconv.FormatInt(remaining, 10))
	return err
}

// QuotaState returns the quota state of one key in the current period
// (Redis time) without charging anything: Limit q.Limit, Remaining
// max(0, limit − used), Reset the period end, Window the period length.
// Errors are wrapped.
func (e *Engine) QuotaState(ctx context.Context, keyID, planID string, q plans.Quota) (limit.State, error) {
	return e.runQuota(ctx, keyID, planID, q, "")
}

func (e *Engine) runQuota(ctx context.Context, keyID, planID string, q plans.Quota, set string) (limit.State, error) {
	keys := []string{e.keys.Quota(keyID, planID)}
	args := []any{opQuota, e.clockArg(), strconv.Itoa(int(q.Limit)), q.Period, strconv.Itoa(int(q.Offset)), set}
	v, err := e.runOnce(ctx, e.rdb, keys, args).Slice()
	if err != nil {
		return limit.State{}, fmt.Errorf("engine: quota of key %s: %w", keyID, err)
	}
	if len(v) != 4 {
		return limit.State{}, fmt.Errorf("engine: quota of key %s: reply has %d values, want 4", keyID, len(v))
	}
	var r [4]int64
	for i := range v {
		n, ok := v[i].(int64)
		if !ok {
			return limit.State{}, fmt.Errorf("engine: quota of key %s: reply value %d is %T, want int64", keyID, i, v[i])
		}
		r[i] = n
	}
	start, end := time.Unix(r[1], 0).UTC(), time.Unix(r[2], 0).UTC()
	return limit.State{Limit: int64(q.Limit), Remaining: r[0], Reset: end, Window: end.Sub(start)}, nil
}

// Settle settles one request decided with a quota but no usage count
// (limit.Request.Uncounted; a plan tagged tollgate:quota-counts=non-5xx,
// docs/usage.md) once its response is known: counted true counts it in
// today's usage (Redis time) as an admission would; false gives its quota
// unit back, unless the quota period that started at periodStart (the
// decision's Quota.Reset − Quota.Window) is over. Errors are wrapped.
func (e *Engine) Settle(ctx context.Context, keyID, planID string, periodStart time.Time, counted bool) error {
	usage := e.keys.Usage(keyID, planID)
	keys := []string{e.keys.Quota(keyID, planID), usage, e.changesOf(usage)}
	flag := "0"
	if counted {
		flag = "1"
	}
	args := []any{opSettle, e.clockArg(), strconv.FormatInt(periodStart.Unix(), 10), flag, "3"}
	if err := e.runOnce(ctx, e.rdb, keys, args).Err(); err != nil {
		return fmt.Errorf("engine: settle key %s: %w", keyID, err)
	}
	return nil
}
