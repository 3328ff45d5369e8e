package usage

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/keyspace"
	"tollgate/plans"
	"tollgate/script"
)

// RestoreLedger is what Restore reads: the usage ledger
// (plans/postgres.DB).
type RestoreLedger interface {
	// QuotaUsages returns up to limit stored quota states after
	// (afterKeyID, afterPlanID) in (key, plan) order.
	QuotaUsages(ctx context.Context, afterKeyID, afterPlanID string, limit int) ([]plans.QuotaUsage, error)
	// UsageDays returns the ledger rows q selects, in (day, plan, key)
	// order.
	UsageDays(ctx context.Context, q plans.UsageQuery) ([]plans.UsageDay, error)
	// CustomerQuotaUsages returns each customer's use of every customer
	// quota in its plan's period that holds now.
	CustomerQuotaUsages(ctx context.Context, now time.Time) ([]plans.CustomerQuotaUsage, error)
}

// restorePage is the ledger rows one read of a restore takes.
const restorePage = 5000

// Restore writes the ledger's quota states, its customer quota uses of
// the current periods and its day counts of yesterday and today (Redis's
// clock) back into every slot of the limiter
// Redis that lost its data (its change set lacks the restore mark), then
// marks those slots; it returns how many it restored. Admin nodes call it
// every second, so that no key is admitted again on an emptied limiter
// before its quota count is back (docs/usage.md, "Restore after a loss").
// It writes only where Redis has no value, which is newer, so several
// admin nodes may restore at once. Errors are wrapped; the slots are then
// left unmarked for the next call.
func (l *Limiter) Restore(ctx context.Context, ledger RestoreLedger) (int, error) {
	lost, err := l.lostSlots(ctx)
	if err != nil || len(lost) == 0 {
		return 0, err
	}
	inLost := func(key string) bool {
		if !l.cluster {
			return true
		}
		_, ok := lost[keyspace.Slot(key)]
		return ok
	}
	now, err := l.Now(ctx)
	if err != nil {
		return 0, fmt.Errorf("usage: restore: %w", err)
	}
	if err := l.restoreQuotas(ctx, ledger, inLost, now); err != nil {
		return 0, fmt.Errorf("usage: restore quotas: %w", err)
	}
	if err := l.restoreCustomers(ctx, ledger, inLost, now); err != nil {
		return 0, fmt.Errorf("usage: restore customer quotas: %w", err)
	}
	if err := l.restoreDays(ctx, ledger, inLost, now); err != nil {
		return 0, fmt.Errorf("usage: restore usage days: %w", err)
	}
	pipe := l.rdb.Pipeline()
	for slot := range lost {
		pipe.ZAdd(ctx, l.keys.UsageChanges(slot), redis.Z{Score: math.Inf(1), Member: script.RestoreMark})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, fmt.Errorf("usage: restore: mark: %w", err)
	}
	return len(lost), nil
}

// lostSlots returns the slots whose change set lacks the restore mark
// (slot 0 standing for the whole server on one primary).
func (l *Limiter) lostSlots(ctx context.Context) (map[int]struct{}, error) {
	n := keyspace.Slots
	if !l.cluster {
		n = 1
	}
	marks := make([]*redis.FloatCmd, n)
	pipe := l.rdb.Pipeline()
	for slot := range marks {
		marks[slot] = pipe.ZScore(ctx, l.keys.UsageChanges(slot), script.RestoreMark)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("usage: restore: read marks: %w", err)
	}
	lost := map[int]struct{}{}
	for slot, m := range marks {
		if errors.Is(m.Err(), redis.Nil) {
			lost[slot] = struct{}{}
		} else if m.Err() != nil {
			return nil, fmt.Errorf("usage: restore: read marks: %w", m.Err())
		}
	}
	return lost, nil
}

// maxPeriod bounds a quota period (a MONTH, 31 days): a restored quota
// state expires this long after its period start, plus the margin
// the limiter script keeps (the next admission sets the exact TTL).
const maxPeriod = 31*24*time.Hour + time.Hour

