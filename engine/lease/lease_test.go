package lease

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/cache"
	"tollgate/calendar"
	"tollgate/engine"
	"tollgate/internal/clocktest"
	"tollgate/internal/hammertest"
	"tollgate/internal/metrictest"
	"tollgate/internal/redistest"
	"tollgate/limit"
	"tollgate/limit/limittest"
	"tollgate/plans"
)

// node is one gateway node: an engine with the lease layer stacked on it.
type node struct {
	e     *engine.Engine
	t     *Table
	top   limit.Decider
	clock *clocktest.Clock // the scripts' clock; zero: Redis TIME
}

// way is how a test's requests reach a node: plain decisions, or those of
// a caching method, which read the stage cache in the decision's round
// trip (Engine.DecideLookup; in a round trip of their own when a lease
// admits them).
type way string

const (
	plain  way = "decide"
	cached way = "decide with cache lookup"
)

// ways are the ways every lease test runs its requests.
var ways = []way{plain, cached}

// form is what limits a test's requests: the plan's throttle, or a
// TOKEN_BUCKET, FIXED_WINDOW or SLIDING_WINDOW rate-limit rule
// (docs/leases.md, "Rate-limit rules"); hot builds the request of a
// throttle of rate and burst (a window: burst per hour) and a DAY quota
// (none when 0).
type form struct {
	name string
	hot  func(rate float64, burst, quota int32) *limit.Request
}

// forms are the forms of requests that take leases. The tests of
// exactness under load (a quota, a burst, hot and cold shapes, the window
// boundary, the model) run every form; the others the throttles, those
// that refill at a rate (windows have their own boundary test). Each
// list starts with the plan's throttle.
var (
	throttles = []form{{"plan throttle", limittest.HotRequest}, {"token bucket rule", limittest.HotRuleRequest}}
	forms     = append(slices.Clip(throttles), form{"fixed window rule", limittest.HotWindowRequest(limit.FixedWindow)},
		form{"sliding window rule", limittest.HotWindowRequest(limit.SlidingWindow)})
)

// eachForm runs test in parallel for every backend (one primary, Redis
// Cluster, Sentinel: redistest.AllBackends) and form of fs.
func eachForm(t *testing.T, fs []form, test func(*testing.T, redistest.Backend, form)) {
	redistest.EachBackendOf(t, redistest.AllBackends, func(t *testing.T, b redistest.Backend) {
		for _, f := range fs {
			t.Run(f.name, func(t *testing.T) {
				t.Parallel()
				test(t, b, f)
			})
		}
	})
}

// eachCase runs test in parallel for every backend, way and form of fs.
func eachCase(t *testing.T, fs []form, test func(*testing.T, redistest.Backend, way, form)) {
	redistest.EachBackendOf(t, redistest.AllBackends, func(t *testing.T, b redistest.Backend) {
		for _, w := range ways {
			t.Run(string(w), func(t *testing.T) {
				t.Parallel()
				for _, f := range fs {
					t.Run(f.name, func(t *testing.T) {
						t.Parallel()
						test(t, b, w, f)
					})
				}
			})
		}
	})
}

// lookupDecider decides as a caching method's request: DecideLookup
// through the node's layers. An admitted request whose stage cache could
// not be read is an error.
type lookupDecider struct{ port engine.Port }

func (l lookupDecider) Decide(ctx context.Context, req *limit.Request) (limit.Decision, error) {
	lk := &cache.Lookup{Request: cache.Request{APIID: req.API, Stage: req.Stage, Method: "GET", Path: "/items", Header: http.Header{}}}
	d, err := l.port.DecideLookup(ctx, req, lk)
	if err == nil && d.Allowed && lk.Digest == "" {
		return d, fmt.Errorf("admitted without reading the stage cache: %v", lk.Err)
	}
	return d, err
}

// mustNodes returns n nodes on backend b deciding plainly (mustNodesAs).
func mustNodes(tb testing.TB, b redistest.Backend, n int, clock *clocktest.Clock) []*node {
	return mustNodesAs(tb, b, n, clock, plain)
}

// mustNodesAs returns n nodes, each with its own client of backend b
// (one primary, Redis Cluster or Sentinel), on one fresh key prefix, their leases
// of the production lifetime, deciding their requests the way w. Each is
// closed (its leases given back) at cleanup, before its client. clock,
// when not nil, replaces Redis TIME in the scripts.
func mustNodesAs(tb testing.TB, b redistest.Backend, n int, clock *clocktest.Clock, w way) []*node {
	tb.Helper()
	_, prefix := b.Open(tb) // deletes the prefix at cleanup
	if clock == nil {
		clock = &clocktest.Clock{}
	}
	nodes := make([]*node, n)
	for i := range nodes {
		rdb := b.Dial(tb)
		e := engine.New(rdb, engine.Options{Prefix: prefix, Timeout: 5 * time.Second, Clock: clock.Now})
		t := New(e, Options{})
		tb.Cleanup(func() {
			t.Close()
			_ = e.Close()
		})
		nodes[i] = &node{e: e, t: t, top: limit.Stack(e, t.Layer), clock: clock}
		if w == cached {
			nodes[i].top = lookupDecider{engine.Port{Engine: e, Top: nodes[i].top}}
		}
	}
	return nodes
}

