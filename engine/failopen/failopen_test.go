package failopen

import (
	"context"
	"crypto/sha256"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/engine"
	"tollgate/internal/clocktest"
	"tollgate/internal/faultnet"
	"tollgate/internal/metrictest"
	"tollgate/internal/redistest"
	"tollgate/internal/waittest"
	"tollgate/limit"
	"tollgate/limit/limittest"
	"tollgate/plans"
	"tollgate/usage"
)

// flaky is the model as the layer's core, failing decisions while down,
// as a limiter that does not answer does (no run sent).
type flaky struct {
	*limittest.Model
	down atomic.Bool
}

func (f *flaky) Decide(ctx context.Context, req *limit.Request) (limit.Decision, error) {
	if f.down.Load() {
		return limit.Decision{}, &limit.UndecidedError{At: f.Clock(), Err: errors.New("down")}
	}
	return f.Model.Decide(ctx, req)
}

func (f *flaky) Charge(ctx context.Context, charges []limit.Charge) ([]limit.Charge, error) {
	if f.down.Load() {
		return charges, errors.New("down")
	}
	return f.Model.Charge(ctx, charges)
}

// keyRequest is keyID's request in plan p1 with a DAY quota of 1000.
func keyRequest(keyID string) *limit.Request {
	return &limit.Request{KeyID: keyID, PlanID: "p1", API: "a1", Stage: "prod",
		Buckets: []limit.Bucket{{Level: limit.LevelStage, RateLimit: 1e6, BurstLimit: 1e6, Method: "GET", Path: "/x"}},
		Quota:   &limit.Quota{Limit: 1000, Period: plans.PeriodDay}}
}

// On the model: decisions that fail while the core is down become
// pending charges (a keyed request's quota and usage; nothing for a
// request without a key, nor for one the caller left, nor for one that
// awaits the restore), counted once the core answers, without any more
// traffic, in the day of their admission.
func TestPendingChargesCountedWhenTheCoreAnswers(t *testing.T) {
	t.Parallel()
	clock := clocktest.New(time.Date(2026, 6, 15, 23, 59, 0, 0, time.UTC))
	core := &flaky{Model: &limittest.Model{Clock: clock.Now}}
	ch := New(core, Options{Interval: 10 * time.Millisecond})
	t.Cleanup(ch.Close)
	top := limit.Stack(core, ch.Layer)
	if _, err := top.Decide(t.Context(), keyRequest("k")); err != nil {
		t.Fatal(err)
	}
	core.down.Store(true)
	for range 3 {
		if _, err := top.Decide(t.Context(), keyRequest("k")); err == nil {
			t.Fatal("a decision while down succeeded")
		}
	}
	_, _ = top.Decide(t.Context(), &limit.Request{API: "a1", Stage: "prod"}) // no key: nothing to charge
	left, cancel := context.WithCancel(t.Context())
	cancel()
	_, _ = top.Decide(left, keyRequest("k")) // the caller left: not admitted
	if p, _ := ch.Pending(); p != 3 {
		t.Fatalf("pending: got %d, want 3", p)
	}
	clock.Add(2 * time.Minute) // the next day: charges count on the day of their admission
	core.down.Store(false)
	waittest.Until(t, "the charges counted", 20*time.Second, func() bool { p, _ := ch.Pending(); return p == 0 })
	if got := core.Usage("k", "p1", clock.Now().Add(-time.Hour)); got != 4 {
		t.Errorf("usage of the day of admission: got %d, want 4", got)
	}
	if got := core.Usage("k", "p1", clock.Now()); got != 0 {
		t.Errorf("usage of the next day: got %d, want 0", got)
	}
}

// Pending charges are bounded: beyond MaxPending distinct (key, run, day)
// a request is dropped, and counted as dropped.
func TestPendingChargesAreBounded(t *testing.T) {
	t.Parallel()
	core := &flaky{Model: &limittest.Model{Clock: time.Now}}
	core.down.Store(true)
	ch := New(core, Options{MaxPending: 2})
	t.Cleanup(ch.Close)
	top := limit.Stack(core, ch.Layer)
	for _, k := range []string{"a", "b", "c", "a"} {
		_, _ = top.Decide(t.Context(), keyRequest(k))
	}
	if p, d := ch.Pending(); p != 3 || d != 1 {
		t.Fatalf("pending %d dropped %d, want 3 and 1", p, d)
	}
	got := metrictest.Values(t, ch.Collectors()...)
	if got["tollgate_limiter_pending_charges"] != 3 || got["tollgate_limiter_dropped_charges_total"] != 1 {
		t.Errorf("metrics %v, want 3 pending and 1 dropped", got)
	}
}

