package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redistest"
	"tollgate/limit"
	"tollgate/plans"
)

// testLease is the lease lifetime of the lease tests: the production
// default.
const testLease = DefaultLeaseLifetime

// mustNodes returns n engines with capacity leases of lifetime testLease,
// each with its own client of the test Redis (as n gateway nodes), on one
// fresh key prefix. Each is closed (its leases given back) at cleanup,
// before its client.
func mustNodes(tb testing.TB, n int) []*Engine {
	tb.Helper()
	_, prefix := redistest.MustClient(tb) // deletes the prefix at cleanup
	nodes := make([]*Engine, n)
	for i := range nodes {
		opt, err := redis.ParseURL(redistest.URL())
		if err != nil {
			tb.Fatal(err)
		}
		rdb := redis.NewClient(opt)
		e := mustLoaded(tb, New(rdb, Options{Prefix: prefix, Timeout: testTimeout, LeaseLifetime: testLease}))
		tb.Cleanup(func() {
			_ = e.Close()
			_ = rdb.Close()
		})
		nodes[i] = e
	}
	return nodes
}

// hotRequest is the gateway's request of key "hot" in plan "p1": plan
// bucket (rate, burst), stage and account buckets that never refuse here,
// and a DAY quota of quota requests (none when 0).
func hotRequest(rate float64, burst, quota int32) *limit.Request {
	r := &limit.Request{KeyID: "hot", PlanID: "p1", API: "api1", Stage: "prod",
		Buckets: []limit.Bucket{{Level: limit.LevelPlan, RateLimit: rate, BurstLimit: burst},
			{Level: limit.LevelStage, RateLimit: 1e6, BurstLimit: 1 << 30, Method: "GET", Path: "/items"},
			{Level: limit.LevelAccount, RateLimit: 1e6, BurstLimit: 1 << 30}}}
	if quota > 0 {
		r.Quota = &limit.Quota{Limit: quota, Period: "DAY"}
	}
	return r
}

// load runs workers goroutines per node, each deciding req (a fresh copy
// per call) until stop returns true; it calls seen with every decision
// and returns the decisions made.
func load(t *testing.T, nodes []*Engine, workers int, req func() *limit.Request, stop func() bool, seen func(limit.Decision)) int64 {
	t.Helper()
	var decided atomic.Int64
	var wg sync.WaitGroup
	for _, e := range nodes {
		for range workers {
			wg.Go(func() {
				for !stop() {
					d, err := e.Decide(context.Background(), req())
					if err != nil {
						t.Errorf("Decide: %v", err)
						return
					}
					decided.Add(1)
					seen(d)
				}
			})
		}
	}
	wg.Wait()
	return decided.Load()
}

// quiet returns a load's stop condition: a second passed without an
// admission (counted in admitted), or deadline passed.
func quiet(admitted *atomic.Int64, deadline time.Time) func() bool {
	var mu sync.Mutex
	last, lastAt := int64(-1), time.Now()
	return func() bool {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		if n := admitted.Load(); n != last {
			last, lastAt = n, now
		}
		return now.Sub(lastAt) > time.Second || now.After(deadline)
	}
}

// hotUsage is the usage count of key "hot" in plan "p1" (today).
func hotUsage(t *testing.T, e *Engine) int64 {
	t.Helper()
	usage, err := e.Usage(t.Context(), "hot", "p1", time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var counted int64
	for _, c := range usage {
		counted += c
	}
	return counted
}

// countInto returns a load callback that counts admitted decisions and
// the refusals since the last admission.
func countInto(admitted, refusedInARow *atomic.Int64) func(limit.Decision) {
	return func(d limit.Decision) {
		if d.Allowed {
			admitted.Add(1)
			refusedInARow.Store(0)
		} else {
			refusedInARow.Add(1)
		}
	}
}

// trips is the round trips of the nodes so far.
func trips(nodes []*Engine) int64 {
	var n int64
	for _, e := range nodes {
		n += e.trips.Load()
	}
	return n
}

// Two and four nodes with leases, under load from every node: a quota
// admits exactly its limit, and usage counts exactly the admitted
// requests once the nodes gave their leases back.
func TestLeasedQuotaAdmitsExactlyItsLimit(t *testing.T) {
	t.Parallel()
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprintf("%d nodes", n), func(t *testing.T) {
			t.Parallel()
			const quota = 6000
			nodes := mustNodes(t, n)
			var admitted, refusedInARow atomic.Int64
			deadline := time.Now().Add(20 * time.Second)
			// until a second with no admission: a lease may end unspent
			// while its node's workers stop, and its units come back
			stop := quiet(&admitted, deadline)
			load(t, nodes, 8, func() *limit.Request { return hotRequest(1e6, 1<<30, quota) }, stop, countInto(&admitted, &refusedInARow))
			if got := admitted.Load(); got != quota {
				t.Fatalf("admitted: got %d, want %d", got, quota)
			}
			t.Logf("%d nodes: %d round trips for %d admitted", n, trips(nodes), quota)
			for _, e := range nodes {
				_ = e.Close()
			}
			e := nodes[0]
			if counted := hotUsage(t, e); counted != quota {
				t.Errorf("usage: got %d, want %d", counted, quota)
			}
			st, err := e.QuotaState(t.Context(), "hot", "p1", plans.Quota{Limit: quota, Period: plans.PeriodDay})
			if err != nil {
				t.Fatal(err)
			}
			if st.Remaining != 0 {
				t.Errorf("quota remaining: got %d, want 0", st.Remaining)
			}
		})
	}
}

