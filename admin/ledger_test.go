package admin_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"

	"tollgate/admin"
	"tollgate/internal/redistest"
	"tollgate/limit"
	"tollgate/plans"
	"tollgate/plans/postgres/postgrestest"
)

// flushed writes day counts of keyID in planID into the ledger, as the
// flush worker would: day (days back from today) → absolute count.
func (e *usageEnv) flushed(planID, keyID string, days map[int]int64) {
	e.t.Helper()
	o := plans.UsageObservation{KeyID: keyID, PlanID: planID}
	today := plans.UTCDate(time.Now())
	for back, n := range days {
		o.Days = append(o.Days, plans.DayCount{Day: today.AddDate(0, 0, -back), Count: n})
	}
	var b plans.UsageBatch
	b.Add(o)
	if _, err := e.db.FlushUsage(e.ctx, &b); err != nil {
		e.t.Fatal(err)
	}
}

func daysBack(back int) string {
	return time.Now().UTC().AddDate(0, 0, -back).Format(plans.UsageDateLayout)
}

func TestGetUsageAddsTheLedgerToTheLiveCounts(t *testing.T) {
	t.Parallel()
	e := newUsageEnv(t)
	plan, keys := e.plan("ledger", nil, 2)
	k, idle := keys[0], keys[1]
	e.requests(plan, k, nil, 3) // live today: 3
	// The ledger holds a day long gone from Redis, yesterday (which Redis
	// lost) and an older, lower count of today.
	e.flushed(plan, k, map[int]int64{200: 7, 1: 5, 0: 2})

	wantUsage(t, e.usage(plan, "", daysBack(2), daysBack(0)).Items, map[string][][]int64{
		k:    {{0, -1}, {5, -1}, {3, -1}},
		idle: {{0, -1}, {0, -1}, {0, -1}},
	})
	wantUsage(t, e.usage(plan, k, daysBack(201), daysBack(199)).Items, map[string][][]int64{k: {{0, -1}, {7, -1}, {0, -1}}})

	e.flushed(plan, k, map[int]int64{0: 9}) // flushed ahead of this node's read of Redis
	wantUsage(t, e.usage(plan, k, daysBack(0), daysBack(0)).Items, map[string][][]int64{k: {{9, -1}}})
}

func TestGetUsageRemainingCountsLedgerDaysOfThePeriod(t *testing.T) {
	t.Parallel()
	e := newUsageEnv(t)
	now := time.Now().UTC()
	// A weekly quota whose period began 3 days ago: [today-3, today+4).
	offset := (int(now.Weekday()) - 3 + 7) % 7
	plan, keys := e.plan("weekly", &types.QuotaSettings{Limit: 20, Period: types.QuotaPeriodTypeWeek, Offset: int32(offset)}, 1)
	k := keys[0]
	e.flushed(plan, k, map[int]int64{3: 4, 2: 6})
	e.requests(plan, k, &limit.Quota{Limit: 20, Period: plans.PeriodWeek, Offset: int32(offset)}, 1)
	// Day -1 counts the period's 4 + 6 before startDate.
	wantUsage(t, e.usage(plan, k, daysBack(1), daysBack(1)).Items, map[string][][]int64{k: {{0, 10}}})
}

// get sends an authenticated GET with accept and returns the response
// and its body.
func (e *env) get(path, accept string) (*http.Response, string) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.url+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatalf("GET %s: reading the body: %v", path, err)
	}
	return res, string(b)
}

