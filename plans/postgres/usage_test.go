package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/internal/waittest"
	"tollgate/plans"
	"tollgate/plans/postgres"
	"tollgate/plans/postgres/postgrestest"
)

var (
	day1 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	day2 = day1.AddDate(0, 0, 1)
	day3 = day1.AddDate(0, 0, 2)
)

// batch builds a UsageBatch from observations.
func batch(obs ...plans.UsageObservation) *plans.UsageBatch {
	b := &plans.UsageBatch{}
	for _, o := range obs {
		b.Add(o)
	}
	return b
}

// seen is an observation of keyID in planID: day → absolute count.
func seen(planID, keyID string, days map[time.Time]int64) plans.UsageObservation {
	o := plans.UsageObservation{KeyID: keyID, PlanID: planID}
	for d, n := range days {
		o.Days = append(o.Days, plans.DayCount{Day: d, Count: n})
	}
	return o
}

func flush(t *testing.T, db *postgres.DB, obs ...plans.UsageObservation) int64 {
	t.Helper()
	n, err := db.FlushUsage(ctx, batch(obs...))
	must(t, err)
	return n
}

// allDays returns every ledger row of planID ("" for all plans).
func allDays(t *testing.T, db *postgres.DB, planID string) []plans.UsageDay {
	t.Helper()
	rows, err := db.UsageDays(ctx, plans.UsageQuery{PlanID: planID, From: day1.AddDate(-1, 0, 0), To: day1.AddDate(1, 0, 0)})
	must(t, err)
	return rows
}

// counts is the rows as "plan/key/day" → count.
func counts(rows []plans.UsageDay) map[string]int64 {
	out := map[string]int64{}
	for _, r := range rows {
		out[r.PlanID+"/"+r.KeyID+"/"+r.Day.Format(plans.UsageDateLayout)] = r.Count
	}
	return out
}

func wantCounts(t *testing.T, rows []plans.UsageDay, want map[string]int64) {
	t.Helper()
	got := counts(rows)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got ledger %v, want %v", got, want)
	}
}

func TestFlushUsageKeepsTheGreaterCountAndIsIdempotent(t *testing.T) {
	db := newDB(t)
	first := seen("p1", "k1", map[time.Time]int64{day1: 5, day2.Add(13 * time.Hour): 2})
	if n := flush(t, db, first); n != 2 {
		t.Fatalf("first flush: got %d rows changed, want 2", n)
	}
	before := allDays(t, db, "p1")
	if n := flush(t, db, first); n != 0 {
		t.Fatalf("same flush again: got %d rows changed, want 0", n)
	}
	if n := flush(t, db, seen("p1", "k1", map[time.Time]int64{day1: 3})); n != 0 {
		t.Fatalf("a lower count: got %d rows changed, want 0", n)
	}
	after := allDays(t, db, "p1")
	for i := range after {
		if after[i] != before[i] {
			t.Fatalf("row %d: got %+v after repeated and lower flushes, want it unchanged %+v", i, after[i], before[i])
		}
	}
	wantCounts(t, after, map[string]int64{"p1/k1/2026-03-01": 5, "p1/k1/2026-03-02": 2})

	if n := flush(t, db, seen("p1", "k1", map[time.Time]int64{day2: 7})); n != 1 {
		t.Fatalf("a higher count: got %d rows changed, want 1", n)
	}
	raised := allDays(t, db, "p1")
	wantCounts(t, raised, map[string]int64{"p1/k1/2026-03-01": 5, "p1/k1/2026-03-02": 7})
	if raised[1].Version <= before[1].Version || raised[0].Version != before[0].Version {
		t.Fatalf("got versions %d, %d after raising day 2, want day 1 at %d and day 2 above %d",
			raised[0].Version, raised[1].Version, before[0].Version, before[1].Version)
	}
	if !raised[1].UpdatedAt.After(before[1].UpdatedAt) {
		t.Fatalf("got updatedAt %v, want later than %v", raised[1].UpdatedAt, before[1].UpdatedAt)
	}
	if n := flush(t, db); n != 0 {
		t.Fatalf("empty flush: got %d, want 0", n)
	}
}

func TestFlushUsageOfOneBatchTakesTheHighestCountPerDay(t *testing.T) {
	db := newDB(t)
	flush(t, db,
		seen("p1", "k1", map[time.Time]int64{day1: 4}),
		seen("p1", "k1", map[time.Time]int64{day1.Add(23 * time.Hour): 9}),
		seen("p1", "k1", map[time.Time]int64{day1: 6, day2: 0}))
	wantCounts(t, allDays(t, db, ""), map[string]int64{"p1/k1/2026-03-01": 9})
}

