package usage

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"tollgate/engine"
	"tollgate/internal/clocktest"
	"tollgate/internal/redistest"
	"tollgate/keyspace"
	"tollgate/limit"
	"tollgate/plans"
)

// pair is a gateway node's engine and the admin's Limiter on one Redis and
// key prefix, on one test clock (zero: Redis TIME).
type pair struct {
	e     *engine.Engine
	l     *Limiter
	clock *clocktest.Clock
}

// mustPair returns a pair on b; await makes the engine await the restore.
func mustPair(t *testing.T, b redistest.Backend, clock *clocktest.Clock, await bool) *pair {
	t.Helper()
	rdb, prefix := b.Open(t)
	if clock == nil {
		clock = &clocktest.Clock{}
	}
	e := engine.New(rdb, engine.Options{Prefix: prefix, Timeout: 5 * time.Second, Clock: clock.Now, AwaitRestore: await})
	t.Cleanup(func() { _ = e.Close() })
	return &pair{e: e, l: New(rdb, Options{Prefix: prefix, Clock: clock.Now}), clock: clock}
}

// at parses an RFC 3339 time or fails the test.
var at = clocktest.Parse

const dayLayout = plans.UsageDateLayout

// admitN decides n requests of keyID in plan p1 (a stage bucket, a quota
// of quota a DAY when quota > 0) and fails the test unless all are
// admitted.
func admitN(t *testing.T, e *engine.Engine, keyID string, quota int32, n int) {
	t.Helper()
	for i := range n {
		req := &limit.Request{KeyID: keyID, PlanID: "p1", API: "a1", Stage: "prod",
			Buckets: []limit.Bucket{{Level: limit.LevelStage, Method: "GET", Path: "/x", RateLimit: 1000, BurstLimit: 1000}}}
		if quota > 0 {
			req.Quota = &limit.Quota{Limit: quota, Period: plans.PeriodDay}
		}
		d, err := e.Decide(t.Context(), req)
		if err != nil || !d.Allowed {
			t.Fatalf("request %d of %s: %+v, %v", i+1, keyID, d, err)
		}
	}
}

// drainAll drains src until a short page and returns the observations by
// key ("key day count quota seq" lines, sorted) and the tokens.
func drainAll(t *testing.T, src *Source, limit int) (map[string]plans.UsageObservation, []string) {
	t.Helper()
	got := map[string]plans.UsageObservation{}
	var tokens []string
	for range 100 {
		obs, tok, err := src.Drain(t.Context(), limit)
		if err != nil {
			t.Fatalf("Drain: %v", err)
		}
		if len(obs) > limit {
			t.Fatalf("Drain(%d) returned %d observations", limit, len(obs))
		}
		if tok != "" {
			tokens = append(tokens, tok)
		}
		for _, o := range obs {
			if _, dup := got[o.KeyID]; dup {
				t.Fatalf("key %s handed out twice while held", o.KeyID)
			}
			got[o.KeyID] = o
		}
		if len(obs) < limit {
			return got, tokens
		}
	}
	t.Fatal("Drain never returned a short page")
	return nil, nil
}

// describe is "day=count,... quota=count" of o.
func describe(o plans.UsageObservation) string {
	var days []string
	for _, d := range o.Days {
		days = append(days, fmt.Sprintf("%s=%d", d.Day.Format(dayLayout), d.Count))
	}
	sort.Strings(days)
	s := fmt.Sprint(days)
	if o.Quota != nil {
		s += fmt.Sprintf(" quota=%d from %s", o.Quota.Count, o.Quota.PeriodStart.Format(dayLayout))
	}
	return s
}

