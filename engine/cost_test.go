package engine

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"tollgate/calendar"
	"tollgate/engine/lease"
	"tollgate/internal/redistest"
	"tollgate/limit"
	"tollgate/plans"
	"tollgate/script"
)

// costRequest is key keyID's request in plan p1 with a plan bucket, a
// quota of 100 a month, the customer quota of 50 units of customer (its
// own when ""), and cost units.
func costRequest(keyID, customer string, cost int32) *limit.Request {
	return &limit.Request{KeyID: keyID, PlanID: "p1", API: "a1", Stage: "prod", Cost: cost,
		Buckets:    []limit.Bucket{{Level: limit.LevelPlan, RateLimit: 0.001, BurstLimit: 1000}, {Level: limit.LevelAccount, RateLimit: 1000, BurstLimit: 1000}},
		Quota:      &limit.Quota{Limit: 100, Period: plans.PeriodMonth},
		CustomerID: customer, CustomerQuota: &limit.Quota{Limit: 50, Period: plans.PeriodMonth}}
}

func mustDecideReq(tb testing.TB, l *Engine, req *limit.Request) limit.Decision {
	tb.Helper()
	d, err := l.Decide(tb.Context(), req)
	if err != nil {
		tb.Fatalf("Decide: %v", err)
	}
	l.settle() // the give-backs of a refusal have landed
	return d
}

// customerUsed reads the units the customer quota state of customer in p1
// holds.
func customerUsed(tb testing.TB, l *Engine, customer string) float64 {
	tb.Helper()
	v, err := l.r.rdb.Get(tb.Context(), l.r.keys.CustomerQuota(customer, "p1")).Result()
	if err != nil {
		tb.Fatalf("customer quota of %s: %v", customer, err)
	}
	var q script.QuotaState
	if _, err := q.Decode(v); err != nil {
		tb.Fatal(err)
	}
	return q.Used
}

// A settled cost: the decision takes the reservation from the plan
// bucket, the quota and the customer quota; the settle charges the rest,
// or gives back, on each of them, the customer's in its own slot on
// Redis Cluster.
func TestSettleChargesTheDifferenceOnEveryOwnLimit(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		l, _ := mustClockEngineOn(t, b, at(t, "2026-06-15T12:00:00Z"))
		req := costRequest("k1", "acme", 10)
		req.Uncounted = true
		d := mustDecideReq(t, l, req)
		if !d.Allowed || d.Quota.Remaining != 90 || d.Plan.Remaining != 990 || d.Customer == nil || d.Customer.Remaining != 40 {
			t.Fatalf("reservation: %+v quota %+v plan %+v customer %+v; want 90, 990, 40 left", d, d.Quota, d.Plan, d.Customer)
		}
		start := d.Quota.Reset.Add(-d.Quota.Window)
		if err := l.Settle(t.Context(), limit.Settlement{Req: req, PeriodStart: start, At: d.Now, Charge: 15, Count: true, Units: 25, Bucket: true}); err != nil {
			t.Fatal(err)
		}
		u, err := l.KeyUsage(t.Context(), "k1", "p1", req.Quota)
		if err != nil || u.Quota.Remaining != 75 || u.Today != 1 || u.TodayUnits != 25 {
			t.Fatalf("after the settle: %+v %+v, %v; want 75 left, 1 request of 25 units", u, u.Quota, err)
		}
		if got := customerUsed(t, l, "acme"); got != 25 {
			t.Fatalf("customer used %v, want 25", got)
		}
		if err := l.Settle(t.Context(), limit.Settlement{Req: req, PeriodStart: start, At: d.Now, Charge: -20, Bucket: true}); err != nil {
			t.Fatal(err)
		}
		d = mustDecideReq(t, l, costRequest("k1", "acme", 1))
		if !d.Allowed || d.Quota.Remaining != 94 || d.Plan.Remaining != 994 || customerUsed(t, l, "acme") != 6 {
			t.Fatalf("after a give-back: quota %+v plan %+v customer used %v; want 94, 994 left, 6 used", d.Quota, d.Plan, customerUsed(t, l, "acme"))
		}
		// a settle of another period changes no quota
		if err := l.Settle(t.Context(), limit.Settlement{Req: req, PeriodStart: start.AddDate(0, -1, 0), Charge: 50}); err != nil {
			t.Fatal(err)
		}
		if got := customerUsed(t, l, "acme"); got != 6 {
			t.Fatalf("a settle of an older period: customer used %v, want 6", got)
		}
	})
}

