package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"tollgate/keyspace"
	"tollgate/limit"
	"tollgate/plans"
)

// memLedger is a RestoreLedger in memory (one page: tests hold few rows).
type memLedger struct {
	quotas []plans.QuotaUsage // in (key, plan) order
	days   []plans.UsageDay
}

func (l *memLedger) QuotaUsages(_ context.Context, afterKeyID, afterPlanID string, _ int) ([]plans.QuotaUsage, error) {
	var out []plans.QuotaUsage
	for _, q := range l.quotas {
		if q.KeyID > afterKeyID || (q.KeyID == afterKeyID && q.PlanID > afterPlanID) {
			out = append(out, q)
		}
	}
	return out, nil
}

func (l *memLedger) UsageDays(_ context.Context, q plans.UsageQuery) ([]plans.UsageDay, error) {
	var out []plans.UsageDay
	for _, d := range l.days {
		if !d.Day.Before(plans.UTCDate(q.From)) && !d.Day.After(plans.UTCDate(q.To)) {
			out = append(out, d)
		}
	}
	return out, nil
}

// quotaRequest is a keyed request of keyID in plan p1 with a DAY quota of
// 5 and a stage bucket.
func quotaRequest(keyID string) *limit.Request {
	return &limit.Request{KeyID: keyID, PlanID: "p1", API: "a1", Stage: "prod",
		Buckets: []limit.Bucket{{Level: limit.LevelStage, Method: "GET", Path: "/x", RateLimit: 1000, BurstLimit: 1000}},
		Quota:   &limit.Quota{Limit: 5, Period: "DAY"}}
}

// A limiter that awaits the restore refuses keyed requests (charging
// nothing) until the admin wrote the ledger back: then a key that had used
// up its quota stays refused, another counts on from the ledger's count
// and sequence number, and its day count goes on from the ledger's. When
// a slot loses its data again, only that slot's keys wait again.
func TestRestoreWritesTheLedgerBackBeforeKeysAreAdmittedAgain(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := mustEngineOn(t, b, Options{AwaitRestore: true})
		ctx := t.Context()
		today := utcDay(time.Now())
		if _, err := e.Decide(ctx, quotaRequest("used")); !errors.Is(err, limit.ErrNotRestored) {
			t.Fatalf("before the restore: got %v, want ErrNotRestored", err)
		}
		if d, err := e.Decide(ctx, &limit.Request{API: "a1", Stage: "prod"}); err != nil || !d.Allowed {
			t.Fatalf("a request without a key before the restore: %+v, %v, want admitted", d, err)
		}
		ledger := &memLedger{
			quotas: []plans.QuotaUsage{
				{KeyID: "half", PlanID: "p1", QuotaCount: plans.QuotaCount{PeriodStart: today, Count: 2, Seq: 7}},
				{KeyID: "used", PlanID: "p1", QuotaCount: plans.QuotaCount{PeriodStart: today, Count: 5, Seq: 9}},
			},
			days: []plans.UsageDay{
				{KeyID: "half", PlanID: "p1", Day: today, Count: 2},
				{KeyID: "used", PlanID: "p1", Day: today.AddDate(0, 0, -1), Count: 40},
				{KeyID: "used", PlanID: "p1", Day: today, Count: 5},
			},
		}
		if n, err := e.Restore(ctx, ledger); err != nil || n == 0 {
			t.Fatalf("Restore: %d slots, %v", n, err)
		}
		if d, err := e.Decide(ctx, quotaRequest("used")); err != nil || d.Allowed || d.Refused != limit.LevelQuota {
			t.Fatalf("the key that used its quota, after the restore: %+v, %v, want refused by the quota", d, err)
		}
		d, err := e.Decide(ctx, quotaRequest("half"))
		if err != nil || !d.Allowed || d.Quota.Remaining != 2 {
			t.Fatalf("the key with 3 left, after the restore: %+v, %v, want admitted with 2 left", d, err)
		}
		u, err := e.Usage(ctx, "used", "p1", today.AddDate(0, 0, -1), today)
		if err != nil || u[today.AddDate(0, 0, -1).Format(dayLayout)] != 40 || u[today.Format(dayLayout)] != 5 {
			t.Fatalf("usage of the used key: %v, %v", u, err)
		}
		got, _ := drainAll(t, e.UsageSource(), 10)
		if o := got["half"]; describe(o) != "["+today.Format(dayLayout)+"=3] quota=3 from "+today.Format(dayLayout) || o.Quota.Seq != 8 {
			t.Fatalf("the flush worker sees %s seq %d, want 3 and 3 with seq 8", describe(o), o.Quota.Seq)
		}
		if n, err := e.Restore(ctx, ledger); err != nil || n != 0 {
			t.Fatalf("Restore of a restored limiter: %d slots, %v, want 0", n, err)
		}

		// the slot of "used" loses its data (its change set with it)
		slot := keyspace.Slot(e.keys.Quota("used", "p1"))
		set := e.changes0 // one primary: one set for the server
		if e.cluster != nil {
			set = e.keys.UsageChanges(slot)
		}
		if err := e.rdb.Del(ctx, set, e.keys.Quota("used", "p1")).Err(); err != nil {
			t.Fatal(err)
		}
		e.ForgetAll() // as the reload a lost limiter causes (push.Reader's OnReload)
		if _, err := e.Decide(ctx, quotaRequest("used")); !errors.Is(err, limit.ErrNotRestored) {
			t.Fatalf("after its slot lost its data: got %v, want ErrNotRestored", err)
		}
		if e.cluster != nil {
			other := "other"
			for i := 0; keyspace.Slot(e.keys.Quota(other, "p1")) == slot; i++ {
				other = "other" + string(rune('a'+i))
			}
			if d, err := e.Decide(ctx, quotaRequest(other)); err != nil || !d.Allowed {
				t.Fatalf("a key of another slot: %+v, %v, want admitted", d, err)
			}
		}
		if n, err := e.Restore(ctx, ledger); err != nil || n != 1 {
			t.Fatalf("Restore of one lost slot: %d slots, %v, want 1", n, err)
		}
		if d, err := e.Decide(ctx, quotaRequest("used")); err != nil || d.Allowed || d.Refused != limit.LevelQuota {
			t.Fatalf("the key that used its quota, restored again: %+v, %v, want refused by the quota", d, err)
		}
	})
}