// The limiter hands every key it counted to the flush worker exactly once
// while held, with absolute day counts and quota state, in pages of at most
// the limit (across slots on Redis Cluster); after Ack only keys counted
// again come back, with their new counts.
func TestUsageSourceHandsOutWhatTheLimiterCounted(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		p := mustPair(t, b, clocktest.New(at(t, "2026-06-15T12:00:00Z")), false)
		e, src := p.e, p.l.Source()
		want := map[string]string{}
		for i := range 25 {
			key := fmt.Sprintf("key%02d", i)
			admitN(t, e, key, 100, i%3+1)
			want[key] = fmt.Sprintf("[2026-06-15=%d] quota=%d from 2026-06-15", i%3+1, i%3+1)
		}
		got, tokens := drainAll(t, src, 7)
		if len(got) != len(want) {
			t.Fatalf("drained %d keys, want %d", len(got), len(want))
		}
		var lastSeq int64
		for key, o := range got {
			if o.PlanID != "p1" || describe(o) != want[key] {
				t.Errorf("%s: got %s %s, want p1 %s", key, o.PlanID, describe(o), want[key])
			}
			if key == "key04" {
				lastSeq = o.Quota.Seq
			}
		}
		for _, tok := range tokens {
			if err := src.Ack(t.Context(), tok); err != nil {
				t.Fatalf("Ack: %v", err)
			}
		}
		if again, _ := drainAll(t, src, 7); len(again) != 0 {
			t.Fatalf("after Ack, drained %d keys again, want 0", len(again))
		}
		admitN(t, e, "key04", 100, 3)
		again, _ := drainAll(t, src, 7)
		if o, ok := again["key04"]; len(again) != 1 || !ok || describe(o) != "[2026-06-15=5] quota=5 from 2026-06-15" || o.Quota.Seq <= lastSeq {
			t.Fatalf("after counting key04 again: got %v (seq before %d)", again, lastSeq)
		}
	})
}

// A key counted again while held is handed out again (the Ack of the
// first hold leaves it), and a hold that is never acknowledged ends: what
// it held is handed out again, to any worker.
func TestUsageSourceHandsOutAgainWhatChangedOrWasNotAcknowledged(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		p := mustPair(t, b, clocktest.New(at(t, "2026-06-15T12:00:00Z")), false)
		p.l.holdFor = 300 * time.Millisecond
		e, src := p.e, p.l.Source()
		admitN(t, e, "kA", 0, 1)
		admitN(t, e, "kB", 0, 2)
		first, tokens := drainAll(t, src, 10)
		if len(first) != 2 || first["kA"].Quota != nil {
			t.Fatalf("first drain: %v", first)
		}
		admitN(t, e, "kA", 0, 1) // counted again while held
		second, _ := drainAll(t, src, 10)
		if len(second) != 1 || len(second["kA"].Days) != 1 || second["kA"].Days[0].Count != 2 {
			t.Fatalf("second drain: got %v, want kA with 2", second)
		}
		for _, tok := range tokens {
			if err := src.Ack(t.Context(), tok); err != nil {
				t.Fatal(err)
			}
		}
		// kB was acknowledged; kA's second hold was not: it ends
		p.clock.Add(400 * time.Millisecond)
		other := p.l.Source() // another admin node
		third, _ := drainAll(t, other, 10)
		if len(third) != 1 || third["kA"].Days[0].Count != 2 {
			t.Fatalf("after the hold ended: got %v, want kA with 2", third)
		}
	})
}

