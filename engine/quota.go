package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"tollgate/limit"
	"tollgate/script"
)

// Settle charges one admitted request once its response is known
// (limit.Settlement): a settled cost's difference from its reservation on
// the quota, the customer quota and the plan bucket, and its usage count
// when it was decided uncounted (a settled cost, a plan tagged
// tollgate:quota-counts=non-5xx, docs/usage.md). Quota units change only
// in the period that started at s.PeriodStart. The key's state goes in one
// run; a customer quota in another Redis Cluster slot in a second, in
// parallel. Errors are wrapped.
func (e *Engine) Settle(ctx context.Context, s limit.Settlement) error {
	var kr keyedRequest
	var q, cq keyedQuota
	var buckets [4]keyedBucket
	req := s.Req
	e.res.resolve(req, &kr, buckets[:0], &q, &cq)
	a := script.SettleArgs{PeriodStartS: s.PeriodStart.Unix(), Charge: s.Charge}
	usage := e.r.keys.Usage(req.KeyID, req.PlanID)
	home := e.r.slotOf(usage)
	keys := make([]string, 0, 5)
	add := func(k string) uint16 {
		keys = append(keys, k)
		return uint16(len(keys))
	}
	if kr.Quota != nil {
		a.Quota = add(kr.Quota.Key)
	}
	if i := kr.planIndex(); i >= 0 && s.Charge != 0 && s.Bucket {
		a.Bucket = add(kr.Buckets[i].Key)
	}
	var custErr chan error // the customer quota's run in its own slot
	if c := kr.Customer; c != nil && s.Charge != 0 {
		if e.r.slotOf(c.Key) == home {
			a.Customer = add(c.Key)
		} else {
			ca := script.SettleArgs{PeriodStartS: a.PeriodStartS, Customer: 1, Charge: s.Charge}
			custErr = make(chan error, 1)
			go func() {
				custErr <- runOnce(ctx, e.r.rdb, []string{c.Key}, []any{script.OpSettle, e.r.clockArg(), ca.Append(nil)}).Err()
			}()
		}
	}
	if s.Count || a.Quota > 0 {
		a.Usage = add(usage)
		a.Changes = add(e.r.changesOf(home))
	}
	if s.Count {
		a.Requests, a.Units = 1, s.Units
	}
	err := runOnce(ctx, e.r.rdb, keys, []any{script.OpSettle, e.r.clockArg(), a.Append(nil)}).Err()
	if custErr != nil {
		err = errors.Join(err, <-custErr)
	}
	if err != nil {
		return fmt.Errorf("engine: settle key %s: %w", req.KeyID, err)
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