// Two and four nodes with leases, under load from every node: a throttle
// admits at most burst + rate × (T + L) in any interval of length T
// (counted over the decisions' Redis times, each admitted request in
// every window that holds it) and at most burst + rate × T over the run
// from a full bucket (docs/leases.md).
func TestLeasedThrottleStaysWithinItsBound(t *testing.T) {
	t.Parallel()
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprintf("%d nodes", n), func(t *testing.T) {
			t.Parallel()
			const rate, burst = 4000.0, 400
			nodes := mustNodes(t, n)
			var mu sync.Mutex
			var times []time.Time
			end := time.Now().Add(1500 * time.Millisecond)
			decided := load(t, nodes, 8, func() *limit.Request { return hotRequest(rate, burst, 0) },
				func() bool { return time.Now().After(end) },
				func(d limit.Decision) {
					if d.Allowed {
						mu.Lock()
						times = append(times, d.Now)
						mu.Unlock()
					}
				})
			slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
			run := times[len(times)-1].Sub(times[0])
			if got, max := float64(len(times)), burst+rate*run.Seconds(); got > max {
				t.Errorf("run of %v: admitted %v, more than burst + rate × T = %.0f", run, got, max)
			}
			for _, T := range []time.Duration{time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond,
				100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second} {
				most, j := 0, 0
				for i := range times { // window [times[i], times[i] + T]
					for j < len(times) && !times[j].After(times[i].Add(T)) {
						j++
					}
					most = max(most, j-i)
				}
				if bound := burst + rate*(T+testLease).Seconds(); float64(most) > bound {
					t.Errorf("T = %v: admitted %d in one interval, more than burst + rate × (T + L) = %.0f", T, most, bound)
				}
			}
			t.Logf("%d nodes: %d decided, %d admitted over %v, %d round trips", n, decided, len(times), run, trips(nodes))
		})
	}
}

// A cold key (a few requests per second) takes no lease: one round trip
// per request, exactly as without leases. A hot one is admitted on
// leases.
func TestOnlyHotKeysTakeLeases(t *testing.T) {
	t.Parallel()
	e := mustNodes(t, 1)[0]
	for range 10 {
		if _, err := e.Decide(t.Context(), hotRequest(1000, 1000, 0)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // 20 requests per second
	}
	if got := e.trips.Load(); got != 10 {
		t.Errorf("cold key: got %d round trips for 10 requests, want 10", got)
	}
	before := e.trips.Load()
	const hot = 3000
	for range hot {
		if _, err := e.Decide(t.Context(), hotRequest(1e6, 1<<30, 0)); err != nil {
			t.Fatal(err)
		}
	}
	// (a node whose round trips take over L/2 pauses its leases: only
	// fewer round trips than requests is certain on a busy machine)
	if got := e.trips.Load() - before; got >= hot {
		t.Errorf("hot key: got %d round trips for %d requests, want fewer (leases)", got, hot)
	}
}

// A refused request takes nothing, and a lease shrinks to one as the
// quota nears empty: the last units are decided in Redis one by one, so
// a single node spends a quota to the last unit and no further; the
// remaining count it reports never promises more than is left.
func TestLeasesShrinkToOneNearEmpty(t *testing.T) {
	t.Parallel()
	e := mustNodes(t, 1)[0]
	const quota = 500
	var admitted int
	for last := time.Now(); time.Since(last) < time.Second; {
		d, err := e.Decide(t.Context(), hotRequest(1e6, 1<<30, quota))
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			admitted++
			last = time.Now()
			// units of a lease that ended are on their way back
			if d.Quota.Remaining > int64(quota-admitted) {
				t.Fatalf("request %d: quota remaining %d, want at most %d", admitted, d.Quota.Remaining, quota-admitted)
			}
		}
	}
	if admitted != quota {
		t.Fatalf("admitted %d, want %d", admitted, quota)
	}
	_ = e.Close()
	st, err := e.QuotaState(t.Context(), "hot", "p1", plans.Quota{Limit: quota, Period: plans.PeriodDay})
	if err != nil || st.Remaining != 0 {
		t.Fatalf("quota state: %+v, %v; want 0 remaining", st, err)
	}
}

