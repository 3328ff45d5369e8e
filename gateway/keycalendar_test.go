package gateway

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"tollgate/internal/redistest"
	"tollgate/limit"
	"tollgate/plans"
)

// keyCalendarGateway is a gateway on a Redis whose clock the test steps,
// serving a plan with quota and tags, and keys (value → record).
func keyCalendarGateway(t *testing.T, quota *plans.Quota, tags map[string]string, keys map[string]*plans.KeyRecord) (*testGateway, *redistest.Server) {
	t.Helper()
	srv := redistest.MustServerStepped(t, 0)
	up := httptestServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	snap := snapshot(plans.Stage{}, res{"/x", methods(proxy(true, up.URL+"/x"), "GET")})
	addPlan(snap, plans.UsagePlan{ID: "plan01", Quota: quota, Tags: tags})
	tg := mustGatewayOn(t, srv.Client, redistest.MustPrefix(t), snap, nil)
	for v, rec := range keys {
		tg.keys.add(v, rec)
	}
	return tg, srv
}

// wantStatuses sends one request per status of want with key and fails on
// the first other answer; a 429's log reason must be reason.
func (tg *testGateway) wantStatuses(t *testing.T, what, key, reason string, want ...int) {
	t.Helper()
	for i, w := range want {
		got := tg.do(t, "GET", "/prod/x", "x-api-key", key)
		if got.status != w {
			t.Fatalf("%s, request %d: status %d %s, want %d", what, i+1, got.status, got.body, w)
		}
		if w == 429 {
			if line := tg.logLine(t, got.header.Get("x-amzn-RequestId")); line["reason"] != reason {
				t.Fatalf("%s, request %d: refused for %v, want %s", what, i+1, line["reason"], reason)
			}
		}
	}
}

// A key's own anchor and zone (tollgate:quota-anchor, quota-timezone on
// the key) run its quota in its own periods on Redis's clock, not the
// plan's; its customer's budget keeps the plan's periods, which the
// customer's other key shares. The plan is anchored to the 1st in UTC,
// the key to the 15th in Tokyo.
func TestKeyAnchorResetsTheKeyOnItsDayAndTheCustomerOnThePlans(t *testing.T) {
	t.Parallel()
	const tokyo, plain = "tokyoaaaaaaaaaaaaaaaaaaaaaaaa", "plainbbbbbbbbbbbbbbbbbbbbbbbb"
	tg, srv := keyCalendarGateway(t, &plans.Quota{Limit: 3, Period: plans.PeriodMonth, Anchor: "1"},
		map[string]string{plans.CustomerQuotaTag: "5"}, map[string]*plans.KeyRecord{
			tokyo: {KeyID: "key0000001", Enabled: true, PlanIDs: []string{"plan01"}, CustomerID: "acme",
				Calendar: plans.KeyCalendar{Anchor: "15", TimeZone: "Asia/Tokyo"}},
			plain: {KeyID: "key0000002", Enabled: true, PlanIDs: []string{"plan01"}, CustomerID: "acme"},
		})
	keyEdge := time.Date(2027, 3, 14, 15, 0, 0, 0, time.UTC) // the 15th of March in Tokyo
	keyNext := time.Date(2027, 4, 14, 15, 0, 0, 0, time.UTC)
	planEdge := time.Date(2027, 4, 1, 0, 0, 0, 0, time.UTC)

	srv.ClockAt(t, keyEdge.Add(-time.Minute))
	tg.wantStatuses(t, "the Tokyo key before its edge", tokyo, "quota", 200, 200, 200, 429)
	tg.wantStatuses(t, "the plain key, the customer's budget of 5 spent", plain, "customer", 200, 200, 429)

	srv.ClockAt(t, keyEdge.Add(2*time.Second))
	// the key's own period turned; the customer's (the plan's) did not
	tg.wantStatuses(t, "the Tokyo key after its edge", tokyo, "customer", 429)
	q := &limit.Quota{Limit: 3, Period: plans.PeriodMonth}
	q.Anchor, q.Zone = (plans.Quota{Period: plans.PeriodMonth, Anchor: "15", TimeZone: "Asia/Tokyo"}).Calendar().Anchor,
		(plans.Quota{TimeZone: "Asia/Tokyo"}).Calendar().Zone
	u, err := tg.engine.KeyUsage(t.Context(), "key0000001", "plan01", q)
	if err != nil || u.Quota.Remaining != 3 || !u.Quota.Reset.Equal(keyNext) {
		t.Fatalf("the Tokyo key's quota after its edge: %+v, %v; want 3 left until %s", u.Quota, err, keyNext)
	}

	srv.ClockAt(t, planEdge.Add(2*time.Second))
	// the customer's period turned on the plan's day: both keys go on,
	// the Tokyo key still in its period from the 15th of March
	tg.wantStatuses(t, "the Tokyo key after the plan's edge", tokyo, "quota", 200, 200, 200, 429)
	tg.wantStatuses(t, "the plain key after the plan's edge", plain, "customer", 200, 200, 429)
	u, err = tg.engine.KeyUsage(t.Context(), "key0000001", "plan01", q)
	if err != nil || u.Quota.Remaining != 0 || !u.Quota.Reset.Equal(keyNext) {
		t.Fatalf("the Tokyo key's quota after the plan's edge: %+v, %v; want 0 left until %s", u.Quota, err, keyNext)
	}
}