// node is an engine with the fail-open layer stacked on it.
type node struct {
	e   *engine.Engine
	ch  *Charges
	top limit.Decider
}

func newNode(t *testing.T, rdb redis.UniversalClient, opts engine.Options) *node {
	t.Helper()
	e := engine.New(rdb, opts)
	ch := New(e, Options{})
	t.Cleanup(func() { ch.Close(); _ = e.Close() })
	return &node{e: e, ch: ch, top: limit.Stack(e, ch.Layer)}
}

// usageToday is the usage of keyID in p1 on the limiter's day and the
// units left of its quota (keyRequest's).
func (n *node) usageToday(t *testing.T, keyID string) (int64, int64) {
	t.Helper()
	u, err := n.e.KeyUsage(t.Context(), keyID, "p1", keyRequest(keyID).Quota)
	if err != nil {
		t.Fatal(err)
	}
	return u.Today, u.Quota.Remaining
}

// A Redis that is down fails decisions open, and every request so admitted
// is charged to the quota and usage within a second of Redis answering,
// with no more traffic, so both count every admission.
func TestRedisDownFailsOpenAndChargesWhenBack(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.MustClient(t)
	proxy := faultnet.MustProxy(t, rdb.Options().Addr)
	client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), MaxRetries: -1, DialTimeout: 100 * time.Millisecond,
		ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	n := newNode(t, client, engine.Options{Prefix: prefix, Timeout: 2 * time.Second})
	admitted := 0
	for range 3 {
		if d, err := n.top.Decide(t.Context(), keyRequest("k1")); err != nil || !d.Allowed {
			t.Fatalf("Decide: %+v, %v", d, err)
		}
		admitted++
	}
	proxy.Cut()
	for range 5 {
		if _, err := n.top.Decide(t.Context(), keyRequest("k1")); err == nil {
			t.Fatal("a decision while Redis is down succeeded")
		}
		admitted++ // the failure mode open admits it
	}
	if p, _ := n.ch.Pending(); p != 5 {
		t.Fatalf("pending charges while Redis is down: got %d, want 5", p)
	}
	proxy.Restore()
	waittest.Until(t, "the charges counted", 20*time.Second, func() bool { p, _ := n.ch.Pending(); return p == 0 })
	if today, left := n.usageToday(t, "k1"); today != int64(admitted) || left != int64(1000-admitted) {
		t.Fatalf("after Redis came back: usage %d, quota left %d; want %d and %d", today, left, admitted, 1000-admitted)
	}
}

// A decision whose run reached a stalled Redis fails (its reply does not
// come) and is admitted open; its run runs when Redis resumes. The request
// is counted once, not twice: the charge names the run, and the run
// window says it ran.
func TestAStalledRunIsCountedOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.MustServerProcess(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	n := newNode(t, client, engine.Options{Prefix: "t", Timeout: 50 * time.Millisecond})
	if d, err := n.top.Decide(t.Context(), keyRequest("k1")); err != nil || !d.Allowed {
		t.Fatalf("Decide: %+v, %v", d, err)
	}
	srv.Pause(t)
	_, err := n.top.Decide(t.Context(), keyRequest("k1"))
	var ue *limit.UndecidedError
	if !errors.As(err, &ue) || ue.Run == 0 {
		t.Fatalf("decision on a stalled Redis: got %v, want undecided, naming its run", err)
	}
	srv.Resume(t)
	waittest.Until(t, "the charge settled", 20*time.Second, func() bool { p, _ := n.ch.Pending(); return p == 0 })
	if today, left := n.usageToday(t, "k1"); today != 2 || left != 998 {
		t.Fatalf("usage %d, quota left %d; want 2 and 998 (each request once)", today, left)
	}
}