// A drain whose read fails holds nothing: the next drain hands the pairs
// out again.
func TestUsageSourceFailedDrainHoldsNothing(t *testing.T) {
	t.Parallel()
	p := mustPair(t, redistest.Backends[0], nil, false)
	e, src := p.e, p.l.Source()
	admitN(t, e, "kA", 5, 2)
	takes, err := src.hold(t.Context(), []setLimit{{set: p.l.keys.UsageChanges(0), holds: p.l.keys.UsageHolds(0), limit: 10}})
	if err != nil || len(takes) != 1 || len(takes[0].members) != 1 {
		t.Fatalf("hold: %v, %v", takes, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := src.observe(ctx, takes); err == nil {
		t.Fatal("observe with a cancelled context succeeded")
	}
	if err := src.putBack(ctx, takes); err != nil {
		t.Fatalf("putBack: %v", err)
	}
	got, _ := drainAll(t, src, 10)
	if len(got) != 1 || got["kA"].Quota == nil || got["kA"].Quota.Count != 2 {
		t.Fatalf("after the failed drain: got %v, want kA", got)
	}
}

// memLedger is a RestoreLedger in memory (one page: tests hold few rows).
// mustToday returns the UTC day of the limiter Redis's clock.
func mustToday(t *testing.T, l *Limiter) time.Time {
	t.Helper()
	now, err := l.Now(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return plans.UTCDate(now)
}

type memLedger struct {
	quotas    []plans.QuotaUsage // in (key, plan) order
	days      []plans.UsageDay
	customers []plans.CustomerQuotaUsage
}

func (l *memLedger) CustomerQuotaUsages(context.Context, time.Time) ([]plans.CustomerQuotaUsage, error) {
	return l.customers, nil
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
		Quota:   &limit.Quota{Limit: 5, Period: plans.PeriodDay}}
}

// A limiter that awaits the restore refuses keyed requests (charging
// nothing) until the admin wrote the ledger back: then a key that had used
// up its quota stays refused, another counts on from the ledger's count
// and sequence number, and its day count goes on from the ledger's. When
// a slot loses its data again, only that slot's keys wait again.
func TestRestoreWritesTheLedgerBackBeforeKeysAreAdmittedAgain(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		p := mustPair(t, b, nil, true)
		e, l := p.e, p.l
		ctx := t.Context()
		today := mustToday(t, l)
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
		if n, err := l.Restore(ctx, ledger); err != nil || n == 0 {
			t.Fatalf("Restore: %d slots, %v", n, err)
		}
		if d, err := e.Decide(ctx, quotaRequest("used")); err != nil || d.Allowed || d.Refused != limit.LevelQuota {
			t.Fatalf("the key that used its quota, after the restore: %+v, %v, want refused by the quota", d, err)
		}
		d, err := e.Decide(ctx, quotaRequest("half"))
		if err != nil || !d.Allowed || d.Quota.Remaining != 2 {
			t.Fatalf("the key with 3 left, after the restore: %+v, %v, want admitted with 2 left", d, err)
		}
		u, err := l.Usage(ctx, "used", "p1", today.AddDate(0, 0, -1), today)
		if err != nil || u[today.AddDate(0, 0, -1).Format(dayLayout)].Count != 40 || u[today.Format(dayLayout)].Count != 5 {
			t.Fatalf("usage of the used key: %v, %v", u, err)
		}
		got, _ := drainAll(t, l.Source(), 10)
		if o := got["half"]; describe(o) != "["+today.Format(dayLayout)+"=3] quota=3 from "+today.Format(dayLayout) || o.Quota.Seq != 8 {
			t.Fatalf("the flush worker sees %s seq %d, want 3 and 3 with seq 8", describe(o), o.Quota.Seq)
		}
		if n, err := l.Restore(ctx, ledger); err != nil || n != 0 {
			t.Fatalf("Restore of a restored limiter: %d slots, %v, want 0", n, err)
		}

		// the slot of "used" loses its data (its change set with it)
		slot := keyspace.Slot(l.keys.Quota("used", "p1"))
		set := l.keys.UsageChanges(0) // one primary: one set for the server
		if l.cluster {
			set = l.keys.UsageChanges(slot)
		}
		if err := l.rdb.Del(ctx, set, l.keys.Quota("used", "p1")).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Decide(ctx, quotaRequest("used")); !errors.Is(err, limit.ErrNotRestored) {
			t.Fatalf("after its slot lost its data: got %v, want ErrNotRestored", err)
		}
		if l.cluster {
			other := "other"
			for i := 0; keyspace.Slot(l.keys.Quota(other, "p1")) == slot; i++ {
				other = "other" + string(rune('a'+i))
			}
			if d, err := e.Decide(ctx, quotaRequest(other)); err != nil || !d.Allowed {
				t.Fatalf("a key of another slot: %+v, %v, want admitted", d, err)
			}
		}
		if n, err := l.Restore(ctx, ledger); err != nil || n != 1 {
			t.Fatalf("Restore of one lost slot: %d slots, %v, want 1", n, err)
		}
		if d, err := e.Decide(ctx, quotaRequest("used")); err != nil || d.Allowed || d.Refused != limit.LevelQuota {
			t.Fatalf("the key that used its quota, restored again: %+v, %v, want refused by the quota", d, err)
		}
	})
}

