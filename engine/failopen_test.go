package engine

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/engine/failopen"
	"tollgate/internal/clocktest"
	"tollgate/internal/redistest"
	"tollgate/internal/waittest"
	"tollgate/limit"
	"tollgate/plans"
	"tollgate/script"
)

// faultyClient returns a client of rdb's Redis (one primary or a
// cluster) that dials through d.
func faultyClient(tb testing.TB, rdb redis.UniversalClient, d *replyDropper) redis.UniversalClient {
	tb.Helper()
	var c redis.UniversalClient
	switch r := rdb.(type) {
	case *redis.ClusterClient:
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: r.Options().Addrs, MaxRetries: 3, ContextTimeoutEnabled: true,
			DialTimeout: 100 * time.Millisecond, Dialer: d.dial})
	case *redis.Client:
		c = redis.NewClient(&redis.Options{Addr: r.Options().Addr, MaxRetries: -1, ContextTimeoutEnabled: true,
			DialTimeout: 100 * time.Millisecond, Dialer: d.dial})
	default:
		tb.Fatalf("faultyClient: a %T", rdb)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// pendingNode is an engine on a faulty client with the pending charges
// (fail-open admissions and settles) stacked on it, and an engine on a
// sound client of the same Redis to read what landed.
type pendingNode struct {
	e, direct *Engine
	ch        *failopen.Charges
	top       limit.Decider
	faults    *replyDropper
}

// mustPendingNode returns a pendingNode on b whose pending charges are
// tried every interval (and after a failed try's backoff).
func mustPendingNode(t *testing.T, b redistest.Backend, c *clocktest.Clock, interval time.Duration) *pendingNode {
	t.Helper()
	rdb, prefix := b.Open(t)
	n := &pendingNode{faults: &replyDropper{}}
	n.direct = mustLoaded(t, New(rdb, Options{Prefix: prefix, Timeout: testTimeout, Clock: c.Now}))
	n.e = New(faultyClient(t, rdb, n.faults), Options{Prefix: prefix, Timeout: 50 * time.Millisecond, Clock: c.Now})
	n.ch = failopen.New(n.e, failopen.Options{Interval: interval})
	t.Cleanup(func() { n.ch.Close(); _ = n.e.Close() })
	n.top = limit.Stack(n.e, n.ch.Layer)
	return n
}

// landed waits until nothing is pending, and until the engine decides
// again (a probe of a key of its own).
func (n *pendingNode) landed(t *testing.T) {
	t.Helper()
	waittest.Until(t, "the pending charges counted", 20*time.Second, func() bool { p, _ := n.ch.Pending(); return p == 0 })
	probe := &limit.Request{KeyID: "probe", PlanID: "p1", Quota: &limit.Quota{Limit: 1000, Period: plans.PeriodMonth}}
	waittest.Until(t, "Redis deciding again", 20*time.Second, func() bool { _, err := n.e.Decide(t.Context(), probe); return err == nil })
}

// want checks k1's quota, usage and acme's customer quota (costRequest's).
func (n *pendingNode) want(t *testing.T, step string, quotaUsed, requests, units int64, custUsed float64) {
	t.Helper()
	u, err := n.direct.KeyUsage(t.Context(), "k1", "p1", costRequest("k1", "acme", 1).Quota)
	if err != nil {
		t.Fatal(err)
	}
	if got := customerUsed(t, n.direct, "acme"); u.Quota.Remaining != 100-quotaUsed || u.Today != requests || u.TodayUnits != units || got != custUsed {
		t.Fatalf("%s: quota left %d, usage %d requests of %d units, customer used %v; want %d left, %d of %d, customer %v",
			step, u.Quota.Remaining, u.Today, u.TodayUnits, got, 100-quotaUsed, requests, units, custUsed)
	}
}

