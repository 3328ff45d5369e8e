package engine

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/calendar"
	"tollgate/engine/lease"
	"tollgate/internal/redistest"
	"tollgate/limit"
)

// anchoredQuota returns a quota of n units per period anchored at anchor
// ("" none) in zone ("" UTC), or fails the test.
func anchoredQuota(tb testing.TB, n int32, period, anchor, zone string) *limit.Quota {
	tb.Helper()
	a, err := calendar.ParseAnchor(period, anchor)
	if err != nil {
		tb.Fatal(err)
	}
	loc, err := calendar.LoadZone(zone)
	if err != nil {
		tb.Fatal(err)
	}
	q := &limit.Quota{Limit: n, Period: period, Anchor: a}
	if loc != time.UTC {
		q.Zone = loc
	}
	return q
}

// anchorEdges are period starts where a period function goes wrong: month
// ends, a leap day, days whose clocks change, a zone a quarter hour off.
var anchorEdges = []struct {
	name                 string
	period, anchor, zone string
	edge                 string
}{
	{"the 15th in Tokyo", calendar.Month, "15", "Asia/Tokyo", "2026-12-14T15:00:00Z"},
	{"the last day of a leap February in New York", calendar.Month, "last", "America/New_York", "2028-02-29T05:00:00Z"},
	{"the last day of a short February in Berlin", calendar.Month, "last", "Europe/Berlin", "2027-02-27T23:00:00Z"},
	{"the 8th of March in New York, when clocks go forward", calendar.Month, "8", "America/New_York", "2026-03-08T05:00:00Z"},
	{"a Sunday in London, when clocks go forward", calendar.Week, "SUN", "Europe/London", "2026-03-29T00:00:00Z"},
	{"the 5th of April in Sydney, when clocks go back", calendar.Month, "5", "Australia/Sydney", "2026-04-04T13:00:00Z"},
	{"the day Santiago skips midnight", calendar.Day, "", "America/Santiago", "2026-09-06T04:00:00Z"},
	{"a Monday in Kathmandu (+05:45)", calendar.Week, "MON", "Asia/Kathmandu", "2026-11-29T18:15:00Z"},
	{"the last day of November in UTC", calendar.Month, "last", "", "2026-11-30T00:00:00Z"},
}

// An anchored period turns at local midnight of its day in its zone, on
// Redis's clock: a key refused at its limit just before the edge is still
// refused a second before it and admitted a second after, with the next
// period's length, and KeyUsage tells the same period. The engine's
// estimate of Redis time is months off at every step (the clock jumps), so
// each step also exercises the table sent again around Redis's time.
func TestAnchoredPeriodsTurnAtLocalMidnightOnRedisClock(t *testing.T) {
	srv := redistest.MustServerStepped(t, 0)
	for _, tc := range anchorEdges {
		t.Run(tc.name, func(t *testing.T) {
			edge, err := time.Parse(time.RFC3339, tc.edge)
			if err != nil {
				t.Fatal(err)
			}
			q := anchoredQuota(t, 3, tc.period, tc.anchor, tc.zone)
			if s, _ := q.Calendar().Bounds(edge); !s.Equal(edge) {
				t.Fatalf("the calendar starts the period holding %s at %s", edge, s)
			}
			_, next := q.Calendar().Bounds(edge)
			e := mustLoaded(t, New(srv.Client, Options{Prefix: redistest.MustPrefix(t), Timeout: testTimeout}))
			req := &limit.Request{KeyID: "k1", PlanID: "p1", API: "a1", Stage: "prod", Quota: q}

			srv.ClockAt(t, edge.Add(-90*time.Second))
			for i := range 3 {
				if d, err := e.Decide(t.Context(), req); err != nil || !d.Allowed || !d.Quota.Reset.Equal(edge) {
					t.Fatalf("request %d before the edge: %+v %v, want admitted in the period ending %s", i+1, d, err, edge)
				}
			}
			d, err := e.Decide(t.Context(), req)
			if err != nil || d.Allowed || d.Refused != limit.LevelQuota || d.RetryAfter > 91*time.Second || d.RetryAfter < 60*time.Second {
				t.Fatalf("the 4th request: %+v %v, want refused by the quota until the edge, 90 s away", d, err)
			}
			srv.ClockAt(t, edge.Add(-2*time.Second))
			if d, err := e.Decide(t.Context(), req); err != nil || d.Allowed {
				t.Fatalf("2 s before the edge: %+v %v, want refused", d, err)
			}
			srv.ClockAt(t, edge.Add(2*time.Second))
			d, err = e.Decide(t.Context(), req)
			if err != nil || !d.Allowed || !d.Quota.Reset.Equal(next) || d.Quota.Window != next.Sub(edge) || d.Quota.Remaining != 2 {
				t.Fatalf("2 s after the edge: %+v %v, want admitted in [%s, %s) with 2 left", d, err, edge, next)
			}
			u, err := e.KeyUsage(t.Context(), "k1", "p1", q)
			if err != nil || !u.Quota.Reset.Equal(next) || u.Quota.Remaining != 2 {
				t.Fatalf("KeyUsage after the edge: %+v %v, want 2 left until %s", u.Quota, err, next)
			}
			// a month on, with a stale estimate again: the reads find it too
			srv.ClockAt(t, next.Add(time.Minute))
			u, err = e.KeyUsage(t.Context(), "k1", "p1", q)
			if _, after := q.Calendar().Bounds(next); err != nil || !u.Quota.Reset.Equal(after) || u.Quota.Remaining != 3 {
				t.Fatalf("KeyUsage a period on: %+v %v, want 3 left until %s", u.Quota, err, after)
			}
		})
	}
}