// customerRequest is a keyed request of keyID in plan p1 with a DAY quota
// of 10 and a customer quota of 5 shared with the keys of customerID
// (none: the key is its own customer).
func customerRequest(keyID, customerID string) *limit.Request {
	r := quotaRequest(keyID)
	r.Quota.Limit, r.CustomerID, r.CustomerQuota = 10, customerID, &limit.Quota{Limit: 5, Period: plans.PeriodDay}
	return r
}

// The restore writes each customer quota's state of the current period
// back too, before the customer's keys are admitted again: a customer
// (and a key without a customer, its own) that had used up its budget
// stays refused, with either key. When the customer's state loses its
// data again (on a cluster its own slot), its keys wait for the restore
// again.
func TestRestoreWritesCustomerQuotasBackBeforeTheirKeysAreAdmitted(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		p := mustPair(t, b, nil, true)
		e, l := p.e, p.l
		ctx := t.Context()
		today := mustToday(t, l)
		ledger := &memLedger{
			quotas: []plans.QuotaUsage{
				{KeyID: "a1", PlanID: "p1", QuotaCount: plans.QuotaCount{PeriodStart: today, Count: 2, Seq: 3}},
				{KeyID: "a2", PlanID: "p1", QuotaCount: plans.QuotaCount{PeriodStart: today, Count: 3, Seq: 4}},
				{KeyID: "solo", PlanID: "p1", QuotaCount: plans.QuotaCount{PeriodStart: today, Count: 5, Seq: 6}},
			},
			customers: []plans.CustomerQuotaUsage{
				{PlanID: "p1", CustomerID: "acme", PeriodStart: today, Used: 5},
				{PlanID: "p1", KeyID: "solo", PeriodStart: today, Used: 5},
				{PlanID: "p1", CustomerID: "beta", PeriodStart: today, Used: 4},
			},
		}
		if n, err := l.Restore(ctx, ledger); err != nil || n == 0 {
			t.Fatalf("Restore: %d slots, %v", n, err)
		}
		for _, r := range []*limit.Request{customerRequest("a1", "acme"), customerRequest("a2", "acme"), customerRequest("solo", "")} {
			if d, err := e.Decide(ctx, r); err != nil || d.Allowed || d.Refused != limit.LevelCustomer {
				t.Fatalf("key %s of a customer that used its budget, after the restore: %+v, %v, want refused by the customer quota", r.KeyID, d, err)
			}
		}
		d, err := e.Decide(ctx, customerRequest("b1", "beta"))
		if err != nil || !d.Allowed || d.Customer == nil || d.Customer.Remaining != 0 {
			t.Fatalf("a key of a customer with 1 left, after the restore: %+v, %v, want admitted with 0 left", d, err)
		}

		// the customer state of acme loses its data (its slot's change set with it)
		cq := l.keys.CustomerQuota("acme", "p1")
		set := l.keys.UsageChanges(0)
		if l.cluster {
			set = l.keys.UsageChanges(keyspace.Slot(cq))
		}
		if err := l.rdb.Del(ctx, set, cq).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Decide(ctx, customerRequest("a1", "acme")); !errors.Is(err, limit.ErrNotRestored) {
			t.Fatalf("after the customer's state lost its data: got %v, want ErrNotRestored", err)
		}
		if n, err := l.Restore(ctx, ledger); err != nil || n != 1 {
			t.Fatalf("Restore of one lost slot: %d slots, %v, want 1", n, err)
		}
		if d, err := e.Decide(ctx, customerRequest("a2", "acme")); err != nil || d.Allowed || d.Refused != limit.LevelCustomer {
			t.Fatalf("the customer restored again: %+v, %v, want refused by the customer quota", d, err)
		}
	})
}