// Requests admitted without a decision (failure mode open) count against
// their customer quota too, exactly once, on one primary and on Redis
// Cluster (where the customer's state has a slot of its own, taken by a
// run of its own first): while Redis is down, and when the reply of the
// run that took the customer's units is lost (it ran: not counted again),
// or (Redis Cluster) the reply of the key's own run after the customer's
// units were taken.
func TestFailOpenAdmissionsCountInTheCustomerQuotaOnce(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		c := clocktest.New(at(t, "2026-06-15T12:00:00Z"))
		n := mustPendingNode(t, b, c, 10*time.Millisecond)
		req := costRequest("k1", "acme", 3)
		if d, err := n.top.Decide(t.Context(), req); err != nil || !d.Allowed {
			t.Fatalf("first decision: %+v, %v", d, err)
		}
		n.faults.down.Store(true)
		for range 2 {
			if _, err := n.top.Decide(t.Context(), req); err == nil {
				t.Fatal("a decision while Redis is down succeeded")
			}
		}
		n.faults.down.Store(false)
		n.landed(t)
		n.want(t, "after Redis was down", 9, 3, 9, 9)

		n.faults.arm([]byte(n.direct.r.keys.CustomerQuota("acme", "p1")))
		if _, err := n.top.Decide(t.Context(), req); err == nil {
			t.Fatal("a decision whose customer reply was lost succeeded")
		}
		n.landed(t)
		n.want(t, "after the customer's reply was lost", 12, 4, 12, 12)

		if b.Name != "cluster" {
			return
		}
		n.faults.arm([]byte(n.direct.r.keys.Quota("k1", "p1")))
		if _, err := n.top.Decide(t.Context(), req); err == nil {
			t.Fatal("a decision whose key's reply was lost succeeded")
		}
		n.landed(t)
		n.want(t, "after the key's reply was lost", 15, 5, 15, 15)
	})
}

// planTokens reads the tokens k1's plan bucket in p1 holds (1000, its
// burst, when it has no state).
func (n *pendingNode) planTokens(t *testing.T) float64 {
	t.Helper()
	v, err := n.direct.r.rdb.Get(t.Context(), n.direct.r.keys.PlanBucket("k1", "p1")).Result()
	if err == redis.Nil {
		return 1000
	}
	var s script.BucketState
	if err == nil {
		_, err = s.Decode(v)
	}
	if err != nil {
		t.Fatal(err)
	}
	return s.Tokens
}

// settledRequest is costRequest's, reserving 10 units and settled after
// its response.
func settledRequest() *limit.Request {
	req := costRequest("k1", "acme", 10)
	req.Uncounted = true
	return req
}

// A settle whose reply is lost (it ran) is tried again at once, not at
// the next interval, and counts once: the key's quota, usage and plan
// bucket and the customer quota are charged the real cost, on one primary
// and on Redis Cluster (where the customer's part, in its own slot, lands
// on the first try and the key's on the second).
func TestSettleWhoseReplyIsLostLandsOnce(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		c := clocktest.New(at(t, "2026-06-15T12:00:00Z"))
		n := mustPendingNode(t, b, c, time.Hour) // only the backoff tries again
		req := settledRequest()
		d, err := n.top.Decide(t.Context(), req)
		if err != nil || !d.Allowed {
			t.Fatalf("decision: %+v, %v", d, err)
		}
		n.want(t, "after the reservation", 10, 0, 0, 10)
		n.faults.arm([]byte(n.direct.r.keys.Quota("k1", "p1")))
		s := limit.Settlement{Req: req, PeriodStart: d.Quota.Reset.Add(-d.Quota.Window), At: d.Now, Charge: 15, Count: true, Units: 25, Bucket: true}
		if err := n.ch.Settle(t.Context(), s); err != nil {
			t.Fatal(err)
		}
		waittest.Until(t, "the settle counted", 20*time.Second, func() bool { p, _ := n.ch.Pending(); return p == 0 })
		if !n.faults.fired.Load() || n.ch.Failures() == 0 {
			t.Fatalf("reply dropped %v, failed tries %d: the test lost no reply", n.faults.fired.Load(), n.ch.Failures())
		}
		n.want(t, "after the settle", 25, 1, 25, 25)
		if got := n.planTokens(t); got != 975 {
			t.Fatalf("plan bucket: %v tokens, want 975", got)
		}
	})
}