// Requests admitted open while the limiter Redis lost its data are
// charged after the admin restored it, whatever comes back first: the
// charges wait while the slot awaits its restore, and count after it.
func TestOutageChargesCountAfterTheRestore(t *testing.T) {
	t.Parallel()
	srv := redistest.MustServerProcess(t)
	proxy := faultnet.MustProxy(t, srv.Addr)
	client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true, DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { _ = client.Close() })
	admin := usage.New(srv.Client, usage.Options{Prefix: "t"})
	if _, err := admin.Restore(t.Context(), emptyLedger{}); err != nil { // a fresh limiter
		t.Fatal(err)
	}
	n := newNode(t, client, engine.Options{Prefix: "t", Timeout: 50 * time.Millisecond, AwaitRestore: true})
	for range 3 {
		if d, err := n.top.Decide(t.Context(), keyRequest("k1")); err != nil || !d.Allowed {
			t.Fatalf("Decide: %+v, %v", d, err)
		}
	}
	proxy.Cut()
	for range 4 {
		if _, err := n.top.Decide(t.Context(), keyRequest("k1")); err == nil {
			t.Fatal("a decision while Redis is down succeeded")
		}
	}
	if err := srv.Client.FlushAll(t.Context()).Err(); err != nil { // the limiter lost its data
		t.Fatal(err)
	}
	proxy.Restore()
	waittest.Until(t, "Redis answering, unrestored", 20*time.Second, func() bool {
		_, err := n.e.Decide(t.Context(), keyRequest("probe"))
		return errors.Is(err, limit.ErrNotRestored)
	})
	if p, _ := n.ch.Pending(); p != 4 {
		t.Fatalf("pending before the restore: %d, want 4 (charges wait for it)", p)
	}
	if _, err := admin.Restore(t.Context(), emptyLedger{}); err != nil {
		t.Fatal(err)
	}
	waittest.Until(t, "the charges counted", 20*time.Second, func() bool { p, _ := n.ch.Pending(); return p == 0 })
	if today, left := n.usageToday(t, "k1"); today != 4 || left != 996 {
		t.Fatalf("after the restore: usage %d, quota left %d; want 4 and 996 (the admissions of the outage)", today, left)
	}
}

// emptyLedger is a restore's ledger with nothing in it.
type emptyLedger struct{}

func (emptyLedger) QuotaUsages(context.Context, string, string, int) ([]plans.QuotaUsage, error) {
	return nil, nil
}
func (emptyLedger) UsageDays(context.Context, plans.UsageQuery) ([]plans.UsageDay, error) {
	return nil, nil
}
func (emptyLedger) CustomerQuotaUsages(context.Context, time.Time) ([]plans.CustomerQuotaUsage, error) {
	return nil, nil
}

// With both cores saturated (GOMAXPROCS goroutines of CPU work beside 64
// concurrent callers on each of two nodes sharing one Redis) and the
// production deadline, a quota of N admits exactly N, counting the
// requests a failure mode "open" would admit, and usage says N. Not
// parallel: its spinning goroutines would slow the package's other tests.
func TestQuotaExactWithBothCoresSaturated(t *testing.T) {
	if testing.Short() {
		t.Skip("saturates the machine")
	}
	const quota, workers = 2000, 64
	rdb, prefix := redistest.MustClient(t)
	second := redis.NewClient(rdb.Options())
	t.Cleanup(func() { _ = second.Close() })
	nodes := []*node{newNode(t, rdb, engine.Options{Prefix: prefix}), newNode(t, second, engine.Options{Prefix: prefix})}
	stop := make(chan struct{})
	var spin sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		spin.Go(func() {
			buf := make([]byte, 4096)
			for {
				select {
				case <-stop:
					return
				default:
					sum := sha256.Sum256(buf)
					buf[0] = sum[0]
				}
			}
		})
	}
	var admitted, open, refused atomic.Int64
	var wg sync.WaitGroup
	for _, n := range nodes {
		for range workers {
			wg.Go(func() {
				req := &limit.Request{KeyID: "k1", PlanID: "p1", API: "api1", Stage: "prod",
					Buckets: []limit.Bucket{{Level: limit.LevelPlan, RateLimit: 1e6, BurstLimit: 1e6},
						{Level: limit.LevelAccount, RateLimit: 1e6, BurstLimit: 1e6}},
					Quota: &limit.Quota{Limit: quota, Period: plans.PeriodDay}}
				for seen := 0; seen < 20; {
					d, err := n.top.Decide(context.Background(), req)
					switch {
					case err != nil:
						if open.Add(1) == 1 {
							t.Logf("first failed decision: %v", err)
						}
					case d.Allowed:
						admitted.Add(1)
					default:
						refused.Add(1)
						seen++
					}
				}
			})
		}
	}
	wg.Wait()
	close(stop)
	spin.Wait()
	for _, n := range nodes {
		waittest.Until(t, "the charges counted", 20*time.Second, func() bool { p, _ := n.ch.Pending(); return p == 0 })
		if _, dropped := n.ch.Pending(); dropped != 0 {
			t.Errorf("dropped charges: %d", dropped)
		}
	}
	t.Logf("admitted %d by decision, %d without one; %d refusals", admitted.Load(), open.Load(), refused.Load())
	if got := admitted.Load() + open.Load(); got != quota {
		t.Errorf("admitted %d (%d without a decision), want exactly the quota %d", got, open.Load(), quota)
	}
	u, err := nodes[0].e.KeyUsage(t.Context(), "k1", "p1", nil)
	if err != nil || u.Today != quota {
		t.Errorf("usage: got %d (%v), want %d", u.Today, err, quota)
	}
}