// A request decided with its quota but no usage count (a plan counting
// non-5xx answers) waits for the restore too, and its settle either gives
// its quota unit back or counts it in usage.
func TestUncountedQuotaRequestAwaitsTheRestoreAndSettles(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		p := mustPair(t, b, nil, true)
		e, l := p.e, p.l
		ctx := t.Context()
		req := quotaRequest("k")
		req.Uncounted = true
		if _, err := e.Decide(ctx, req); !errors.Is(err, limit.ErrNotRestored) {
			t.Fatalf("before the restore: got %v, want ErrNotRestored", err)
		}
		if _, err := l.Restore(ctx, &memLedger{}); err != nil {
			t.Fatal(err)
		}
		today := mustToday(t, l)
		for i, counted := range []bool{true, true, false} {
			d, err := e.Decide(ctx, req)
			if err != nil || !d.Allowed {
				t.Fatalf("decision %d: %+v, %v", i+1, d, err)
			}
			set := limit.Settlement{Req: req, PeriodStart: d.Quota.Reset.Add(-d.Quota.Window), At: d.Now, Count: true, Units: 1}
			if !counted {
				set = limit.Settlement{Req: req, PeriodStart: set.PeriodStart, At: d.Now, Charge: -1}
			}
			if err := e.Settle(ctx, set); err != nil {
				t.Fatal(err)
			}
		}
		left, err := l.QuotaRemaining(ctx, "k", "p1", plans.Quota{Limit: 5, Period: plans.PeriodDay})
		if err != nil || left != 3 {
			t.Errorf("quota: %d left, %v, want 3 (one given back)", left, err)
		}
		u, err := l.Usage(ctx, "k", "p1", today, today)
		if err != nil || u[today.Format(dayLayout)].Count != 2 || u[today.Format(dayLayout)].Requests != 2 {
			t.Errorf("usage: %v, %v, want 2", u, err)
		}
		got, _ := drainAll(t, l.Source(), 10)
		if o := got["k"]; describe(o) != "["+today.Format(dayLayout)+"=2] quota=2 from "+today.Format(dayLayout) {
			t.Errorf("the flush worker sees %s, want 2 and 2", describe(o))
		}
	})
}

// An anchored, zoned quota is read on the limiter's clock when that clock
// is months from the admin node's: the period table made around the
// node's time misses it, and the read is sent again around the limiter's
// time (the miss's reply once failed to encode, a 503 for GetUsage).
func TestAnchoredQuotaReadOnALimiterMonthsAhead(t *testing.T) {
	t.Parallel()
	srv := redistest.MustServerAhead(t, 100*24*time.Hour)
	l := New(srv.Client, Options{Prefix: "t"})
	q := plans.Quota{Limit: 10, Period: plans.PeriodMonth, Anchor: "15", TimeZone: "Asia/Tokyo"}
	left, err := l.QuotaRemaining(t.Context(), "k1", "p1", q)
	if err != nil || left != 10 {
		t.Fatalf("remaining: %d, %v; want 10", left, err)
	}
	u, err := l.CustomerQuota(t.Context(), "acme", "p1", q, 50)
	if err != nil {
		t.Fatal(err)
	}
	if start, _ := q.Bounds(u.Now); !u.PeriodStart.Equal(start) || u.Now.Sub(time.Now()) < 90*24*time.Hour {
		t.Fatalf("customer quota's period from %v at %v, want the limiter's (from %v)", u.PeriodStart, u.Now, start)
	}
}