// Settles of two keys that failed together in one try (Redis down: the
// try did not run) both count when Redis answers again: the retry names
// the failed try as each one's Prev, and counting the first must not make
// the second look counted by that try (on one primary both share the
// try's run; on Redis Cluster each key's slot has its own).
func TestChargesOfOneFailedTryAllCountOnTheRetry(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		n := mustPendingNode(t, b, clocktest.New(at(t, "2026-06-15T12:00:00Z")), 10*time.Millisecond)
		settleThroughAFailedTry(t, n, []string{"k1", "k2"}, "acme")
		if got := customerUsed(t, n.direct, "acme"); got != 50 {
			t.Fatalf("customer used %v, want 50", got)
		}
	})
}

// The settles of one failed try all count on the retry however many they
// are: more than the pending charges' batch (1,000) of them, taken in two
// Charge calls, would have the second call find the try counted by the
// first and skip its settles.
func TestChargesOfOneFailedTryCountTogetherBeyondABatch(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		n := mustPendingNode(t, b, clocktest.New(at(t, "2026-06-15T12:00:00Z")), 10*time.Millisecond)
		keys := make([]string, 1100)
		for i := range keys {
			keys[i] = fmt.Sprintf("k%d", i)
		}
		settleThroughAFailedTry(t, n, keys, "")
	})
}

// settleThroughAFailedTry decides a settled-cost request of each of keys
// (of customer; reserving 10), sends their settles (25 units) while Redis
// is down so that one try of them fails, lets the retry land, and checks
// each key was charged and counted once.
func settleThroughAFailedTry(t *testing.T, n *pendingNode, keys []string, customer string) {
	t.Helper()
	settles := make([]limit.Settlement, len(keys))
	for i, key := range keys {
		req := costRequest(key, customer, 10)
		req.Uncounted = true
		req.Buckets = req.Buckets[:1] // the key's own throttle: the account's would refuse past its burst
		d, err := n.top.Decide(t.Context(), req)
		if err != nil || !d.Allowed {
			t.Fatalf("decision of %s: %+v, %v", key, d, err)
		}
		settles[i] = limit.Settlement{Req: req, PeriodStart: d.Quota.Reset.Add(-d.Quota.Window), At: d.Now,
			Charge: 15, Count: true, Units: 25, Bucket: true}
	}
	n.faults.down.Store(true)
	for _, s := range settles {
		if err := n.ch.Settle(t.Context(), s); err != nil {
			t.Fatal(err)
		}
	}
	waittest.Until(t, "a try of the settles failed", 20*time.Second, func() bool { return n.ch.Failures() > 0 })
	n.faults.down.Store(false)
	n.landed(t)
	for _, key := range keys {
		u, err := n.direct.KeyUsage(t.Context(), key, "p1", costRequest(key, customer, 1).Quota)
		if err != nil {
			t.Fatal(err)
		}
		if u.Quota.Remaining != 75 || u.Today != 1 || u.TodayUnits != 25 {
			t.Fatalf("%s: quota left %d, usage %d requests of %d units; want 75 left, 1 request of 25 units",
				key, u.Quota.Remaining, u.Today, u.TodayUnits)
		}
	}
}

// Two requests admitted open whose decisions went in one run that never
// ran (Redis down: a key on two plans, one slot) each count once, also
// when their charges come in separate tries: the first charge to count
// keeps a late copy of the run from running, and must not make the
// second look decided by it.
func TestAdmissionsOfOneLostRunCountInSeparateTries(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		c := clocktest.New(at(t, "2026-06-15T12:00:00Z"))
		n := mustPendingNode(t, b, c, time.Hour)
		n.landed(t) // the node's run window exists
		// a run of the key's slot numbered and never sent
		run := n.e.r.nextRun(n.e.r.slotOf(n.e.r.keys.Usage("k1", "p1")))
		for _, plan := range []string{"p1", "p2"} {
			r := costRequest("k1", "", 1)
			r.PlanID, r.CustomerQuota = plan, nil
			ch := limit.Charge{Req: r, Units: 1, Requests: 1, Run: run}
			if kept, err := n.e.Charge(t.Context(), []limit.Charge{ch}); err != nil || len(kept) != 0 {
				t.Fatalf("charge in %s: kept %d, %v", plan, len(kept), err)
			}
			u, err := n.direct.KeyUsage(t.Context(), "k1", plan, r.Quota)
			if err != nil {
				t.Fatal(err)
			}
			if u.Quota.Remaining != 99 || u.Today != 1 {
				t.Fatalf("%s: quota left %d, usage %d; want 99 left, 1 request (its run never ran)", plan, u.Quota.Remaining, u.Today)
			}
		}
	})
}