func TestUsageExportAsCSVAndJSON(t *testing.T) {
	t.Parallel()
	e := newUsageEnv(t)
	plan, keys := e.plan("billing", nil, 2)
	other, _ := e.plan("other", nil, 0)
	e.flushed(plan, keys[0], map[int]int64{40: 2, 3: 11})
	e.flushed(plan, keys[1], map[int]int64{3: 1})
	e.flushed(other, keys[0], map[int]int64{3: 99})
	base := "/usageplans/" + plan + "/usage/export?startDate=" + daysBack(40) + "&endDate=" + daysBack(0)

	res, body := e.get(base+"&format=csv", "")
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/csv; charset=utf-8" ||
		!strings.HasPrefix(res.Header.Get("Content-Disposition"), `attachment; filename="usage-`+plan+"-") {
		t.Fatalf("got %d %v, want 200 text/csv as an attachment", res.StatusCode, res.Header)
	}
	recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	a, b := keys[0], keys[1]
	if a > b { // rows come in (day, key) order
		a, b = b, a
	}
	name := map[string]string{keys[0]: "billinga", keys[1]: "billingb"}
	count := map[string]map[int]string{keys[0]: {40: "2", 3: "11"}, keys[1]: {3: "1"}}
	want := [][]string{plans.UsageExportHeader}
	for _, back := range []int{40, 3} {
		for _, k := range []string{a, b} {
			if n, ok := count[k][back]; ok {
				want = append(want, []string{daysBack(back), plan, k, name[k], "", n, n}) // one unit a request
			}
		}
	}
	if !reflect.DeepEqual(recs, want) {
		t.Fatalf("got CSV %q, want %q", recs, want)
	}

	res, body = e.get(base+"&keyId="+keys[1], "text/csv")
	if res.Header.Get("Content-Type") != "text/csv; charset=utf-8" || strings.Count(body, "\r\n") != 2 {
		t.Fatalf("Accept text/csv, one key: got %s %q, want the header and one row", res.Header.Get("Content-Type"), body)
	}

	res, body = e.get(base, "")
	var doc struct {
		UsagePlanID string
		Item        []struct {
			Date, KeyID, KeyName string
			Count                int64
		}
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("got %s %q (%v), want a JSON export by default", res.Header.Get("Content-Type"), body, err)
	}
	if doc.UsagePlanID != plan || len(doc.Item) != 3 {
		t.Fatalf("got %+v, want plan %s with 3 items", doc, plan)
	}

	t.Run("errors", func(t *testing.T) {
		for _, c := range []struct{ query, field string }{
			{"?startDate=2026-01-01&endDate=2026-01-02&format=xlsx", "format"},
			{"?startDate=2025-01-01&endDate=2026-01-02", "startDate"},
			{"?startDate=2026-01-03&endDate=2026-01-02", "endDate"},
			{"?endDate=2026-01-02", "startDate"},
		} {
			status, typ, body := e.raw("GET", "/usageplans/"+plan+"/usage/export"+c.query, "")
			if status != 400 || typ != "BadRequestException" || !strings.Contains(body, c.field) {
				t.Errorf("%s: got %d %s %s, want 400 naming %s", c.query, status, typ, body, c.field)
			}
		}
		if status, typ, _ := e.raw("GET", "/usageplans/nosuch/usage/export?startDate=2026-01-01&endDate=2026-01-02", ""); status != 404 || typ != "NotFoundException" {
			t.Errorf("unknown plan: got %d %s, want 404", status, typ)
		}
	})
}

func TestUsageExportStreamsManyPages(t *testing.T) {
	t.Parallel()
	e := newUsageEnv(t)
	plan, _ := e.plan("big", nil, 0)
	var b plans.UsageBatch
	day := plans.UTCDate(time.Now())
	for i := range plans.MaxUsagePage + 50 {
		b.Add(plans.UsageObservation{KeyID: fmt.Sprintf("k%05d", i), PlanID: plan, Days: []plans.DayCount{{Day: day, Count: 1}}})
	}
	if _, err := e.db.FlushUsage(e.ctx, &b); err != nil {
		t.Fatal(err)
	}
	_, body := e.get("/usageplans/"+plan+"/usage/export?format=csv&startDate="+daysBack(0)+"&endDate="+daysBack(0), "")
	if lines := strings.Count(body, "\r\n"); lines != plans.MaxUsagePage+51 {
		t.Fatalf("got %d lines, want the header and %d rows", lines, plans.MaxUsagePage+50)
	}
}

// failingLedger is the real ledger failing every read after the first.
type failingLedger struct {
	admin.UsageLedger
	reads int
}

func (l *failingLedger) UsageDays(ctx context.Context, q plans.UsageQuery) ([]plans.UsageDay, error) {
	if l.reads++; l.reads > 1 {
		return nil, plans.Unavailable(errors.New("connection reset"), "database unavailable")
	}
	return l.UsageLedger.UsageDays(ctx, q)
}

