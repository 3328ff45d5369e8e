package engine

import (
	"context"
	"fmt"
	"time"

	"tollgate/limit"
	"tollgate/script"
)

// Settle charges one admitted request once its response is known
// (limit.Settlement): a settled cost's difference from its reservation on
// the quota, the customer quota and the plan bucket, and its usage count
// when it was decided uncounted (a settled cost, a plan tagged
// tollgate:quota-counts=non-5xx, docs/usage.md), in the quota period and
// on the day of its decision. It is one try of Charge: a settle that fails
// is the caller's to try again, as the charge Charge returns
// (engine/failopen does, exactly once). Errors are wrapped.
func (e *Engine) Settle(ctx context.Context, s limit.Settlement) error {
	if _, err := e.Charge(ctx, []limit.Charge{s.AsCharge()}); err != nil {
		return fmt.Errorf("engine: settle key %s: %w", s.Req.KeyID, err)
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
	u := limit.Usage{Now: time.UnixMicro(r.NowUS).UTC(), Today: r.Today, TodayUnits: r.TodayUnits}
	if q != nil {
		start, end := time.Unix(r.PeriodStartS, 0).UTC(), time.Unix(r.PeriodEndS, 0).UTC()
		u.Quota = &limit.State{Limit: int64(q.Limit), Remaining: r.Remaining, Reset: end, Window: end.Sub(start)}
	}
	return u, nil
}