// A request decided with its quota but no usage count (a plan counting
// non-5xx answers) waits for the restore too, and its settle either gives
// its quota unit back or counts it in usage.
func TestUncountedQuotaRequestAwaitsTheRestoreAndSettles(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := mustEngineOn(t, b, Options{AwaitRestore: true})
		ctx := t.Context()
		req := quotaRequest("k")
		req.Uncounted = true
		if _, err := e.Decide(ctx, req); !errors.Is(err, limit.ErrNotRestored) {
			t.Fatalf("before the restore: got %v, want ErrNotRestored", err)
		}
		if _, err := e.Restore(ctx, &memLedger{}); err != nil {
			t.Fatal(err)
		}
		today := utcDay(time.Now())
		for i, counted := range []bool{true, true, false} {
			d, err := e.Decide(ctx, req)
			if err != nil || !d.Allowed {
				t.Fatalf("decision %d: %+v, %v", i+1, d, err)
			}
			if err := e.Settle(ctx, "k", "p1", d.Quota.Reset.Add(-d.Quota.Window), counted); err != nil {
				t.Fatal(err)
			}
		}
		q, err := e.QuotaState(ctx, "k", "p1", plans.Quota{Limit: 5, Period: "DAY"})
		if err != nil || q.Remaining != 3 {
			t.Errorf("quota: %+v, %v, want 3 left (one given back)", q, err)
		}
		u, err := e.Usage(ctx, "k", "p1", today, today)
		if err != nil || u[today.Format(dayLayout)] != 2 {
			t.Errorf("usage: %v, %v, want 2", u, err)
		}
		got, _ := drainAll(t, e.UsageSource(), 10)
		if o := got["k"]; describe(o) != "["+today.Format(dayLayout)+"=2] quota=2 from "+today.Format(dayLayout) {
			t.Errorf("the flush worker sees %s, want 2 and 2", describe(o))
		}
	})
}