// Key-level edges: a key's own anchor or zone turns its period at local
// midnight of its day, on Redis's clock, whatever the plan's rule.
func TestKeyCalendarTurnsAtItsOwnEdges(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		quota plans.Quota
		cal   plans.KeyCalendar
		edge  string
	}{
		{"the last day of a short February in Berlin, on a plan of the 1st in UTC",
			plans.Quota{Limit: 2, Period: plans.PeriodMonth}, plans.KeyCalendar{Anchor: "last", TimeZone: "Europe/Berlin"}, "2027-02-27T23:00:00Z"},
		{"a key's zone alone on a plan of the 10th: the 10th in New York as clocks go forward",
			plans.Quota{Limit: 2, Period: plans.PeriodMonth, Offset: 9}, plans.KeyCalendar{TimeZone: "America/New_York"}, "2030-03-10T05:00:00Z"},
		{"a key's Monday in Kathmandu on a plan of Sundays in Tokyo",
			plans.Quota{Limit: 2, Period: plans.PeriodWeek, Anchor: "SUN", TimeZone: "Asia/Tokyo"}, plans.KeyCalendar{Anchor: "MON", TimeZone: "Asia/Kathmandu"}, "2026-11-29T18:15:00Z"},
		{"a key's day in Santiago, which skips midnight, on a DAY plan in UTC",
			plans.Quota{Limit: 2, Period: plans.PeriodDay}, plans.KeyCalendar{TimeZone: "America/Santiago"}, "2026-09-06T04:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			edge, err := time.Parse(time.RFC3339, tc.edge)
			if err != nil {
				t.Fatal(err)
			}
			rule := tc.cal.Apply(&tc.quota)
			if s, _ := rule.Bounds(edge); !s.Equal(edge) {
				t.Fatalf("the key's rule %+v starts the period holding %s at %s", rule, edge, s)
			}
			if s, _ := tc.quota.Bounds(edge); s.Equal(edge) {
				t.Fatalf("the plan's own rule also turns at %s: the case tells nothing", edge)
			}
			const key = "edgekeyaaaaaaaaaaaaaaaaaaaaaa"
			tg, srv := keyCalendarGateway(t, &tc.quota, nil, map[string]*plans.KeyRecord{
				key: {KeyID: "key0000001", Enabled: true, PlanIDs: []string{"plan01"}, Calendar: tc.cal}})
			srv.ClockAt(t, edge.Add(-time.Minute))
			tg.wantStatuses(t, "before the edge", key, "quota", 200, 200, 429)
			srv.ClockAt(t, edge.Add(-2*time.Second))
			tg.wantStatuses(t, "2 s before the edge", key, "quota", 429)
			srv.ClockAt(t, edge.Add(2*time.Second))
			tg.wantStatuses(t, fmt.Sprintf("2 s after the edge %s", edge), key, "quota", 200, 200, 429)
		})
	}
}