func TestUsageExportThatFailsMidwayIsCutOff(t *testing.T) {
	t.Parallel()
	db := postgrestest.MustDB(t)
	srv := httptest.NewServer(admin.New(admin.Options{Store: db, Ledger: &failingLedger{UsageLedger: db},
		Credentials: admin.Credentials{BearerToken: token}}))
	t.Cleanup(srv.Close)
	p := &plans.UsagePlan{Name: "cut"}
	if err := db.CreateUsagePlan(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	var b plans.UsageBatch
	day := plans.UTCDate(time.Now())
	for i := range plans.MaxUsagePage {
		b.Add(plans.UsageObservation{KeyID: fmt.Sprintf("k%05d", i), PlanID: p.ID, Days: []plans.DayCount{{Day: day, Count: 1}}})
	}
	if _, err := db.FlushUsage(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/usageplans/"+p.ID+"/usage/export?format=csv&startDate="+daysBack(0)+"&endDate="+daysBack(0), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if _, err := io.ReadAll(res.Body); err == nil {
		t.Fatalf("got a complete %d body although the second page failed, want the body cut off", res.StatusCode)
	}
}

func TestUsageRecordFeedPagesByVersion(t *testing.T) {
	t.Parallel()
	e := newUsageEnv(t)
	plan, keys := e.plan("feed", nil, 1)
	k := keys[0]
	e.flushed(plan, k, map[int]int64{2: 1, 1: 2, 0: 3})
	type page struct {
		Item []struct {
			KeyID, UsagePlanID, Date string
			Count, Requests, Version int64
		}
		NextAfter int64
		HasMore   bool
	}
	read := func(query string) page {
		t.Helper()
		res, body := e.get("/usage/records"+query, "")
		var p page
		if err := json.Unmarshal([]byte(body), &p); err != nil || res.StatusCode != 200 {
			t.Fatalf("%s: got %d %s (%v), want 200 JSON", query, res.StatusCode, body, err)
		}
		return p
	}
	p1 := read("?limit=2")
	if len(p1.Item) != 2 || !p1.HasMore || p1.NextAfter != p1.Item[1].Version || p1.Item[0].Date != daysBack(2) || p1.Item[0].KeyID != k {
		t.Fatalf("page 1: got %+v, want two records from %s with more", p1, daysBack(2))
	}
	p2 := read(fmt.Sprintf("?limit=2&after=%d", p1.NextAfter))
	if len(p2.Item) != 1 || p2.HasMore || p2.Item[0].Count != 3 || p2.Item[0].Requests != 3 {
		t.Fatalf("page 2: got %+v, want today's record and no more", p2)
	}
	e.flushed(plan, k, map[int]int64{2: 4}) // a late flush raises an older day
	p3 := read(fmt.Sprintf("?after=%d", p2.NextAfter))
	if len(p3.Item) != 1 || p3.Item[0].Date != daysBack(2) || p3.Item[0].Count != 4 || p3.Item[0].Version <= p2.NextAfter {
		t.Fatalf("page 3: got %+v, want the raised day again with a higher version", p3)
	}
	if p4 := read(fmt.Sprintf("?after=%d", p3.NextAfter)); len(p4.Item) != 0 || p4.NextAfter != p3.NextAfter || p4.HasMore {
		t.Fatalf("caught up: got %+v, want no records and the same cursor", p4)
	}
	for _, q := range []string{"?after=-1", "?after=x", "?limit=0", "?limit=5001"} {
		field := strings.TrimPrefix(strings.Split(q, "=")[0], "?")
		if status, _, body := e.raw("GET", "/usage/records"+q, ""); status != 400 || !strings.Contains(body, field) {
			t.Errorf("%s: got %d %s, want 400 naming %s", q, status, body, field)
		}
	}
}

// GetUsage names the quota period each day of the range counts in and the
// current one, as the limiter decides them: an anchored, zoned period
// (the 15th in Asia/Tokyo), on the limiter Redis's clock, 40 days ahead of
// the admin node's.
func TestGetUsageReportsQuotaPeriodsOnTheLimitersClock(t *testing.T) {
	t.Parallel()
	srv := redistest.MustServerAhead(t, 40*24*time.Hour)
	e := newUsageEnvOn(t, srv.Client, "t")
	p := call(e.c.CreateUsagePlan(e.ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("tokyo"),
		Quota: &types.QuotaSettings{Limit: 100, Period: types.QuotaPeriodTypeMonth},
		Tags:  map[string]string{plans.QuotaAnchorTag: "15", plans.QuotaTimeZoneTag: "Asia/Tokyo"}})).must(t)
	now, err := srv.Client.Time(e.ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	from := plans.UTCDate(now).AddDate(0, 0, -20)
	_, body := e.get("/usageplans/"+*p.Id+"/usage?startDate="+from.Format(plans.UsageDateLayout)+"&endDate="+
		from.AddDate(0, 0, 20).Format(plans.UsageDateLayout), "")
	var got struct {
		Periods       []struct{ Start, End string }
		CurrentPeriod struct{ Start, End string }
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	q := plans.Quota{Period: plans.PeriodMonth, Anchor: "15", TimeZone: "Asia/Tokyo"}
	if len(got.Periods) != 21 {
		t.Fatalf("periods: %d, want one per day (21): %s", len(got.Periods), body)
	}
	for i, p := range got.Periods {
		start, end := q.Bounds(from.AddDate(0, 0, i))
		if p.Start != start.Format(time.RFC3339) || p.End != end.Format(time.RFC3339) {
			t.Fatalf("period of day %d: [%s, %s), want [%s, %s)", i, p.Start, p.End, start.Format(time.RFC3339), end.Format(time.RFC3339))
		}
		if start.In(tokyo).Day() != 15 || start.In(tokyo).Hour() != 0 {
			t.Fatalf("period of day %d starts %v, want the 15th at midnight in Tokyo", i, start.In(tokyo))
		}
	}
	start, end := q.Bounds(now)
	if got.CurrentPeriod.Start != start.Format(time.RFC3339) || got.CurrentPeriod.End != end.Format(time.RFC3339) {
		t.Fatalf("current period [%s, %s), want [%s, %s) (the limiter's, not the node's)", got.CurrentPeriod.Start, got.CurrentPeriod.End, start, end)
	}
	if nodeStart, _ := q.Bounds(time.Now()); nodeStart.Equal(start) {
		t.Fatalf("the node's period %v is the limiter's: the test's clocks are not apart", nodeStart)
	}
}
