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
}

// restorePage is the ledger rows one read of a restore takes.
const restorePage = 5000

// Restore writes the ledger's quota states and recent day counts back into
// every slot of the limiter Redis that lost its data, then marks those
// slots restored; it returns how many slots it restored (0 when none had
// lost anything: one ZSCORE on one primary, 16384 in one pipeline on
// Redis Cluster). Admin nodes call it every second (docs/usage.md,
// "Restore after a loss"); gateway engines with Options.AwaitRestore
// refuse keyed requests of a slot until it is marked. Yesterday and today
// are Redis's (Now), never the admin node's.
//
// A slot has lost its data when its usage change set lacks the restore
// mark: a fresh limiter too (then the ledger is written back, which is
// harmless). For each (key, plan) of a lost slot it writes the ledger's
// quota state (its period start, count and change sequence number) and
// the ledger's counts of yesterday and today (UTC) into the usage hash,
// each only where the limiter has none (SET NX, HSETNX): while unmarked
// the slot counts nothing, so a value there was written since the loss
// (UpdateUsage) and is newer. The writes are idempotent, so several admin
// nodes may restore at once, and one that dies midway leaves the slot
// unmarked for the next. What the ledger did not have yet, the usage of
// the last unflushed interval, is forgotten. Errors are wrapped; the
// slots are then left unmarked.
func (l *Limiter) Restore(ctx context.Context, ledger RestoreLedger) (int, error) {
	lost, err := l.lostSlots(ctx)
	if err != nil || len(lost) == 0 {
		return 0, err
	}
	inLost := func(keyID, planID string) bool {
		if !l.cluster {
			return true
		}
		_, ok := lost[keyspace.Slot(l.keys.Quota(keyID, planID))]
		return ok
	}
	now, err := l.Now(ctx)
	if err != nil {
		return 0, fmt.Errorf("usage: restore: %w", err)
	}
	if err := l.restoreQuotas(ctx, ledger, inLost, now); err != nil {
		return 0, fmt.Errorf("usage: restore quotas: %w", err)
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
// limits.lua keeps (the next admission sets the exact TTL).
const maxPeriod = 31*24*time.Hour + time.Hour

// restoreQuotas writes the ledger's quota states of the keys inLost
// selects, where the limiter has none.
func (l *Limiter) restoreQuotas(ctx context.Context, ledger RestoreLedger, inLost func(keyID, planID string) bool, now time.Time) error {
	afterKey, afterPlan := "", ""
	for {
		page, err := ledger.QuotaUsages(ctx, afterKey, afterPlan, restorePage)
		if err != nil {
			return err
		}
		pipe := l.rdb.Pipeline()
		for _, q := range page {
			ttl := q.PeriodStart.Add(maxPeriod).Sub(now)
			if !inLost(q.KeyID, q.PlanID) || ttl <= 0 {
				continue
			}
			pipe.SetNX(ctx, l.keys.Quota(q.KeyID, q.PlanID), encodeQuota(q.QuotaCount), ttl)
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

// restoreDays writes the ledger's counts of yesterday and today of the
// keys inLost selects into their usage hashes, where the limiter has none.
func (l *Limiter) restoreDays(ctx context.Context, ledger RestoreLedger, inLost func(keyID, planID string) bool, now time.Time) error {
	q := plans.UsageQuery{From: plans.UTCDate(now).AddDate(0, 0, -1), To: plans.UTCDate(now), Limit: restorePage}
	for {
		page, err := ledger.UsageDays(ctx, q)
		if err != nil {
			return err
		}
		pipe := l.rdb.Pipeline()
		for _, d := range page {
			if !inLost(d.KeyID, d.PlanID) {
				continue
			}
			key := l.keys.Usage(d.KeyID, d.PlanID)
			pipe.HSetNX(ctx, key, d.Day.Format(plans.UsageDateLayout), d.Count)
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