// A key with its own calendar (plans.KeyCalendar) runs its quota in its
// periods and its customer's quota in the plan's, in one decision: each
// reports its own period, and a settle charges each in its own period of
// the decision's time (the customer's own slot on Redis Cluster).
func TestKeyAndCustomerQuotasRunInTheirOwnPeriods(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		l, _ := mustClockEngineOn(t, b, at(t, "2025-12-20T12:00:00Z"))
		req := costRequest("k1", "acme", 10)
		req.Quota = anchoredQuota(t, 100, calendar.Month, "15", "Asia/Tokyo")
		req.Uncounted = true
		d := mustDecideReq(t, l, req)
		keyStart, keyEnd := at(t, "2025-12-14T15:00:00Z"), at(t, "2026-01-14T15:00:00Z")
		if !d.Allowed || d.Quota.Remaining != 90 || !d.Quota.Reset.Equal(keyEnd) || d.Quota.Window != keyEnd.Sub(keyStart) {
			t.Fatalf("the key's quota: %+v %+v, want 90 left in [%s, %s)", d, d.Quota, keyStart, keyEnd)
		}
		custStart, custEnd := at(t, "2025-12-01T00:00:00Z"), at(t, "2026-01-01T00:00:00Z")
		if d.Customer == nil || d.Customer.Remaining != 40 || !d.Customer.Reset.Equal(custEnd) || d.Customer.Window != custEnd.Sub(custStart) {
			t.Fatalf("the customer's quota: %+v, want 40 left in [%s, %s)", d.Customer, custStart, custEnd)
		}
		// charged in the key's period, the customer's state (from the 1st)
		// would read as an older period's and start again from 0
		set := limit.Settlement{Req: req, PeriodStart: keyStart, At: d.Now, Charge: 5, Count: true, Units: 15}
		if err := l.Settle(t.Context(), set); err != nil {
			t.Fatal(err)
		}
		if got := customerUsed(t, l, "acme"); got != 15 {
			t.Fatalf("customer used %v after the settle, want 15", got)
		}
		if u, err := l.KeyUsage(t.Context(), "k1", "p1", req.Quota); err != nil || u.Quota.Remaining != 85 {
			t.Fatalf("the key's quota after the settle: %+v, %v; want 85 left", u.Quota, err)
		}
	})
}

// A lease of a key on its own calendar (its DAY starts in Tokyo) with a
// customer quota on the plan's (its DAY starts in UTC) takes units of
// both; its give-back returns the customer's unspent units into the
// customer's own period of the take (limit.Return.CustomerPeriodStart),
// where they count, not into the key's.
func TestLeaseGivesCustomerUnitsBackIntoTheCustomersPeriod(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		l, _ := mustClockEngineOn(t, b, at(t, "2025-12-20T12:00:00Z"))
		req := costRequest("k1", "acme", 1)
		req.Quota = anchoredQuota(t, 1000, calendar.Day, "", "Asia/Tokyo")
		req.CustomerQuota = &limit.Quota{Limit: 100, Period: plans.PeriodDay}
		req.Want = 20
		d := mustDecideReq(t, l, req)
		if !d.Allowed || d.Granted < 2 || d.Customer == nil {
			t.Fatalf("the take: %+v, want a lease of several units", d)
		}
		keyStart, custStart := d.Quota.Reset.Add(-d.Quota.Window), d.Customer.Reset.Add(-d.Customer.Window)
		if !keyStart.Equal(at(t, "2025-12-19T15:00:00Z")) || !custStart.Equal(at(t, "2025-12-20T00:00:00Z")) {
			t.Fatalf("periods of the take: the key's from %s, the customer's from %s", keyStart, custStart)
		}
		if got := customerUsed(t, l, "acme"); got != float64(d.Granted) {
			t.Fatalf("customer used %v after the take, want %d", got, d.Granted)
		}
		rt := limit.Return{Req: req, Taken: d.Granted, Unspent: d.Granted - 1, Spent: 1, At: d.Now, PeriodStart: keyStart, CustomerPeriodStart: custStart}
		if err := l.Unlease(t.Context(), []limit.Return{rt}); err != nil {
			t.Fatal(err)
		}
		if got := customerUsed(t, l, "acme"); got != 1 {
			t.Fatalf("customer used %v after the give-back, want 1 (the spent request)", got)
		}
	})
}