// restoreQuotas writes the ledger's quota states of the keys inLost
// selects, where the limiter has none.
func (l *Limiter) restoreQuotas(ctx context.Context, ledger RestoreLedger, inLost func(key string) bool, now time.Time) error {
	afterKey, afterPlan := "", ""
	for {
		page, err := ledger.QuotaUsages(ctx, afterKey, afterPlan, restorePage)
		if err != nil {
			return err
		}
		pipe := l.rdb.Pipeline()
		for _, q := range page {
			key := l.keys.Quota(q.KeyID, q.PlanID)
			ttl := q.PeriodStart.Add(maxPeriod).Sub(now)
			if !inLost(key) || ttl <= 0 {
				continue
			}
			pipe.SetNX(ctx, key, encodeQuota(q.QuotaCount), ttl)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
		if len(page) < restorePage {
			return nil
		}
		afterKey, afterPlan = page[len(page)-1].KeyID, page[len(page)-1].PlanID
	}
}

// restoreCustomers writes the customer quota states (tollgate:
// customer-quota) of the current periods inLost selects, where the
// limiter has none: each customer's use is what its keys' ledger quota
// states of the period count together, so a customer that had used up its
// budget stays refused.
func (l *Limiter) restoreCustomers(ctx context.Context, ledger RestoreLedger, inLost func(key string) bool, now time.Time) error {
	uses, err := ledger.CustomerQuotaUsages(ctx, now)
	if err != nil {
		return err
	}
	for len(uses) > 0 {
		page := uses[:min(len(uses), restorePage)]
		uses = uses[len(page):]
		pipe := l.rdb.Pipeline()
		for _, u := range page {
			key := l.keys.CustomerQuota(u.CustomerID, u.PlanID)
			if u.CustomerID == "" {
				key = l.keys.KeyCustomerQuota(u.KeyID, u.PlanID)
			}
			ttl := u.PeriodStart.Add(maxPeriod).Sub(now)
			if !inLost(key) || ttl <= 0 {
				continue
			}
			pipe.SetNX(ctx, key, encodeQuota(plans.QuotaCount{PeriodStart: u.PeriodStart, Count: u.Used}), ttl)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

// restoreDays writes the ledger's counts of yesterday and today of the
// keys inLost selects into their usage hashes, where the limiter has none.
func (l *Limiter) restoreDays(ctx context.Context, ledger RestoreLedger, inLost func(key string) bool, now time.Time) error {
	q := plans.UsageQuery{From: plans.UTCDate(now).AddDate(0, 0, -1), To: plans.UTCDate(now), Limit: restorePage}
	for {
		page, err := ledger.UsageDays(ctx, q)
		if err != nil {
			return err
		}
		pipe := l.rdb.Pipeline()
		for _, d := range page {
			key := l.keys.Usage(d.KeyID, d.PlanID)
			if !inLost(key) {
				continue
			}
			day := d.Day.Format(plans.UsageDateLayout)
			pipe.HSetNX(ctx, key, day, d.Requests)
			if extra := d.Count - d.Requests; extra != 0 {
				pipe.HSetNX(ctx, key, day+script.UsageExtra, extra)
			}
			pipe.Expire(ctx, key, usageKeepDays*24*time.Hour)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
		if len(page) < restorePage {
			return nil
		}
		last := page[len(page)-1]
		q.After = &plans.UsageCursor{PlanID: last.PlanID, KeyID: last.KeyID, Day: last.Day}
	}
}

// encodeQuota is q as the limiter script stores a quota state
// (script.QuotaState), with period end 0: the TTL it was set for is none
// of the script's, so the next admission sets it.
func encodeQuota(q plans.QuotaCount) string {
	s := script.QuotaState{PeriodStartS: float64(q.PeriodStart.Unix()), Used: float64(q.Count), Seq: float64(q.Seq)}
	return string(s.Append(nil))
}