// A settled-cost request admitted without a decision (failure mode open)
// is charged its real cost by its settle, once: the whole cost when its
// decision did not run (Redis down; no bucket, as for every fail-open
// admission), the difference from its reservation when it ran (its reply
// lost), with the request counted in usage either way.
func TestFailOpenSettledCostChargesItsRealCostOnce(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		c := clocktest.New(at(t, "2026-06-15T12:00:00Z"))
		n := mustPendingNode(t, b, c, 10*time.Millisecond)
		req := settledRequest()
		settle := func(step string, fault func()) {
			t.Helper()
			fault()
			_, err := n.top.Decide(t.Context(), req)
			var ue *limit.UndecidedError
			if !errors.As(err, &ue) {
				t.Fatalf("%s: decision: got %v, want undecided", step, err)
			}
			n.faults.down.Store(false)
			s := limit.Settlement{Req: req, Charge: 15, Count: true, Units: 25, Bucket: true, Reserved: 10, Undecided: ue}
			if err := n.ch.Settle(t.Context(), s); err != nil {
				t.Fatal(err)
			}
			n.landed(t)
		}
		settle("Redis down", func() { n.faults.down.Store(true) })
		n.want(t, "after a settle of a decision that did not run", 25, 1, 25, 25)
		if got := n.planTokens(t); got != 1000 {
			t.Fatalf("plan bucket: %v tokens, want 1000 (not charged)", got)
		}
		settle("reply lost", func() { n.faults.arm([]byte(n.direct.r.keys.Quota("k1", "p1"))) })
		n.want(t, "after a settle of a decision whose reply was lost", 50, 2, 50, 50)
		if got := n.planTokens(t); got != 975 {
			t.Fatalf("plan bucket: %v tokens, want 975 (the reservation, then the difference)", got)
		}
	})
}

// Requests admitted open count on the limiter's clock, not the node's:
// with the limiter's clock 40 days ahead of the node's, whatever the
// failure (the reply of a run lost: of Redis Cluster's first phase, which
// leaves the key's run unsent; Redis down while decisions queue or race),
// their charges count on the limiter's day and in its quota period.
func TestFailOpenChargesCountOnTheLimitersClock(t *testing.T) {
	const ahead = 40 * 24 * time.Hour
	for _, b := range []struct {
		name string
		open func(t *testing.T) redis.UniversalClient
	}{
		{"primary", func(t *testing.T) redis.UniversalClient { return redistest.MustServerAhead(t, ahead).Client }},
		{"cluster", func(t *testing.T) redis.UniversalClient {
			return redistest.MustClusterStepped(t, 1, redistest.NewSteppedClock(t, ahead))
		}},
	} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			rdb := b.open(t)
			faults := &replyDropper{}
			e := New(faultyClient(t, rdb, faults), Options{Prefix: "t", Timeout: 50 * time.Millisecond})
			ch := failopen.New(e, failopen.Options{Interval: 10 * time.Millisecond})
			t.Cleanup(func() { ch.Close(); _ = e.Close() })
			top := limit.Stack(e, ch.Layer)
			req := func() *limit.Request {
				return &limit.Request{KeyID: "k1", PlanID: "p1", API: "a1", Stage: "prod",
					Buckets: []limit.Bucket{{Level: limit.LevelStage, RateLimit: 1e6, BurstLimit: 1e6, Method: "GET", Path: "/x"}},
					Quota:   &limit.Quota{Limit: 1000, Period: plans.PeriodDay}}
			}
			if d, err := top.Decide(t.Context(), req()); err != nil || !d.Allowed { // the node learns the limiter's time
				t.Fatalf("first decision: %+v, %v", d, err)
			}
			admitted := 1
			faults.arm([]byte(e.r.keys.StageBucket("a1", "prod", "GET", "/x")))
			if _, err := top.Decide(t.Context(), req()); err == nil {
				t.Fatal("a decision whose reply was lost succeeded")
			}
			admitted++
			faults.down.Store(true)
			var wg sync.WaitGroup
			for range 16 {
				wg.Go(func() {
					if _, err := top.Decide(t.Context(), req()); err == nil {
						t.Error("a decision while Redis is down succeeded")
					}
				})
			}
			wg.Wait()
			admitted += 16
			faults.down.Store(false)
			waittest.Until(t, "the pending charges counted", 20*time.Second, func() bool { p, _ := ch.Pending(); return p == 0 })
			direct := New(rdb, Options{Prefix: "t", Timeout: testTimeout})
			u, err := direct.KeyUsage(t.Context(), "k1", "p1", req().Quota)
			if err != nil || u.Today != int64(admitted) || u.Quota.Remaining != int64(1000-admitted) {
				t.Fatalf("usage of the limiter's day %v: %+v (quota %+v), %v; want %d requests, %d left", u.Now, u, u.Quota, err, admitted, 1000-admitted)
			}
		})
	}
}