// The first limit hit refuses and costs nothing: a key whose own quota
// refuses takes nothing from its customer's quota (on Redis Cluster its
// units, taken in the customer's slot first, come back), and a customer
// quota that refuses takes nothing from the key.
func TestCustomerQuotaAllOrNothingWithTheKeysLimits(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		l, _ := mustClockEngineOn(t, b, at(t, "2026-06-15T12:00:00Z"))
		if d := mustDecideReq(t, l, costRequest("k2", "acme", 45)); !d.Allowed {
			t.Fatalf("k2: refused by %v", d.Refused)
		}
		d := mustDecideReq(t, l, costRequest("k1", "acme", 10))
		if d.Allowed || d.Refused != limit.LevelCustomer || d.RetryAfter <= 0 {
			t.Fatalf("k1 past acme's budget: %+v, want refused by the customer quota until the month ends", d)
		}
		if u, err := l.KeyUsage(t.Context(), "k1", "p1", &limit.Quota{Limit: 100, Period: plans.PeriodMonth}); err != nil || u.Quota.Remaining != 100 {
			t.Fatalf("k1's quota after the customer refused: %+v, %v; want 100 left", u.Quota, err)
		}
		tight := costRequest("k3", "acme", 4)
		tight.Quota.Limit = 3
		if d := mustDecideReq(t, l, tight); d.Allowed || d.Refused != limit.LevelQuota {
			t.Fatalf("k3 past its own quota: %+v, want refused by its quota", d)
		}
		if got := customerUsed(t, l, "acme"); got != 45 {
			t.Fatalf("acme used %v after k3's refusal, want 45 (nothing taken)", got)
		}
		d = mustDecideReq(t, l, costRequest("k1", "acme", 5))
		if !d.Allowed || d.Customer == nil || d.Customer.Remaining != 0 {
			t.Fatalf("k1 with what is left: %+v customer %+v, want admitted, 0 left", d, d.Customer)
		}
		// a key without a customerId is its own customer
		if d := mustDecideReq(t, l, costRequest("k4", "", 50)); !d.Allowed {
			t.Fatalf("k4, its own customer: refused by %v", d.Refused)
		}
	})
}

// Over two and four nodes with capacity leases on, the keys of one
// customer sending from every node at once are admitted exactly as many
// times as the customer quota holds their cost, on one primary and on
// Redis Cluster (where the customer's state is in a slot of its own).
func TestCustomerQuotaIsExactOverNodesWithLeases(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		for _, n := range []int{2, 4} {
			t.Run(fmt.Sprintf("%d nodes", n), func(t *testing.T) { customerQuotaOverNodes(t, b, n) })
		}
	})
}

func customerQuotaOverNodes(t *testing.T, b redistest.Backend, nodeCount int) {
	const cost, budget = 3, 300
	var nodes []limit.Decider
	var first *Engine
	prefix := ""
	for range nodeCount {
		rdb, p := b.Open(t)
		if prefix == "" {
			prefix = p
		}
		e := mustLoaded(t, New(rdb, Options{Prefix: prefix, Timeout: testTimeout}))
		t.Cleanup(func() { _ = e.Close() })
		leases := lease.New(e, lease.Options{})
		t.Cleanup(leases.Close)
		nodes = append(nodes, limit.Stack(e, leases.Layer))
		if first == nil {
			first = e
		}
	}
	var admitted atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for i, n := range nodes {
		for j := range 8 / nodeCount {
			key := fmt.Sprintf("k%d", (i*8+j)%3) // three keys of acme, on every node
			wg.Go(func() {
				for {
					req := costRequest(key, "acme", cost)
					req.Quota.Limit, req.CustomerQuota.Limit = 10000, budget
					d, err := n.Decide(t.Context(), req)
					if err != nil {
						failed.Store(err)
						return
					}
					if !d.Allowed {
						if d.Refused != limit.LevelCustomer {
							failed.Store(fmt.Errorf("refused by %v, want the customer quota", d.Refused))
						}
						return
					}
					admitted.Add(1)
				}
			})
		}
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
	first.settle()
	if got := admitted.Load(); got != budget/cost {
		t.Fatalf("admitted %d, want %d (%d units of %d each)", got, budget/cost, budget, cost)
	}
	if got := customerUsed(t, first, "acme"); got != budget {
		t.Fatalf("acme used %v, want %d", got, budget)
	}
}