// load runs workers goroutines per node, each deciding req (a fresh copy
// per call) until stop returns true; it calls seen with every decision
// and returns the decisions made.
func load(t *testing.T, nodes []*node, workers int, req func() *limit.Request, stop func() bool, seen func(limit.Decision)) int64 {
	t.Helper()
	var decided atomic.Int64
	var wg sync.WaitGroup
	for _, n := range nodes {
		for range workers {
			wg.Go(func() {
				for !stop() {
					d, err := n.top.Decide(context.Background(), req())
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

// loadDeadline bounds a load that never goes quiet: far above what a load
// takes under -race on a loaded 2-core machine, so that reaching it means
// a test's failure, not the machine's speed.
const loadDeadline = 2 * time.Minute

// quiet returns a load's stop condition: a second passed without an
// admission (counted in admitted), or loadDeadline passed.
func quiet(admitted *atomic.Int64) func() bool {
	deadline := time.Now().Add(loadDeadline)
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

// usage is the usage of key "hot" in plan "p1" on the limiter's day, and
// the units left of a DAY quota of limit.
func usage(t *testing.T, n *node, quota int32) (today, left int64) {
	t.Helper()
	u, err := n.e.KeyUsage(t.Context(), "hot", "p1", &limit.Quota{Limit: quota, Period: plans.PeriodDay})
	if err != nil {
		t.Fatal(err)
	}
	return u.Today, u.Quota.Remaining
}

// countInto returns a load callback that counts admitted decisions.
func countInto(admitted *atomic.Int64) func(limit.Decision) {
	return func(d limit.Decision) {
		if d.Allowed {
			admitted.Add(1)
		}
	}
}

// trips is the round trips of the nodes so far.
func trips(nodes []*node) int64 {
	var n int64
	for _, x := range nodes {
		n += x.e.Trips()
	}
	return n
}

// Two and four nodes with leases, under load from every node: a quota
// admits exactly its limit, and usage counts exactly the admitted
// requests once the nodes gave their leases back.
func TestLeasedQuotaAdmitsExactlyItsLimit(t *testing.T) {
	t.Parallel()
	onNodes(t, forms, []int{2, 4}, leasedQuotaAdmitsExactlyItsLimit)
}

// onNodes runs test in parallel on fresh nodes, for every backend, way,
// form of fs and node count of counts.
func onNodes(t *testing.T, fs []form, counts []int, test func(*testing.T, []*node, form)) {
	eachCase(t, fs, func(t *testing.T, b redistest.Backend, w way, f form) {
		for _, n := range counts {
			t.Run(fmt.Sprintf("%d nodes", n), func(t *testing.T) {
				t.Parallel()
				test(t, mustNodesAs(t, b, n, nil, w), f)
			})
		}
	})
}

// leasedQuotaAdmitsExactlyItsLimit loads nodes until a DAY quota is spent.
func leasedQuotaAdmitsExactlyItsLimit(t *testing.T, nodes []*node, f form) {
	const quota = 6000
	var admitted atomic.Int64
	// until a second with no admission: a lease may end unspent while its
	// node's workers stop, and its units come back
	stop := quiet(&admitted)
	load(t, nodes, 8, func() *limit.Request { return f.hot(1e6, 1<<30, quota) }, stop, countInto(&admitted))
	if got := admitted.Load(); got != quota {
		t.Fatalf("admitted: got %d, want %d", got, quota)
	}
	t.Logf("%d nodes: %d round trips for %d admitted", len(nodes), trips(nodes), quota)
	for _, x := range nodes {
		x.t.Close()
	}
	if today, left := usage(t, nodes[0], quota); today != quota || left != 0 {
		t.Errorf("usage %d and quota left %d, want %d and 0", today, left, quota)
	}
}

// Two and four nodes with leases, under load from every node: a throttle
// admits at most burst + rate × (T + L) in any interval of length T
// (counted over the decisions' Redis times, each admitted request in
// every window that holds it) and at most burst + rate × T over the run
// from a full bucket (docs/leases.md).
func TestLeasedThrottleStaysWithinItsBound(t *testing.T) {
	t.Parallel()
	onNodes(t, throttles, []int{2, 4}, leasedThrottleStaysWithinItsBound)
}

// leasedThrottleStaysWithinItsBound loads nodes for 1.5 s on a throttle
// and checks its admissions against the bounds.
func leasedThrottleStaysWithinItsBound(t *testing.T, nodes []*node, f form) {
	const rate, burst = 4000.0, 400
	var mu sync.Mutex
	var times []time.Time
	end := time.Now().Add(1500 * time.Millisecond)
	decided := load(t, nodes, 8, func() *limit.Request { return f.hot(rate, burst, 0) },
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
		if bound := burst + rate*(T+DefaultLifetime).Seconds(); float64(most) > bound {
			t.Errorf("T = %v: admitted %d in one interval, more than burst + rate × (T + L) = %.0f", T, most, bound)
		}
	}
	t.Logf("%d nodes: %d decided, %d admitted over %v, %d round trips", len(nodes), decided, len(times), run, trips(nodes))
}

// A shared stage bucket (rate 0), or a rule two keys count in (a
// TOKEN_BUCKET rule of rate 0, or an hour's window), is counted exactly under leases from two nodes, on every backend:
// while a key's quota binds, the leases of the shared level (on Redis
// Cluster taken in its own slot first, each up to a quarter of what it
// has left) keep only as many tokens as the key's own levels gave and
// give the rest back, so after the quota admitted exactly its limit,
// another key is admitted exactly what the shared level has left.
func TestLeasedSharedBucketCountsExactly(t *testing.T) {
	t.Parallel()
	eachForm(t, forms, func(t *testing.T, b redistest.Backend, f form) {
		nodes := mustNodes(t, b, 2, nil)
		const shared, quota = 3000, 2000
		req := func(key string, quota int32) func() *limit.Request {
			return func() *limit.Request {
				r := f.hot(0, shared, quota) // a rule of rate 0 and burst (or limit) shared
				if len(r.Rules) == 0 {
					r = f.hot(1e6, 1<<30, quota)
					r.Buckets[1].RateLimit, r.Buckets[1].BurstLimit = 0, shared
				}
				r.KeyID = key
				return r
			}
		}
		for _, c := range []struct {
			key          string
			quota, admit int64
		}{{"quoted", quota, quota}, {"free", 0, shared - quota}} {
			var admitted atomic.Int64
			load(t, nodes, 8, req(c.key, int32(c.quota)), quiet(&admitted), countInto(&admitted))
			if got := admitted.Load(); got != c.admit {
				t.Fatalf("key %s: admitted %d, want %d", c.key, got, c.admit)
			}
		}
	})
}

// A customer quota two keys share (or a key's own, without a customer)
// admits exactly its limit under leases from two nodes, on every backend
// (on Redis Cluster the customer's slot is taken in phase 1, as a shared
// bucket's), with or without a quota of the keys' own, and when a key's
// own quota binds first (what the customer's leases took beyond it went
// back: the other key gets exactly the rest); usage counts exactly the
// admitted requests, and leases saved round trips.
func TestLeasedCustomerQuotaAdmitsExactlyItsLimit(t *testing.T) {
	t.Parallel()
	redistest.EachBackendOf(t, redistest.AllBackends, func(t *testing.T, b redistest.Backend) {
		for _, c := range []struct {
			name, customer string
			phases         []customerPhase
		}{
			{"two keys of a customer", "acme", []customerPhase{{[]string{"k1", "k2"}, 1 << 20, 3000, ""}}},
			{"two keys of a customer, no key quota", "acme", []customerPhase{{[]string{"k1", "k2"}, 0, 3000, ""}}},
			{"a key its own customer", "", []customerPhase{{[]string{"k1"}, 0, 3000, ""}}},
			{"a key's quota binds first", "acme", []customerPhase{{[]string{"k1"}, 2000, 2000, ""}, {[]string{"k2"}, 0, 1000, ""}}},
			// the keys' days start in Tokyo, the customer's in UTC: each
			// lease gives its unspent units back into each one's own period
			{"two keys of a customer on their own calendar", "acme", []customerPhase{{[]string{"k1", "k2"}, 1 << 20, 3000, "Asia/Tokyo"}}},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				customerLeases(t, b, c.customer, c.phases)
			})
		}
	})
}

// customerPhase is a load of the requests of keys in turn, each with a
// DAY quota of keyQuota (none when 0) in keyZone, that admits admit
// requests.
type customerPhase struct {
	keys     []string
	keyQuota int32
	admit    int64
	keyZone  string // where the keys' quota days start ("": UTC, as the customer's)
}

// customerLeases runs phases on two nodes, every request limited by a
// customer quota of 3000, each phase until nothing is admitted for a
// second.
func customerLeases(t *testing.T, b redistest.Backend, customer string, phases []customerPhase) {
	const customerQuota = 3000
	nodes := mustNodes(t, b, 2, nil)
	used := map[string]bool{}
	for _, ph := range phases {
		var next, admitted atomic.Int64
		zone, err := calendar.LoadZone(ph.keyZone)
		if err != nil {
			t.Fatal(err)
		}
		req := func() *limit.Request {
			r := limittest.HotRequest(1e6, 1<<30, ph.keyQuota)
			r.KeyID = ph.keys[next.Add(1)%int64(len(ph.keys))]
			r.CustomerID, r.CustomerQuota = customer, &limit.Quota{Limit: customerQuota, Period: plans.PeriodDay}
			if r.Quota != nil && ph.keyZone != "" {
				r.Quota.Zone = zone
			}
			return r
		}
		before := trips(nodes)
		decided := load(t, nodes, 8, req, quiet(&admitted), countInto(&admitted))
		if got := admitted.Load(); got != ph.admit {
			t.Fatalf("keys %v: admitted %d, want %d", ph.keys, got, ph.admit)
		}
		if n := trips(nodes) - before; n >= decided {
			t.Errorf("keys %v: %d round trips for %d decisions, want fewer (leases)", ph.keys, n, decided)
		}
		for _, k := range ph.keys {
			used[k] = true
		}
	}
	for _, x := range nodes {
		x.t.Close()
	}
	var counted int64
	for k := range used {
		u, err := nodes[0].e.KeyUsage(t.Context(), k, "p1", nil)
		if err != nil {
			t.Fatal(err)
		}
		counted += u.Today
	}
	if counted != customerQuota {
		t.Errorf("usage of the keys: %d, want %d", counted, customerQuota)
	}
}

// A cold key (a few requests per second) takes no lease, nor does a hot
// one whose caller waits for each answer (its requests never overlap):
// one round trip per request, exactly as without leases. A hot key with
// concurrent callers is admitted on leases.
func TestOnlyHotConcurrentKeysTakeLeases(t *testing.T) {
	t.Parallel()
	eachCase(t, forms, func(t *testing.T, b redistest.Backend, w way, f form) {
		nodes := mustNodesAs(t, b, 1, nil, w)
		n := nodes[0]
		// a decision's round trips: one on one primary, two on Redis
		// Cluster (the shared buckets' take, then the key's own state)
		var each int64
		for i := range 10 {
			if _, err := n.top.Decide(t.Context(), f.hot(1000, 1000, 0)); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				each = n.e.Trips()
			}
			time.Sleep(50 * time.Millisecond) // 20 requests per second: the pace is the point
		}
		if got := n.e.Trips(); got != 10*each {
			t.Errorf("cold key: got %d round trips for 10 requests, want %d", got, 10*each)
		}
		before := n.e.Trips()
		for range 1000 {
			if _, err := n.top.Decide(t.Context(), f.hot(1e6, 1<<30, 0)); err != nil {
				t.Fatal(err)
			}
		}
		if got := n.e.Trips() - before; got != 1000*each {
			t.Errorf("hot key, one caller at a time: got %d round trips for 1000 requests, want %d", got, 1000*each)
		}
		if m := metrictest.Values(t, n.t.Collectors()...); m["tollgate_lease_admitted_total"] != 0 || m["tollgate_lease_takes_total"] != 0 {
			t.Errorf("cold and sequential keys: metrics %v, want no lease taken or used", m)
		}
		before = n.e.Trips()
		var decided atomic.Int64
		load(t, nodes, 8, func() *limit.Request { return f.hot(1e6, 1<<30, 0) },
			func() bool { return decided.Load() >= 3000 }, func(limit.Decision) { decided.Add(1) })
		// (a node whose round trips take over L/2 pauses its leases: only
		// fewer round trips than requests is certain on a busy machine)
		trips := n.e.Trips() - before
		if trips >= decided.Load() {
			t.Errorf("hot key, 8 callers: got %d round trips for %d requests, want fewer (leases)", trips, decided.Load())
		}
		// the takes and what they admitted show (the takes themselves are decided below)
		m := metrictest.Values(t, n.t.Collectors()...)
		if a := m["tollgate_lease_admitted_total"]; a < 1 || a >= float64(decided.Load()) || m["tollgate_lease_takes_total"] < 1 {
			t.Errorf("hot key, 8 callers: metrics %v for %d requests, want some but not all admitted on leases, and a take", m, decided.Load())
		}
		n.t.ForgetAll()
		if m := metrictest.Values(t, n.t.Collectors()...); m["tollgate_leases_open"] != 0 || m["tollgate_lease_units_unspent"] != 0 {
			t.Errorf("after ForgetAll: metrics %v, want no lease open", m)
		}
	})
}

// A refused request takes nothing, and a lease shrinks to one as the
// quota nears empty: the last units are decided in Redis one by one, so
// concurrent callers on one node spend a quota to the last unit and no
// further.
func TestLeasesShrinkToOneNearEmpty(t *testing.T) {
	t.Parallel()
	eachForm(t, throttles, func(t *testing.T, b redistest.Backend, f form) {
		nodes := mustNodes(t, b, 1, nil)
		const quota = 500
		var admitted atomic.Int64
		load(t, nodes, 8, func() *limit.Request { return f.hot(1e6, 1<<30, quota) },
			quiet(&admitted), countInto(&admitted))
		if got := admitted.Load(); got != quota {
			t.Fatalf("admitted %d, want %d", got, quota)
		}
		nodes[0].t.Close()
		if _, left := usage(t, nodes[0], quota); left != 0 {
			t.Fatalf("quota left %d, want 0", left)
		}
	})
}

// A config change ends every open lease at once (push event:
// ForgetChange), and a request under a lower limit voids the lease it
// would have used: it is decided in Redis under the new limit, and the
// unspent units went back.
func TestConfigChangeVoidsLeases(t *testing.T) {
	t.Parallel()
	eachForm(t, throttles, configChangeVoidsLeases)
}

func configChangeVoidsLeases(t *testing.T, b redistest.Backend, f form) {
	nodes := mustNodes(t, b, 1, nil)
	n := nodes[0]
	var sent atomic.Int64
	load(t, nodes, 8, func() *limit.Request { return f.hot(1e6, 1<<30, 100000) },
		func() bool { return openLeft(n.t) > 0 || sent.Load() > 100000 }, func(limit.Decision) { sent.Add(1) })
	if openLeft(n.t) == 0 {
		t.Fatalf("no open lease after %d requests of a hot key", sent.Load())
	}
	n.t.ForgetChange(plans.Change{Version: 2, KeyHashes: []string{"x"}})
	if open := openLeft(n.t); open != 0 {
		t.Fatalf("after a change: %d units still on open leases, want 0", open)
	}
	// more than the lowered quota admitted before the change
	load(t, nodes, 8, func() *limit.Request { return f.hot(1e6, 1<<30, 100000) },
		func() bool { return sent.Load() >= 400 }, func(limit.Decision) { sent.Add(1) })
	low := f.hot(1e6, 1<<30, 100)
	low.Version = 3
	d, err := n.top.Decide(t.Context(), low)
	if err != nil {
		t.Fatal(err)
	}
	if d.Allowed || d.Refused != limit.LevelQuota {
		t.Fatalf("under a lowered quota: allowed %v refused %v, want refused by the quota", d.Allowed, d.Refused)
	}
	n.t.Close()
	if _, left := usage(t, n, 100000); 100000-left != sent.Load() {
		t.Errorf("quota used after the leases went back: got %d, want the %d admitted", 100000-left, sent.Load())
	}
}

// openLeft is the units left on t's open leases.
func openLeft(t *Table) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var n int64
	for _, en := range t.m {
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
	eachForm(t, throttles, deadNodeLosesAtMostItsOpenLeases)
}

func deadNodeLosesAtMostItsOpenLeases(t *testing.T, b redistest.Backend, f form) {
	const quota = 4000
	nodes := mustNodes(t, b, 2, nil)
	dead, alive := nodes[0], nodes[1]
	var admitted atomic.Int64
	req := func() *limit.Request { return f.hot(1e6, 1<<30, quota) }
	load(t, nodes, 8, req, func() bool { return admitted.Load() >= quota/2 }, countInto(&admitted))
	// The node dies: it admits nothing more and gives nothing back.
	dead.t.mu.Lock()
	dead.t.closed = true
	var lostUnits, lostUsage int64
	for _, en := range dead.t.m {
		if l := en.open; l != nil {
			lostUnits += int64(l.left)
			lostUsage += int64(l.spent)
			l.timer.Stop()
			en.open = nil
		}
	}
	dead.t.mu.Unlock()
	load(t, []*node{alive}, 8, req, quiet(&admitted), countInto(&admitted))
	alive.t.Close()
	if got := admitted.Load(); got != quota-lostUnits {
		t.Errorf("admitted: got %d, want %d (the quota less the %d units on the dead node's leases)", got, quota-lostUnits, lostUnits)
	}
	if today, _ := usage(t, alive, quota); today != admitted.Load()-lostUsage {
		t.Errorf("usage: got %d, want %d admitted less %d admitted on the dead node's open leases", today, admitted.Load()-lostUsage, lostUsage)
	}
	t.Logf("dead node held %d units and %d uncounted requests", lostUnits, lostUsage)
}

// overlapped returns a table on core whose shape of req has been seen
// overlapping and hot, so its next decision takes a lease; node is the
// table's clock.
func overlapped(t *testing.T, core Unleaser, node *clocktest.Clock, req *limit.Request) *Table {
	t.Helper()
	tb := New(core, Options{Clock: node.Now})
	t.Cleanup(tb.Close)
	s, _ := shapeOf(req)
	tb.mu.Lock()
	tb.m[s] = &entry{slot: node.Now(), cur: 1000, overlap: node.Now()}
	tb.mu.Unlock()
	return tb
}

// A lease taken just before Redis's midnight (a DAY quota's period end)
// admits nothing after it, by the node's clock counted from the take: the
// next request is decided below, in the new period, and the requests
// admitted on the lease are counted on the take's day.
func TestLeaseEndsBeforeItsPeriodEnds(t *testing.T) {
	t.Parallel()
	eachForm(t, throttles, leaseEndsBeforeItsPeriodEnds)
}

func leaseEndsBeforeItsPeriodEnds(t *testing.T, b redistest.Backend, f form) {
	redis := clocktest.New(time.Date(2026, 6, 15, 23, 59, 59, 950_000_000, time.UTC))
	nodeClock := clocktest.New(time.Date(2026, 6, 15, 8, 0, 0, 0, time.UTC)) // hours away from Redis's
	nodes := mustNodes(t, b, 1, redis)
	e := nodes[0].e
	// a quota that leaves every level more than 4 × the lease's want: no
	// level of another slot takes more than the lease keeps (no give-back)
	req := f.hot(1e6, 1<<30, 10000)
	tb := overlapped(t, e, nodeClock, req)
	top := limit.Stack(e, tb.Layer)
	d, err := top.Decide(t.Context(), req)
	if err != nil || !d.Allowed || d.Granted < 2 {
		t.Fatalf("take: %+v, %v, want a lease", d, err)
	}
	take := e.Trips()                    // one on one primary, two on Redis Cluster
	nodeClock.Add(40 * time.Millisecond) // Redis's 23:59:59.990: still the lease's period
	if d, err := top.Decide(t.Context(), req); err != nil || !d.Allowed || d.Quota.Reset.Day() != 16 {
		t.Fatalf("10 ms before midnight: %+v, %v, want admitted in the day that ends at midnight", d, err)
	}
	if got := e.Trips(); got != take {
		t.Fatalf("10 ms before midnight: %d round trips, want %d (the take's; admitted on the lease)", got, take)
	}
	nodeClock.Add(20 * time.Millisecond) // Redis's 00:00:00.010
	redis.Add(60 * time.Millisecond)
	d, err = top.Decide(t.Context(), req)
	if err != nil || !d.Allowed || d.Quota.Reset.Day() != 17 || d.Quota.Remaining < 9990 {
		t.Fatalf("10 ms after midnight: %+v, %v, want admitted in the new day's period", d, err)
	}
	if got := e.Trips(); got <= take {
		t.Fatalf("10 ms after midnight: %d round trips, want the request decided in Redis", got)
	}
	tb.Close()
	days, err := e.KeyUsage(t.Context(), "hot", "p1", nil)
	if err != nil || days.Today != 1 {
		t.Fatalf("usage of the new day: %+v, %v, want 1 (the requests of the lease count on its day)", days, err)
	}
	redis.Add(-time.Second)
	if old, err := e.KeyUsage(t.Context(), "hot", "p1", nil); err != nil || old.Today != 2 {
		t.Fatalf("usage of the lease's day: %+v, %v, want 2", old, err)
	}
}

// The same on a real Redis whose wall clock the test steps (one primary,
// a Redis Cluster of three masters on one stepped clock, and a Sentinel's
// primary and replica on one), the node's
// clock hours away from it: a lease taken in the last 50 ms before
// Redis's midnight ends, by the node's clock counted from its send, no
// later than Redis's midnight as the take's reply read it; the next
// request is decided in Redis in the new day, and the requests of the
// lease count on the take's day.
func TestLeaseEndsBeforeRedisMidnightOnASteppedClock(t *testing.T) {
	t.Parallel()
	for _, b := range []struct {
		name string
		open func(*testing.T, *redistest.SteppedClock) redis.UniversalClient
	}{
		{"primary", func(t *testing.T, c *redistest.SteppedClock) redis.UniversalClient {
			return redistest.MustServerOn(t, c).Client
		}},
		{"cluster", func(t *testing.T, c *redistest.SteppedClock) redis.UniversalClient {
			return redistest.MustClusterStepped(t, 3, c, "--cluster-node-timeout", "60000")
		}},
		{"sentinel", func(t *testing.T, c *redistest.SteppedClock) redis.UniversalClient {
			return redistest.MustSentinelOn(t, c).Dial(t)
		}},
	} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			midnight := time.Date(2030, 6, 16, 0, 0, 0, 0, time.UTC)
			clock := redistest.NewSteppedClock(t, time.Until(midnight.Add(-10*time.Second)))
			rdb := b.open(t, clock)
			leaseEndsBeforeRedisMidnight(t, rdb, clock, midnight)
		})
	}
}

func leaseEndsBeforeRedisMidnight(t *testing.T, rdb redis.UniversalClient, clock *redistest.SteppedClock, midnight time.Time) {
	e := engine.New(rdb, engine.Options{Prefix: redistest.MustPrefix(t), Timeout: 5 * time.Second})
	t.Cleanup(func() { _ = e.Close() })
	nodeClock := clocktest.New(time.Date(2030, 6, 15, 8, 0, 0, 0, time.UTC)) // hours away from Redis's
	var tb *Table
	var top limit.Decider
	var req *limit.Request
	var d limit.Decision
	for attempt := 0; ; attempt++ { // a take that a busy machine sends late comes after midnight
		req = limittest.HotRequest(1e6, 1<<30, 10000) // no level of another slot takes more than the lease keeps
		req.KeyID = fmt.Sprintf("edge%d", attempt)
		tb = overlapped(t, e, nodeClock, req)
		top = limit.Stack(e, tb.Layer)
		clock.At(t, midnight.Add(-50*time.Millisecond))
		var err error
		if d, err = top.Decide(t.Context(), req); err != nil || !d.Allowed || d.Granted < 2 {
			t.Fatalf("take: %+v, %v, want a lease", d, err)
		}
		if d.Now.Before(midnight) {
			break
		}
		if attempt == 9 {
			t.Fatalf("ten takes read Redis's time after midnight (the last %v)", d.Now)
		}
	}
	left := midnight.Sub(d.Now) // by Redis's clock, from the take
	take := e.Trips()
	nodeClock.Add(left / 2)
	if d, err := top.Decide(t.Context(), req); err != nil || !d.Allowed || !d.Quota.Reset.Equal(midnight) {
		t.Fatalf("%v before midnight: %+v, %v, want admitted in the day that ends at midnight", left/2, d, err)
	}
	if got := e.Trips(); got != take {
		t.Fatalf("%v before midnight: %d round trips, want %d (admitted on the lease)", left/2, got, take)
	}
	nodeClock.Add(left - left/2)
	clock.At(t, midnight.Add(10*time.Millisecond))
	d, err := top.Decide(t.Context(), req)
	if err != nil || !d.Allowed || !d.Quota.Reset.Equal(midnight.Add(24*time.Hour)) || d.Quota.Remaining < 9990 {
		t.Fatalf("at midnight by the node's clock: %+v, %v, want admitted in the new day's period", d, err)
	}
	if got := e.Trips(); got <= take {
		t.Fatalf("at midnight by the node's clock: %d round trips, want the request decided in Redis", got)
	}
	tb.Close()
	days, err := e.KeyUsage(t.Context(), req.KeyID, "p1", nil)
	if err != nil || days.Today != 1 {
		t.Fatalf("usage of the new day: %+v, %v, want 1 (the requests of the lease count on its day)", days, err)
	}
	clock.At(t, midnight.Add(-time.Second))
	if old, err := e.KeyUsage(t.Context(), req.KeyID, "p1", nil); err != nil || old.Today != 2 {
		t.Fatalf("usage of the lease's day: %+v, %v, want 2", old, err)
	}
}

// A lease of a window rule taken just before its window ends (an hour's
// window, at 13:00; the quota's day goes on) admits nothing after the
// window's end, by the node's clock counted from the take: the next
// request is decided in Redis, in the new window, and the lease's unspent
// units go back to the window of the take (a fixed window's new count
// keeps them; a sliding window's previous count gets them).
func TestLeaseEndsBeforeItsWindowEnds(t *testing.T) {
	t.Parallel()
	eachForm(t, forms[len(throttles):], leaseEndsBeforeItsWindowEnds)
}

func leaseEndsBeforeItsWindowEnds(t *testing.T, b redistest.Backend, f form) {
	redis := clocktest.New(time.Date(2026, 6, 15, 12, 59, 59, 950_000_000, time.UTC))
	nodeClock := clocktest.New(time.Date(2026, 6, 15, 20, 0, 0, 0, time.UTC)) // hours away from Redis's
	nodes := mustNodes(t, b, 1, redis)
	e := nodes[0].e
	req := f.hot(0, 1000, 100000)
	tb := overlapped(t, e, nodeClock, req)
	top := limit.Stack(e, tb.Layer)
	end := time.Date(2026, 6, 15, 13, 0, 0, 0, time.UTC)
	d, err := top.Decide(t.Context(), req)
	if err != nil || !d.Allowed || d.Granted < 2 || !d.Rules[0].State.Reset.Equal(end) {
		t.Fatalf("take: %+v, %v, want a lease in the window that ends at 13:00", d, err)
	}
	// (on Redis Cluster the take's phase 3 may still add a round trip in
	// the background: whether a request went to Redis is read from the
	// table's count of requests admitted on leases)
	take := e.Trips()                    // one on one primary, two on Redis Cluster
	onLease, _ := tb.counts()            // the take itself is decided in Redis
	nodeClock.Add(40 * time.Millisecond) // Redis's 12:59:59.990
	if d, err := top.Decide(t.Context(), req); err != nil || !d.Allowed {
		t.Fatalf("10 ms before the window's end: %+v, %v, want admitted", d, err)
	}
	if a, _ := tb.counts(); a != onLease+1 {
		t.Fatalf("10 ms before the window's end: %d requests admitted on the lease, want %d (admitted on the lease)", a, onLease+1)
	}
	nodeClock.Add(20 * time.Millisecond) // Redis's 13:00:00.010
	redis.Add(60 * time.Millisecond)
	d, err = top.Decide(t.Context(), req)
	if a, _ := tb.counts(); err != nil || !d.Allowed || !d.Rules[0].State.Reset.Equal(end.Add(time.Hour)) || e.Trips() <= take || a != onLease+1 {
		t.Fatalf("10 ms after the window's end: %+v, %v, %d round trips, %d admitted on leases, want decided in Redis in the next window", d, err, e.Trips(), a)
	}
	tb.Close()
	// The take and the request on its lease count in the old window (a
	// sliding window's previous count: 2 × (1 − 10 ms / 1 h) of it), the
	// request after the end and this one in the new.
	last, err := e.Decide(t.Context(), req)
	if err != nil || !last.Allowed {
		t.Fatalf("after the give-backs: %+v, %v", last, err)
	}
	want := int64(998)
	if f.hot(0, 1, 0).Rules[0].Algorithm == limit.SlidingWindow {
		want = 996
	}
	if got := last.Rules[0].State.Remaining; got != want {
		t.Errorf("after the give-backs: remaining %d, want %d", got, want)
	}
}

// A fresh burst of B under many concurrent callers admits exactly B, on
// one node and on two: a refusal while a lease may still give units back
// is admitted on the node's own lease, or decided again once the units
// are back, never lost.
func TestBurstUnderConcurrencyAdmitsExactlyTheBurst(t *testing.T) {
	t.Parallel()
	eachCase(t, forms, func(t *testing.T, b redistest.Backend, w way, f form) {
		for _, n := range []int{1, 2} {
			t.Run(fmt.Sprintf("%d nodes", n), func(t *testing.T) {
				t.Parallel()
				burstUnderConcurrency(t, b, n, w, f)
			})
		}
	})
}

// burstUnderConcurrency checks five fresh bursts of 20 on n nodes of b.
func burstUnderConcurrency(t *testing.T, b redistest.Backend, n int, w way, f form) {
	for round := range 5 {
		nodes := mustNodesAs(t, b, n, nil, w)
		req := f.hot(0.01, 20, 0)
		req.KeyID = fmt.Sprintf("burst%d", round)
		admitted := hammertest.Count(100, 1, func(i, _ int) bool {
			r := *req
			d, err := nodes[i%n].top.Decide(context.Background(), &r)
			if err != nil {
				t.Errorf("Decide: %v", err)
			}
			return d.Allowed
		})
		if got := admitted; got != 20 {
			t.Fatalf("round %d: admitted %d of 100, want the burst of 20", round, got)
		}
	}
}

// One caller sending one request at a time, alternately to two nodes with
// leases on, sees X-RateLimit-Remaining fall by exactly one per request:
// its requests never overlap, so it is decided in Redis every time.
func TestOneCallerSeesRemainingFallByOne(t *testing.T) {
	t.Parallel()
	eachCase(t, throttles, func(t *testing.T, b redistest.Backend, w way, f form) {
		nodes := mustNodesAs(t, b, 2, nil, w)
		const quota = 3000
		var last int64 = quota
		for i := range 600 {
			d, err := nodes[i%2].top.Decide(t.Context(), f.hot(1e6, 1<<30, quota))
			if err != nil || !d.Allowed {
				t.Fatalf("request %d: %+v, %v", i+1, d, err)
			}
			if d.Quota.Remaining != last-1 {
				t.Fatalf("request %d: remaining %d after %d, want %d", i+1, d.Quota.Remaining, last, last-1)
			}
			last = d.Quota.Remaining
		}
	})
}

// The layer against the reference model (its tiny core): a lease is taken
// only by an overlapping hot shape, spent locally, and given back with the
// usage of what was spent; the model's quota and usage agree with the
// admissions.
func TestLeasesOnTheModel(t *testing.T) {
	t.Parallel()
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			leasesOnTheModel(t, f)
		})
	}
}

