package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"tollgate/internal/browsertest"
)

// The Usage page counts a key's "this quota period" column in the periods
// GetUsage names, on the limiter's clock, not in UTC calendar months: on
// a MONTH quota anchored to the 15th in Asia/Tokyo, with the limiter's
// clock in March 2027 (months from the nodes'), the column restarts on
// 2027-03-15, the first UTC day of the period that began on
// 2027-03-14T15:00Z, and the caption says when the current period starts
// and ends.
func TestConsoleCountsTheAnchoredQuotaPeriod(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser test runs in make test, not in make test-short")
	}
	a := mustTokyoStack(t, stackOptions{allInOne: true, adminToken: consoleToken}, 1000)
	s, clock, api, plan, keyID, key := a.stack, a.clock, a.api, a.plan, a.keyID, a.key
	for _, step := range []struct {
		at       time.Time
		requests int
	}{
		{time.Date(2027, 3, 13, 10, 0, 0, 0, time.UTC), 2}, // the 13th, 19:00 in Tokyo: the period from February 15th
		{time.Date(2027, 3, 15, 3, 0, 0, 0, time.UTC), 3},  // the 15th, 12:00 in Tokyo: the period from March 15th
	} {
		clock.At(t, step.at)
		for range step.requests {
			if got := s.call(t, 0, api.id, "/prod/items", key).StatusCode; got != http.StatusOK {
				t.Fatalf("a request at %v: %d, want 200", step.at, got)
			}
		}
	}

	p := browsertest.MustPage(t)
	console := "http://" + s.admin.AdminAddr + "/console/"
	p.Goto(console)
	signIn(t, p)
	p.Role("heading", "APIs")
	p.Goto(console + "#/usage?plan=" + *plan.Id + "&key=" + keyID + "&from=2027-03-12&to=2027-03-15")
	p.Role("heading", "Usage of tokyo")
	rows := p.Table("Daily usage")
	if !rowWith([][]string{rows[0]}, "Day (UTC)", "Used", "Requests this quota period", "Adjusted by UpdateUsage") {
		t.Errorf("daily usage columns %q", rows[0])
	}
	for _, want := range [][]string{
		{"2027-03-12", "0", "0", "0"},
		{"2027-03-13", "2", "2", "0"},
		{"2027-03-14", "0", "2", "0"}, // its first instant is in the period that ends at 15:00 UTC
		{"2027-03-15", "3", "3", "0", "997"},
	} {
		if !rowWith(rows, want...) {
			t.Errorf("daily usage %q: no row %q", rows, want)
		}
	}
	fig := p.Role("figure", "Daily usage chart").Text()
	if want := "The current quota period runs from 2027-03-14 15:00 to 2027-04-14 15:00 UTC (the limiter's clock)."; !strings.Contains(fig, want) {
		t.Errorf("chart caption %q does not say %q", fig, want)
	}
	p.Screenshot("console-usage-anchored-period")
}