// On Redis Cluster a decision whose reply was lost is not counted twice
// however many runs the node sends to other slots before its charge: run
// numbers count per slot, so the slot's window of 256 still holds the run
// after 300 runs elsewhere and a later decision in its own slot.
func TestLostRunStaysInItsSlotsWindowPastRunsElsewhere(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.MustCluster(t)
	faults := &replyDropper{}
	e := New(faultyClient(t, rdb, faults), Options{Prefix: prefix, Timeout: time.Millisecond})
	t.Cleanup(func() { _ = e.Close() })
	req := func(keyID string) *limit.Request {
		return &limit.Request{KeyID: keyID, PlanID: "p1", Quota: &limit.Quota{Limit: 1000, Period: plans.PeriodDay}}
	}
	home := e.r.slotOf(e.r.keys.Quota("k1", "p1"))
	faults.arm([]byte(e.r.keys.Quota("k1", "p1")))
	_, err := e.Decide(t.Context(), req("k1"))
	var ue *limit.UndecidedError
	if !errors.As(err, &ue) || ue.Run == 0 {
		t.Fatalf("a decision whose reply was lost: %v, want undecided naming its run", err)
	}
	for i, n := 0, 0; n < 300; i++ { // runs of other slots
		k := fmt.Sprintf("other%d", i)
		if e.r.slotOf(e.r.keys.Quota(k, "p1")) == home {
			continue
		}
		var d limit.Decision
		waittest.Until(t, "a decision of "+k, 10*time.Second, func() bool { d, err = e.Decide(t.Context(), req(k)); return err == nil })
		if !d.Allowed {
			t.Fatalf("decision of %s: %+v", k, d)
		}
		n++
	}
	if d, err := e.Decide(t.Context(), req("k1")); err != nil || !d.Allowed { // a run of its own slot
		t.Fatalf("k1 again: %+v, %v", d, err)
	}
	kept, err := e.Charge(t.Context(), []limit.Charge{{Req: req("k1"), Units: 1, Requests: 1, At: ue.At, Run: ue.Run}})
	if err != nil || len(kept) != 0 {
		t.Fatalf("charge: kept %v, %v", kept, err)
	}
	u, err := e.KeyUsage(t.Context(), "k1", "p1", req("k1").Quota)
	if err != nil || u.Today != 2 || u.Quota.Remaining != 998 {
		t.Fatalf("k1: %d requests, quota %+v, %v; want 2 and 998 left (the lost run counted once)", u.Today, u.Quota, err)
	}
}
