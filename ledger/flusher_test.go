package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"tollgate/internal/clocktest"
	"tollgate/internal/redistest"
	"tollgate/internal/waittest"
	"tollgate/ledger"
	"tollgate/ledger/ledgertest"
	"tollgate/plans"
	"tollgate/plans/postgres"
	"tollgate/plans/postgres/postgrestest"
)

var (
	ctx    = context.Background()
	today  = time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	before = today.AddDate(0, 0, -1)
)

// world is a fresh ledger database and a Redis usage source (its keys
// under prefix in rdb).
type world struct {
	db     *postgres.DB
	src    *ledgertest.RedisSource
	rdb    *redis.Client
	prefix string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	t.Parallel()
	rdb, prefix := redistest.MustClient(t)
	return &world{db: postgrestest.MustDB(t), src: ledgertest.NewRedisSource(rdb, prefix), rdb: rdb, prefix: prefix}
}

func (w *world) count(t *testing.T, keyID, planID string, day time.Time, n int64) {
	t.Helper()
	if err := w.src.Count(ctx, keyID, planID, day, n); err != nil {
		t.Fatal(err)
	}
}

// ledger returns every ledger row as "plan/key/day" → count.
func (w *world) ledger(t *testing.T) map[string]int64 {
	t.Helper()
	rows, err := w.db.UsageDays(ctx, plans.UsageQuery{From: today.AddDate(-1, 0, 0), To: today.AddDate(1, 0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, r := range rows {
		out[r.PlanID+"/"+r.KeyID+"/"+r.Day.Format(plans.UsageDateLayout)] = r.Count
	}
	return out
}

func wantLedger(t *testing.T, got, want map[string]int64) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got ledger %v, want %v", got, want)
	}
}

func (w *world) held(t *testing.T) int64 {
	t.Helper()
	n, err := w.src.Held(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func mustFlush(t *testing.T, f *ledger.Flusher) bool {
	t.Helper()
	more, err := f.Flush(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return more
}

func TestFlushMovesCountsAndQuotaStateIntoTheLedger(t *testing.T) {
	w := newWorld(t)
	f := ledger.NewFlusher(w.src, w.db, ledger.Options{})
	w.count(t, "k1", "p1", before.Add(23*time.Hour), 4)
	w.count(t, "k1", "p1", today, 2)
	w.count(t, "k2", "p1", today, 1)
	if err := w.src.SetQuota(ctx, "k1", "p1", plans.QuotaCount{PeriodStart: today, Count: 2, Seq: 6}); err != nil {
		t.Fatal(err)
	}
	if mustFlush(t, f) {
		t.Fatal("got more after a small drain, want none")
	}
	wantLedger(t, w.ledger(t), map[string]int64{"p1/k1/2026-03-09": 4, "p1/k1/2026-03-10": 2, "p1/k2/2026-03-10": 1})
	qs, err := w.db.QuotaUsages(ctx, "", "", 0)
	if err != nil || len(qs) != 1 || qs[0].Count != 2 || qs[0].Seq != 6 || !qs[0].PeriodStart.Equal(today) {
		t.Fatalf("got quota states %+v (%v), want k1/p1 count 2 seq 6 from %v", qs, err, today)
	}
	if n := w.held(t); n != 0 {
		t.Fatalf("got %d pairs still held after the flush, want every one acknowledged", n)
	}

	w.count(t, "k1", "p1", today, 3) // more traffic: the absolute count is 5
	mustFlush(t, f)
	mustFlush(t, f) // nothing changed: writes nothing
	wantLedger(t, w.ledger(t), map[string]int64{"p1/k1/2026-03-09": 4, "p1/k1/2026-03-10": 5, "p1/k2/2026-03-10": 1})
}

// flaky is the real store, failing its next writes while fail > 0.
type flaky struct {
	ledger.Store
	fail atomic.Int32
}

func (s *flaky) FlushUsage(ctx context.Context, b *plans.UsageBatch) (int64, error) {
	if s.fail.Add(-1) >= 0 {
		return 0, errors.New("connection refused")
	}
	return s.Store.FlushUsage(ctx, b)
}

func TestFailedWritesKeepTheUsageAndRetry(t *testing.T) {
	w := newWorld(t)
	store := &flaky{Store: w.db}
	store.fail.Store(2)
	f := ledger.NewFlusher(w.src, store, ledger.Options{})
	w.count(t, "k1", "p1", today, 3)
	for i := range 2 {
		if _, err := f.Flush(ctx); err == nil {
			t.Fatalf("flush %d: got no error while PostgreSQL fails, want one", i)
		}
		if n := w.held(t); n != 1 {
			t.Fatalf("flush %d: got %d pairs held, want the drained pair kept unacknowledged", i, n)
		}
	}
	w.count(t, "k1", "p1", today, 1) // counted during the outage: handed out again later
	if !mustFlush(t, f) {
		t.Fatal("a flush that only wrote what a failed one had drained: got no more, want more (the source may have changed since)")
	}
	wantLedger(t, w.ledger(t), map[string]int64{"p1/k1/2026-03-10": 3})
	mustFlush(t, f)
	wantLedger(t, w.ledger(t), map[string]int64{"p1/k1/2026-03-10": 4})
	if got := metric(t, f, "tollgate_ledger_flush_errors_total"); got != 2 {
		t.Fatalf("tollgate_ledger_flush_errors_total: got %v, want 2", got)
	}
}

func TestUsageHeldByAWorkerThatDiedIsFlushedByAnother(t *testing.T) {
	w := newWorld(t)
	w.count(t, "k1", "p1", today, 7)
	if _, _, err := w.src.Drain(ctx, 10); err != nil { // a worker drains, then dies
		t.Fatal(err)
	}
	f := ledger.NewFlusher(w.src, w.db, ledger.Options{})
	mustFlush(t, f)
	wantLedger(t, w.ledger(t), map[string]int64{})
	if err := w.src.Requeue(ctx); err != nil { // its hold expires
		t.Fatal(err)
	}
	mustFlush(t, f)
	wantLedger(t, w.ledger(t), map[string]int64{"p1/k1/2026-03-10": 7})
}

func TestConcurrentFlushersAgreeWithTheCounters(t *testing.T) {
	w := newWorld(t)
	// Two admin nodes flush while traffic is counted; each drain sees the
	// counters at some moment. At the end the ledger must equal them.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		f := ledger.NewFlusher(w.src, w.db, ledger.Options{DrainLimit: 2})
		wg.Go(func() {
			for {
				if _, err := f.Flush(ctx); err != nil {
					errs <- err
					return
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		})
	}
	want := map[string]int64{}
	for i := range 60 {
		k, day := fmt.Sprintf("k%d", i%5), today.AddDate(0, 0, -(i%2))
		w.count(t, k, "p1", day, 1)
		want["p1/"+k+"/"+day.Format(plans.UsageDateLayout)]++
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	mustFlush(t, ledger.NewFlusher(w.src, w.db, ledger.Options{}))
	wantLedger(t, w.ledger(t), want)
}

func TestFlushDrainsAtMostMaxDrainsPagesAndReportsMore(t *testing.T) {
	w := newWorld(t)
	for i := range 7 {
		w.count(t, fmt.Sprintf("k%d", i), "p1", today, 1)
	}
	clock := clocktest.New(today)
	f := ledger.NewFlusher(w.src, w.db, ledger.Options{DrainLimit: 2, MaxDrains: 2, Now: clock.Now})
	clock.Add(time.Minute)
	if !mustFlush(t, f) {
		t.Fatal("got no more after two full pages, want more")
	}
	if got := len(w.ledger(t)); got != 4 {
		t.Fatalf("got %d rows after one flush, want 4", got)
	}
	if lag := f.Lag(); lag != time.Minute {
		t.Fatalf("got lag %v while the source holds more, want it not advanced (1m)", lag)
	}
	if mustFlush(t, f) {
		t.Fatal("got more after a short page, want none")
	}
	if got := len(w.ledger(t)); got != 7 {
		t.Fatalf("got %d rows, want 7", got)
	}
	if lag := f.Lag(); lag != 0 {
		t.Fatalf("got lag %v after the source was emptied, want 0", lag)
	}
}

func TestLagGrowsWhileWritesFail(t *testing.T) {
	w := newWorld(t)
	store := &flaky{Store: w.db}
	clock := clocktest.New(today)
	f := ledger.NewFlusher(w.src, store, ledger.Options{Now: clock.Now})
	lag := func() float64 { return metric(t, f, "tollgate_ledger_lag_seconds") }
	clock.Add(3 * time.Second)
	mustFlush(t, f)
	clock.Add(2 * time.Second)
	if got := lag(); got != 2 {
		t.Fatalf("lag after a good flush and 2 s: got %v, want 2", got)
	}
	store.fail.Store(1)
	w.count(t, "k1", "p1", today, 1)
	if _, err := f.Flush(ctx); err == nil {
		t.Fatal("got no error, want the write to fail")
	}
	clock.Add(5 * time.Second)
	if got := lag(); got != 7 {
		t.Fatalf("lag after a failed flush: got %v, want 7 (since the last good one)", got)
	}
	if got := metric(t, f, "tollgate_ledger_pending_observations"); got != 1 {
		t.Fatalf("pending observations: got %v, want 1", got)
	}
	mustFlush(t, f) // the retry writes what the failed flush drained at 5 s
	if got := lag(); got != 5 {
		t.Fatalf("lag after the retry: got %v, want 5 (since the failed flush drained)", got)
	}
}

func TestInvalidObservationsAreDroppedAndCounted(t *testing.T) {
	w := newWorld(t)
	f := ledger.NewFlusher(w.src, w.db, ledger.Options{})
	w.count(t, "bad", "p1", today, -5)
	w.count(t, "good", "p1", today, 1)
	mustFlush(t, f)
	wantLedger(t, w.ledger(t), map[string]int64{"p1/good/2026-03-10": 1})
	if got := metric(t, f, "tollgate_ledger_dropped_observations_total"); got != 1 {
		t.Fatalf("dropped observations: got %v, want 1", got)
	}
}

func TestRunFlushesEveryIntervalAndOnceMoreWhenStopped(t *testing.T) {
	w := newWorld(t)
	f := ledger.NewFlusher(w.src, w.db, ledger.Options{Interval: 20 * time.Millisecond})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { f.Run(runCtx); close(done) }()
	w.count(t, "k1", "p1", today, 1)
	waittest.Until(t, "the running flusher writing the count", 30*time.Second, func() bool { return w.ledger(t)["p1/k1/2026-03-10"] == 1 })
	// Stop the ticks, then count: only Run's final flush can write this.
	f2 := ledger.NewFlusher(w.src, w.db, ledger.Options{Interval: time.Hour})
	cancel()
	<-done
	w.count(t, "k1", "p1", today, 1)
	stopped, stop := context.WithCancel(ctx)
	stop()
	f2.Run(stopped)
	wantLedger(t, w.ledger(t), map[string]int64{"p1/k1/2026-03-10": 2})
}

// metric gathers f's collectors and returns the sum of the samples of the
// metric named name (counters, gauges).
func metric(t *testing.T, f *ledger.Flusher, name string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(f.Collectors()...)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		var sum float64
		for _, m := range mf.GetMetric() {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
		return sum
	}
	t.Fatalf("no metric %s among the flusher's collectors", name)
	return 0
}

// blockingStore is the real store whose first write waits until release
// is closed, after closing writing.
type blockingStore struct {
	ledger.Store
	writing, release chan struct{}
	once             sync.Once
}

func (s *blockingStore) FlushUsage(ctx context.Context, b *plans.UsageBatch) (int64, error) {
	s.once.Do(func() {
		close(s.writing)
		<-s.release
	})
	return s.Store.FlushUsage(ctx, b)
}

// A clean stop while a flush is writing writes everything counted before
// the stop: the write in progress is not cut off, and the final flush
// drains what was counted while it ran (6 then 1: the ledger has 7).
func TestStopDuringAWriteStillFlushesEverythingCounted(t *testing.T) {
	w := newWorld(t)
	store := &blockingStore{Store: w.db, writing: make(chan struct{}), release: make(chan struct{})}
	f := ledger.NewFlusher(w.src, store, ledger.Options{Interval: time.Hour})
	w.count(t, "k1", "p1", today, 6)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { f.Run(runCtx); close(done) }()
	<-store.writing // the first flush drained the 6 and is writing them
	w.count(t, "k1", "p1", today, 1)
	cancel() // the clean stop
	close(store.release)
	<-done
	wantLedger(t, w.ledger(t), map[string]int64{"p1/k1/2026-03-10": 7})
}

// A drain that fails after the source took pairs loses none of them: the
// next flush writes them (TestAdminNodeFlushesUsageIntoTheLedger's 6 vs 7:
// a failed read kept the pairs held for good).
func TestAFailedDrainLosesNothing(t *testing.T) {
	w := newWorld(t)
	f := ledger.NewFlusher(w.src, w.db, ledger.Options{})
	w.count(t, "k1", "p1", today, 6)
	w.count(t, "k2", "p1", today, 1)
	k2Usage := w.prefix + ":usage:{k2}:p1" // RedisSource's layout
	if err := w.rdb.HSet(ctx, k2Usage, "2026-03-10", "unreadable").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Flush(ctx); err == nil {
		t.Fatal("a flush whose drain could not read the counts: got no error")
	}
	if err := w.rdb.HSet(ctx, k2Usage, "2026-03-10", "1").Err(); err != nil {
		t.Fatal(err)
	}
	mustFlush(t, f)
	wantLedger(t, w.ledger(t), map[string]int64{"p1/k1/2026-03-10": 6, "p1/k2/2026-03-10": 1})
}

// deadlineStore is the real store that records the deadline of each
// write's context.
type deadlineStore struct {
	ledger.Store
	deadlines []time.Time
}

func (s *deadlineStore) FlushUsage(ctx context.Context, b *plans.UsageBatch) (int64, error) {
	d, _ := ctx.Deadline()
	s.deadlines = append(s.deadlines, d)
	return s.Store.FlushUsage(ctx, b)
}

// The flushes Run makes once stopped get Options.StopTimeout (the node's
// shutdown timeout), not a fixed budget of their own.
func TestRunGivesTheFinalFlushTheStopTimeout(t *testing.T) {
	w := newWorld(t)
	store := &deadlineStore{Store: w.db}
	f := ledger.NewFlusher(w.src, store, ledger.Options{Interval: time.Hour, Timeout: time.Hour, StopTimeout: 10 * time.Minute})
	w.count(t, "k1", "p1", today, 1)
	stopped, stop := context.WithCancel(ctx)
	stop()
	start := time.Now()
	f.Run(stopped)
	wantLedger(t, w.ledger(t), map[string]int64{"p1/k1/2026-03-10": 1})
	if len(store.deadlines) != 1 || store.deadlines[0].Sub(start) < 9*time.Minute {
		t.Fatalf("final flush deadlines %v after a stop at %v: want one about 10 minutes later", store.deadlines, start)
	}
}