// On the model: a settle is sent at once; while the core fails it is
// tried again after a backoff (not only every Interval, which is an hour
// here) and counted once the core answers: the settled cost's difference
// on the quota and the customer quota, the request in usage. A request
// decided uncounted that fails open is left to its settle.
func TestSettlesAreTriedAgainUntilCounted(t *testing.T) {
	t.Parallel()
	clock := clocktest.New(time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC))
	core := &flaky{Model: &limittest.Model{Clock: clock.Now}}
	ch := New(core, Options{Interval: time.Hour})
	t.Cleanup(ch.Close)
	top := limit.Stack(core, ch.Layer)
	req := keyRequest("k")
	req.Cost, req.Uncounted, req.CustomerID, req.CustomerQuota = 10, true, "acme", &limit.Quota{Limit: 1000}
	d, err := top.Decide(t.Context(), req)
	if err != nil || !d.Allowed {
		t.Fatalf("Decide: %+v, %v", d, err)
	}
	core.down.Store(true)
	if _, err := top.Decide(t.Context(), req); err == nil {
		t.Fatal("a decision while down succeeded")
	}
	if p, _ := ch.Pending(); p != 0 {
		t.Fatalf("pending after an uncounted request failed open: %d, want 0 (its settle charges it)", p)
	}
	s := limit.Settlement{Req: req, PeriodStart: d.Quota.Reset.Add(-d.Quota.Window), At: d.Now, Charge: 15, Count: true, Units: 25}
	if err := ch.Settle(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	waittest.Until(t, "two failed tries", 20*time.Second, func() bool { return ch.Failures() >= 2 })
	core.down.Store(false)
	waittest.Until(t, "the settle counted", 20*time.Second, func() bool { p, _ := ch.Pending(); return p == 0 })
	if used := core.QuotaUsed("k", "p1"); used != 25 {
		t.Errorf("quota used %d, want 25 (the reservation and the difference)", used)
	}
	if got := core.Usage("k", "p1", clock.Now()); got != 1 {
		t.Errorf("usage %d, want 1", got)
	}
	if d, err := top.Decide(t.Context(), req); err != nil || d.Customer == nil || d.Customer.Remaining != 1000-25-10 {
		t.Errorf("the next decision: customer quota %+v, %v; want %d left (the settled 25 and its reservation of 10)", d.Customer, err, 1000-25-10)
	}
}

// On the model: two requests failed open on one UTC day and in one
// period of the key's own quota, but on either side of the customer
// quota's period start (the plan's month begins at midnight in Tokyo, the
// key's on the 15th in UTC), are charged apart: each counts in its own
// customer period, and the one after the start is not lost with the
// period that ended.
func TestFailOpenChargesKeepTheirCustomerPeriods(t *testing.T) {
	t.Parallel()
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	clock := clocktest.New(time.Date(2026, 11, 30, 14, 59, 0, 0, time.UTC)) // 23:59 in Tokyo
	core := &flaky{Model: &limittest.Model{Clock: clock.Now}}
	ch := New(core, Options{Interval: time.Hour})
	t.Cleanup(ch.Close)
	top := limit.Stack(core, ch.Layer)
	req := keyRequest("k")
	req.Quota = &limit.Quota{Limit: 1000, Period: plans.PeriodMonth, Anchor: 15}
	req.CustomerID, req.CustomerQuota = "acme", &limit.Quota{Limit: 100, Period: plans.PeriodMonth, Anchor: 1, Zone: tokyo}
	core.down.Store(true)
	for _, step := range []time.Duration{0, 2 * time.Minute} { // 23:59 and 00:01 in Tokyo
		clock.Add(step)
		if _, err := top.Decide(t.Context(), req); err == nil {
			t.Fatal("a decision while down succeeded")
		}
	}
	if p, _ := ch.Pending(); p != 2 {
		t.Fatalf("pending: got %d, want 2", p)
	}
	core.down.Store(false)
	ch.kickNow()
	waittest.Until(t, "the charges counted", 20*time.Second, func() bool { p, _ := ch.Pending(); return p == 0 })
	d, err := top.Decide(t.Context(), req)
	if err != nil || !d.Allowed {
		t.Fatalf("Decide: %+v, %v", d, err)
	}
	if d.Customer == nil || d.Customer.Remaining != 98 {
		t.Fatalf("customer quota %+v, want 98 left in December (the admission of 00:01 and this one)", d.Customer)
	}
	if used := core.QuotaUsed("k", "p1"); used != 3 {
		t.Errorf("key quota used %d, want 3", used)
	}
}