func TestConcurrentFlushesNeverDoubleCount(t *testing.T) {
	db := newDB(t)
	// Eight flushers each observe the same growing counters at different
	// moments and in different orders; the ledger must end at the final
	// counts, whatever the interleaving.
	const steps = 30
	keys := []string{"ka", "kb", "kc"}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range steps {
				n := int64(rng.IntN(steps)) + 1
				k := keys[rng.IntN(len(keys))]
				if _, err := db.FlushUsage(ctx, batch(seen("p1", k, map[time.Time]int64{day1: n * 10, day2: n}))); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, k := range keys { // the final observation of every counter
		flush(t, db, seen("p1", k, map[time.Time]int64{day1: (steps + 1) * 10, day2: steps + 1}))
	}
	want := map[string]int64{}
	for _, k := range keys {
		want["p1/"+k+"/2026-03-01"], want["p1/"+k+"/2026-03-02"] = (steps+1)*10, steps+1
	}
	wantCounts(t, allDays(t, db, "p1"), want)
}

// TestRecordFeedMissesNothingWhileFlushesRun follows the feed with a
// cursor while concurrent flushes raise counts, and checks that upserting
// every record it read by (plan, key, day) gives exactly the ledger.
func TestRecordFeedMissesNothingWhileFlushesRun(t *testing.T) {
	db := newDB(t)
	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, 8)
	for w := range 4 {
		wg.Go(func() {
			for i := range 40 {
				o := seen("p1", fmt.Sprintf("k%d", (i+w)%7), map[time.Time]int64{day1.AddDate(0, 0, i%3): int64(i*4 + w + 1)})
				if _, err := db.FlushUsage(ctx, batch(o)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	go func() { wg.Wait(); close(done) }()
	synced := map[string]plans.UsageDay{}
	var after int64
	follow := func() {
		for {
			recs, err := db.UsageRecords(ctx, after, 7)
			must(t, err)
			if len(recs) == 0 {
				return
			}
			for _, r := range recs {
				if r.Version <= after {
					t.Fatalf("got version %d after cursor %d, want versions above it in order", r.Version, after)
				}
				after = r.Version
				id := r.PlanID + "/" + r.KeyID + "/" + r.Day.Format(plans.UsageDateLayout)
				if old, ok := synced[id]; ok && old.Count > r.Count {
					t.Fatalf("%s: got count %d at version %d, want no less than %d seen at version %d", id, r.Count, r.Version, old.Count, old.Version)
				}
				synced[id] = r
			}
		}
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		follow()
	}
	follow()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var rows []plans.UsageDay
	for _, r := range synced {
		rows = append(rows, r)
	}
	wantCounts(t, rows, counts(allDays(t, db, "p1")))
}

// TestFlushWaitsForAnotherFlushToCommit holds the ledger's writer lock open
// in another transaction, with a version drawn: FlushUsage must wait for
// it, so its own versions are drawn after the other one is visible.
func TestFlushWaitsForAnotherFlushToCommit(t *testing.T) {
	db, url := newDBAt(t)
	conn := mustConn(t, url)
	tx, err := conn.Begin(ctx)
	must(t, err)
	_, err = tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, postgres.UsageWriterLock)
	must(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO usage_days (plan_id, key_id, day, count, updated_at) VALUES ('p1', 'held', $1, 1, now())`, day1)
	must(t, err)
	flushed := flushAsync(db, seen("p1", "k1", map[time.Time]int64{day1: 1}))
	waitForLockWait(t, conn, "advisory", flushed)
	must(t, tx.Commit(ctx))
	must(t, <-flushed)
	recs, err := db.UsageRecords(ctx, 0, 10)
	must(t, err)
	if len(recs) != 2 || recs[0].KeyID != "held" || recs[1].KeyID != "k1" {
		t.Fatalf("got records %+v, want the held row's version before the waiting flush's", recs)
	}
}

// TestFlushLetsVacuumRun stops a flush midway (a row it raises is locked
// by another transaction): VACUUM and ANALYZE of usage_days must not wait
// for it. A table lock that conflicts with theirs (SHARE UPDATE EXCLUSIVE)
// would let autovacuum be cancelled by every flush, and queue flushes
// behind an anti-wraparound vacuum.
func TestFlushLetsVacuumRun(t *testing.T) {
	db, url := newDBAt(t)
	flush(t, db, seen("p1", "k1", map[time.Time]int64{day1: 1}))
	conn := mustConn(t, url)
	tx, err := conn.Begin(ctx)
	must(t, err)
	_, err = tx.Exec(ctx, `SELECT 1 FROM usage_days WHERE key_id = 'k1' FOR UPDATE`)
	must(t, err)
	flushed := flushAsync(db, seen("p1", "k1", map[time.Time]int64{day1: 2}))
	waitForLockWait(t, conn, "transactionid", flushed)
	vacuum := mustConn(t, url)
	_, err = vacuum.Exec(ctx, `SET lock_timeout = '5s'`)
	must(t, err)
	for _, sql := range []string{`VACUUM usage_days`, `ANALYZE usage_days`} {
		if _, err := vacuum.Exec(ctx, sql); err != nil {
			t.Errorf("%s while a flush was under way: %v, want it to run", sql, err)
		}
	}
	must(t, tx.Commit(ctx))
	must(t, <-flushed)
}

// newDBAt returns a store on a fresh database (real clock) and the
// database's URL. It marks the test parallel.
func newDBAt(t *testing.T) (*postgres.DB, string) {
	t.Helper()
	t.Parallel()
	url := postgrestest.MustURL(t)
	db, err := postgres.Open(ctx, url, postgres.Options{})
	must(t, err)
	t.Cleanup(db.Close)
	return db, url
}

// flushAsync flushes obs in a goroutine and delivers FlushUsage's error.
func flushAsync(db *postgres.DB, obs ...plans.UsageObservation) <-chan error {
	flushed := make(chan error, 1)
	go func() {
		_, err := db.FlushUsage(ctx, batch(obs...))
		flushed <- err
	}()
	return flushed
}

// mustConn returns a connection of its own to url, closed at cleanup.
func mustConn(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	must(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// waitForLockWait waits until a backend of conn's database waits for a lock
// of type lockType (pg_stat_activity.wait_event), failing t if done delivers first
// or nothing waits within a minute.
func waitForLockWait(t *testing.T, conn *pgx.Conn, lockType string, done <-chan error) {
	t.Helper()
	waittest.Until(t, "a backend waiting for a "+lockType+" lock", time.Minute, func() bool {
		select {
		case err := <-done:
			t.Fatalf("FlushUsage returned %v, want it to wait for a %s lock", err, lockType)
		default:
		}
		var waiting bool
		err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = $1)`, lockType).Scan(&waiting)
		must(t, err)
		return waiting
	})
}

func TestQuotaStateKeepsTheNewestSequence(t *testing.T) {
	db := newDB(t)
	march, april := day1, day1.AddDate(0, 1, 0)
	quota := func(keyID string, start time.Time, count, seq int64) plans.UsageObservation {
		return plans.UsageObservation{KeyID: keyID, PlanID: "p1", Quota: &plans.QuotaCount{PeriodStart: start, Count: count, Seq: seq}}
	}
	stored := func() map[string]plans.QuotaCount {
		t.Helper()
		qs, err := db.QuotaUsages(ctx, "", "", 0)
		must(t, err)
		out := map[string]plans.QuotaCount{}
		for _, q := range qs {
			out[q.KeyID+"/"+q.PlanID] = q.QuotaCount
		}
		return out
	}
	flush(t, db, quota("k1", march, 40, 40), quota("k2", march, 3, 3))
	flush(t, db, quota("k1", march, 10, 41)) // UpdateUsage lowered the count: kept
	flush(t, db, quota("k1", march, 39, 39)) // an older observation, late: ignored
	flush(t, db, quota("k2", april, 1, 9), quota("k2", march, 8, 8))
	got := stored()
	want := map[string]plans.QuotaCount{
		"k1/p1": {PeriodStart: march, Count: 10, Seq: 41},
		"k2/p1": {PeriodStart: april, Count: 1, Seq: 9},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got quota states %v, want %v", got, want)
	}
}

func TestQuotaUsagesPagesByKeyThenPlan(t *testing.T) {
	db := newDB(t)
	var obs []plans.UsageObservation
	for _, kp := range [][2]string{{"kb", "p1"}, {"ka", "p2"}, {"ka", "p1"}, {"kc", "p0"}} {
		obs = append(obs, plans.UsageObservation{KeyID: kp[0], PlanID: kp[1], Quota: &plans.QuotaCount{PeriodStart: day1, Count: 1, Seq: 1}})
	}
	flush(t, db, obs...)
	var got []string
	key, plan := "", ""
	for {
		page, err := db.QuotaUsages(ctx, key, plan, 3)
		must(t, err)
		if len(page) == 0 {
			break
		}
		for _, q := range page {
			got = append(got, q.KeyID+"/"+q.PlanID)
		}
		key, plan = page[len(page)-1].KeyID, page[len(page)-1].PlanID
	}
	if want := "[ka/p1 ka/p2 kb/p1 kc/p0]"; fmt.Sprint(got) != want {
		t.Fatalf("got %v, want %s", got, want)
	}
}

func TestUsageDaysSelectsPlanKeysAndDaysAndPages(t *testing.T) {
	db := newDB(t)
	gold, _ := newKey(t, db, "gold-key")
	_, err := db.UpdateApiKey(ctx, gold.ID, func(k *plans.ApiKey) error { k.CustomerID = "cust-7"; return nil })
	must(t, err)
	flush(t, db,
		seen("p1", gold.ID, map[time.Time]int64{day1: 1, day2: 2, day3: 3}),
		seen("p1", "gone", map[time.Time]int64{day2: 4}),
		seen("p2", gold.ID, map[time.Time]int64{day2: 5}))

	rows, err := db.UsageDays(ctx, plans.UsageQuery{PlanID: "p1", From: day2, To: day3})
	must(t, err)
	wantCounts(t, rows, map[string]int64{"p1/" + gold.ID + "/2026-03-02": 2, "p1/" + gold.ID + "/2026-03-03": 3, "p1/gone/2026-03-02": 4})
	for _, r := range rows {
		wantName, wantCustomer := "gold-key", "cust-7"
		if r.KeyID == "gone" {
			wantName, wantCustomer = "", "" // a key that no longer exists keeps its usage
		}
		if r.KeyName != wantName || r.CustomerID != wantCustomer {
			t.Fatalf("%s: got name %q customer %q, want %q %q", r.KeyID, r.KeyName, r.CustomerID, wantName, wantCustomer)
		}
	}
	rows, err = db.UsageDays(ctx, plans.UsageQuery{PlanID: "p1", KeyIDs: []string{"gone"}, From: day1, To: day3})
	must(t, err)
	wantCounts(t, rows, map[string]int64{"p1/gone/2026-03-02": 4})

	paged := pageDays(t, db, plans.UsageQuery{From: day1, To: day3, Limit: 2})
	if len(paged) != 5 {
		t.Fatalf("got %d rows over pages, want 5: %+v", len(paged), paged)
	}
	wantCounts(t, paged, counts(allDays(t, db, "")))
	wantDayOrder(t, paged)
	p1 := pageDays(t, db, plans.UsageQuery{PlanID: "p1", From: day1, To: day3, Limit: 1})
	wantCounts(t, p1, counts(allDays(t, db, "p1")))
	wantDayOrder(t, p1)
}

// pageDays reads every row q selects, page by page.
func pageDays(t *testing.T, db *postgres.DB, q plans.UsageQuery) []plans.UsageDay {
	t.Helper()
	var out []plans.UsageDay
	for {
		page, err := db.UsageDays(ctx, q)
		must(t, err)
		if len(page) == 0 {
			return out
		}
		out = append(out, page...)
		last := page[len(page)-1]
		q.After = &plans.UsageCursor{PlanID: last.PlanID, KeyID: last.KeyID, Day: last.Day}
	}
}

// wantDayOrder fails t unless rows come in (day, plan, key) order, the
// order of the index exports and restores walk (migration 000007).
func wantDayOrder(t *testing.T, rows []plans.UsageDay) {
	t.Helper()
	for i := 1; i < len(rows); i++ {
		a, b := rows[i-1], rows[i]
		if !a.Day.Before(b.Day) && !(a.Day.Equal(b.Day) && a.PlanID+" "+a.KeyID < b.PlanID+" "+b.KeyID) {
			t.Fatalf("got row %s/%s/%s before %s/%s/%s, want (day, plan, key) order", a.Day.Format(plans.UsageDateLayout), a.PlanID, a.KeyID,
				b.Day.Format(plans.UsageDateLayout), b.PlanID, b.KeyID)
		}
	}
}
