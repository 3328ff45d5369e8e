package engine

import (
	"context"
	"fmt"
	"time"

	"tollgate/limit"
	"tollgate/script"
)

// Settle settles one request decided with a quota but no usage count
// (limit.Request.Uncounted; a plan tagged tollgate:quota-counts=non-5xx,
// docs/usage.md) once its response is known: counted true counts it in
// today's usage (Redis time) as an admission would; false gives its quota
// unit back, unless the quota period that started at periodStart (the
// decision's Quota.Reset − Quota.Window) is over. Errors are wrapped.
func (e *Engine) Settle(ctx context.Context, keyID, planID string, periodStart time.Time, counted bool) error {
	usage := e.r.keys.Usage(keyID, planID)
	keys := []string{e.r.keys.Quota(keyID, planID), usage, e.r.changesOf(e.r.slotOf(usage))}
	a := script.SettleArgs{PeriodStartS: periodStart.Unix()}
	if counted {
		a.Count = 1
	}
	if err := runOnce(ctx, e.r.rdb, keys, []any{script.OpSettle, e.r.clockArg(), a.Append(nil)}).Err(); err != nil {
		return fmt.Errorf("engine: settle key %s: %w", keyID, err)
	}
	return nil
}

// KeyUsage reads the usage of keyID in planID now, in Redis time, charging
// nothing (the partner usage endpoint): the state of quota q in its
// current period (none when q is nil) and today's count. Errors are
// wrapped.
func (e *Engine) KeyUsage(ctx context.Context, keyID, planID string, q *limit.Quota) (limit.Usage, error) {
	a := script.QuotaArgs{Today: 1}
	var kq keyedQuota
	if q != nil {
		kq = e.res.keyedQuota(keyID, planID, q)
		a.Limit, a.Period, a.Offset = kq.Limit, kq.Period, kq.Offset
	}
	keys := []string{e.r.keys.Quota(keyID, planID), e.r.keys.Usage(keyID, planID)}
	var r script.QuotaReply
	for try := 1; ; try++ {
		spec := a.Append(nil)
		if kq.tabled() {
			spec = kq.Bounds.Append(spec)
		}
		reply, err := runOnce(ctx, e.r.rdb, keys, []any{script.OpQuota, e.r.clockArg(), spec}).Text()
		if err == nil {
			_, err = r.Decode(reply)
		}
		if err != nil {
			return limit.Usage{}, fmt.Errorf("engine: usage of key %s: %w", keyID, err)
		}
		if r.PeriodEndS != 0 || !kq.tabled() {
			break
		}
		if try == periodTries {
			return limit.Usage{}, fmt.Errorf("engine: usage of key %s: %w", keyID, errPeriodMoved)
		}
		kq.Bounds = script.TableOf(kq.Cal, time.UnixMicro(r.NowUS))
	}
	u := limit.Usage{Now: time.UnixMicro(r.NowUS).UTC(), Today: r.Today}
	if q != nil {
		start, end := time.Unix(r.PeriodStartS, 0).UTC(), time.Unix(r.PeriodEndS, 0).UTC()
		u.Quota = &limit.State{Limit: int64(q.Limit), Remaining: r.Remaining, Reset: end, Window: end.Sub(start)}
	}
	return u, nil
}