// Over two and four nodes with capacity leases on, an anchored quota
// admits exactly its limit in the period before the edge and exactly its
// limit in the period after, every admission counted in the period
// Redis's clock put it in.
func TestAnchoredQuotaIsExactOverNodesWithLeases(t *testing.T) {
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprintf("%d nodes", n), func(t *testing.T) { anchoredQuotaOverNodes(t, n) })
	}
}

func anchoredQuotaOverNodes(t *testing.T, nodeCount int) {
	srv := redistest.MustServerStepped(t, 0)
	prefix := redistest.MustPrefix(t)
	edge := time.Date(2026, 12, 14, 15, 0, 0, 0, time.UTC) // the 15th in Tokyo
	const limitN = 120
	q := anchoredQuota(t, limitN, calendar.Month, "15", "Asia/Tokyo")
	_, next := q.Calendar().Bounds(edge)
	type node struct {
		top    limit.Decider
		leases *lease.Table
	}
	var nodes []node
	for range nodeCount {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = c.Close() })
		e := mustLoaded(t, New(c, Options{Prefix: prefix, Timeout: testTimeout}))
		t.Cleanup(func() { _ = e.Close() })
		leases := lease.New(e, lease.Options{})
		t.Cleanup(leases.Close)
		nodes = append(nodes, node{top: limit.Stack(e, leases.Layer), leases: leases})
	}
	req := func() *limit.Request {
		return &limit.Request{KeyID: "hot", PlanID: "p1", API: "a1", Stage: "prod", Quota: q,
			Buckets: []limit.Bucket{{Level: limit.LevelPlan, RateLimit: 1e6, BurstLimit: 1 << 30}}}
	}
	// hammer sends from every node at once until each sender is refused
	// with no lease out, and counts admissions by the period end they
	// report
	hammer := func() map[time.Time]int64 {
		var mu sync.Mutex
		got := map[time.Time]int64{}
		var wg sync.WaitGroup
		var failed atomic.Value
		for _, n := range nodes {
			for range 8 / nodeCount {
				wg.Go(func() {
					for {
						d, err := n.top.Decide(t.Context(), req())
						if err != nil {
							failed.Store(err)
							return
						}
						if d.Allowed {
							mu.Lock()
							got[d.Quota.Reset]++
							mu.Unlock()
							continue
						}
						if d.LeaseWait == 0 && !d.Remembered {
							return
						}
						time.Sleep(time.Millisecond) // a lease may give units back
					}
				})
			}
		}
		wg.Wait()
		if err, _ := failed.Load().(error); err != nil {
			t.Fatal(err)
		}
		return got
	}
	srv.ClockAt(t, edge.Add(-time.Minute))
	got := hammer()
	if len(got) != 1 || got[edge] != limitN {
		t.Fatalf("before the edge: admissions by period end %v, want %d ending %s", got, limitN, edge)
	}
	srv.ClockAt(t, edge.Add(time.Second))
	// Redis's clock jumped a minute in an instant: the leases of the last
	// period, which end at its edge in real time, are ended here
	for _, n := range nodes {
		n.leases.ForgetAll()
	}
	got = hammer()
	if len(got) != 1 || got[next] != limitN {
		t.Fatalf("after the edge: admissions by period end %v, want %d ending %s", got, limitN, next)
	}
}