// A config change ends every open lease at once (push event:
// ForgetChange), and a request under a lower limit voids the lease it
// would have used: it is decided in Redis under the new limit, and the
// unspent units went back.
func TestConfigChangeVoidsLeases(t *testing.T) {
	t.Parallel()
	e := mustNodes(t, 1)[0]
	sent := 0
	for deadline := time.Now().Add(10 * time.Second); openLeft(e) == 0; sent++ {
		if time.Now().After(deadline) {
			t.Fatalf("no open lease after %d requests of a hot key", sent)
		}
		if _, err := e.Decide(t.Context(), hotRequest(1e6, 1<<30, 100000)); err != nil {
			t.Fatal(err)
		}
	}
	e.ForgetChange(plans.Change{Version: 2, KeyHashes: []string{"x"}})
	if open := openLeft(e); open != 0 {
		t.Fatalf("after a change: %d units still on open leases, want 0", open)
	}
	// A lower quota applies to the next request, lease or not.
	for range 400 {
		if _, err := e.Decide(t.Context(), hotRequest(1e6, 1<<30, 100000)); err != nil {
			t.Fatal(err)
		}
	}
	sent += 400
	low := hotRequest(1e6, 1<<30, 100)
	low.Version = 3
	d, err := e.Decide(t.Context(), low)
	if err != nil {
		t.Fatal(err)
	}
	if d.Allowed || d.Refused != limit.LevelQuota {
		t.Fatalf("under a lowered quota: allowed %v refused %v, want refused by the quota", d.Allowed, d.Refused)
	}
	_ = e.Close()
	st, err := e.QuotaState(t.Context(), "hot", "p1", plans.Quota{Limit: 100000, Period: plans.PeriodDay})
	if err != nil {
		t.Fatal(err)
	}
	if used := 100000 - st.Remaining; used != int64(sent) {
		t.Errorf("quota used after the leases went back: got %d, want the %d admitted", used, sent)
	}
}

// openLeft is the units left on e's open leases.
func openLeft(e *Engine) int64 {
	e.leases.mu.Lock()
	defer e.leases.mu.Unlock()
	var n int64
	for _, en := range e.leases.m {
		if en.open != nil {
			n += int64(en.open.left)
		}
	}
	return n
}

// A node that dies loses at most its open leases: the quota counts them
// as used (never over-admitted), usage misses at most the requests it
// admitted on them, and the other node spends the rest exactly.
func TestDeadNodeLosesAtMostItsOpenLeases(t *testing.T) {
	t.Parallel()
	const quota = 4000
	nodes := mustNodes(t, 2)
	dead, alive := nodes[0], nodes[1]
	var admitted atomic.Int64
	req := func() *limit.Request { return hotRequest(1e6, 1<<30, quota) }
	var refused atomic.Int64
	half := func() bool { return admitted.Load() >= quota/2 }
	load(t, nodes, 8, req, half, countInto(&admitted, &refused))
	// The node dies: it admits nothing more and gives nothing back.
	dead.leases.mu.Lock()
	dead.leases.closed = true
	var lostUnits, lostUsage int64
	for _, en := range dead.leases.m {
		if l := en.open; l != nil {
			lostUnits += int64(l.left)
			lostUsage += int64(l.spent)
			l.timer.Stop()
			en.open = nil
		}
	}
	dead.leases.mu.Unlock()
	load(t, []*Engine{alive}, 8, req, quiet(&admitted, time.Now().Add(20*time.Second)), countInto(&admitted, &refused))
	_ = alive.Close()
	if got := admitted.Load(); got != quota-lostUnits {
		t.Errorf("admitted: got %d, want %d (the quota less the %d units on the dead node's leases)", got, quota-lostUnits, lostUnits)
	}
	if counted := hotUsage(t, alive); counted != admitted.Load()-lostUsage {
		t.Errorf("usage: got %d, want %d admitted less %d admitted on the dead node's open leases", counted, admitted.Load()-lostUsage, lostUsage)
	}
	t.Logf("dead node held %d units and %d uncounted requests", lostUnits, lostUsage)
}