// checkHeld fails t unless tb's lease metrics count what its entries
// hold: the leases installed and their units left.
func checkHeld(t *testing.T, tb *Table) {
	t.Helper()
	tb.mu.Lock()
	open, units := 0, 0
	for _, en := range tb.m {
		if en.open != nil {
			open++
			units += int(en.open.left)
		}
	}
	tb.mu.Unlock()
	if o, u := tb.held(); o != open || u != units {
		t.Fatalf("lease metrics: %d open, %d unspent; the entries hold %d and %d", o, u, open, units)
	}
}

func leasesOnTheModel(t *testing.T, f form) {
	redis := clocktest.New(time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC))
	core := &limittest.Model{Clock: redis.Now}
	nodeClock := clocktest.New(time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC))
	req := f.hot(1e6, 1<<30, 100)
	tb := overlapped(t, core, nodeClock, req)
	top := limit.Stack(core, tb.Layer)
	admitted := 0
	for range 150 {
		d, err := top.Decide(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			admitted++
		}
		checkHeld(t, tb)
	}
	tb.Close()
	checkHeld(t, tb)
	if admitted != 100 || core.QuotaUsed("hot", "p1") != 100 || core.Usage("hot", "p1", redis.Now()) != 100 {
		t.Fatalf("admitted %d, quota used %d, usage %d, want 100 each", admitted, core.QuotaUsed("hot", "p1"), core.Usage("hot", "p1", redis.Now()))
	}
	if n := core.Decisions(); n >= 150 {
		t.Errorf("decisions below: %d for 150 requests, want fewer (leases)", n)
	}
}
