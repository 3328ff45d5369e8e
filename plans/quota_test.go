package plans

import (
	"testing"
	"time"
)

func TestQuotaBounds(t *testing.T) {
	at := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	tests := []struct {
		name       string
		q          Quota
		t          string
		start, end string
	}{
		{"day", Quota{Period: PeriodDay}, "2026-06-15T23:59:50Z", "2026-06-15T00:00:00Z", "2026-06-16T00:00:00Z"},
		{"day starts at midnight", Quota{Period: PeriodDay}, "2026-06-16T00:00:00Z", "2026-06-16T00:00:00Z", "2026-06-17T00:00:00Z"},
		{"day ignores local zone", Quota{Period: PeriodDay}, "2026-06-16T08:00:00+09:00", "2026-06-15T00:00:00Z", "2026-06-16T00:00:00Z"},
		{"week from sunday", Quota{Period: PeriodWeek}, "2026-06-17T12:00:00Z", "2026-06-14T00:00:00Z", "2026-06-21T00:00:00Z"},
		{"week sunday itself", Quota{Period: PeriodWeek}, "2026-06-14T00:00:00Z", "2026-06-14T00:00:00Z", "2026-06-21T00:00:00Z"},
		{"week saturday last second", Quota{Period: PeriodWeek}, "2026-06-20T23:59:59Z", "2026-06-14T00:00:00Z", "2026-06-21T00:00:00Z"},
		{"week offset 1 (monday)", Quota{Period: PeriodWeek, Offset: 1}, "2026-06-14T23:59:00Z", "2026-06-08T00:00:00Z", "2026-06-15T00:00:00Z"},
		{"week offset 6 (saturday)", Quota{Period: PeriodWeek, Offset: 6}, "2026-06-20T00:00:00Z", "2026-06-20T00:00:00Z", "2026-06-27T00:00:00Z"},
		{"month", Quota{Period: PeriodMonth}, "2026-02-28T23:59:59Z", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"},
		{"month next", Quota{Period: PeriodMonth}, "2026-03-01T00:00:00Z", "2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z"},
		{"month offset before day", Quota{Period: PeriodMonth, Offset: 9}, "2026-03-05T00:00:00Z", "2026-02-10T00:00:00Z", "2026-03-10T00:00:00Z"},
		{"month offset 27 across year", Quota{Period: PeriodMonth, Offset: 27}, "2027-01-10T00:00:00Z", "2026-12-28T00:00:00Z", "2027-01-28T00:00:00Z"},
		{"leap february", Quota{Period: PeriodMonth}, "2028-02-29T12:00:00Z", "2028-02-01T00:00:00Z", "2028-03-01T00:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start, end := tt.q.Bounds(at(tt.t))
			if !start.Equal(at(tt.start)) || !end.Equal(at(tt.end)) {
				t.Errorf("Bounds(%s) = [%s, %s), want [%s, %s)", tt.t, start, end, tt.start, tt.end)
			}
		})
	}
}

// FuzzQuotaBounds checks that every instant falls in exactly one period:
// start ≤ t < end, the period is one day, one week or 28..31 days long, and
// the period that follows starts exactly where this one ends (periods tile).
func FuzzQuotaBounds(f *testing.F) {
	f.Add(int64(1781567990), uint8(0), uint8(0))
	f.Add(int64(1772323199), uint8(2), uint8(27))
	f.Add(int64(1781395200), uint8(1), uint8(3))
	f.Fuzz(func(t *testing.T, sec int64, period, offset uint8) {
		sec %= 1 << 37 // about 4000 years either side of 1970
		q := Quota{Limit: 1, Period: []string{PeriodDay, PeriodWeek, PeriodMonth}[period%3]}
		switch q.Period {
		case PeriodWeek:
			q.Offset = int32(offset % 7)
		case PeriodMonth:
			q.Offset = int32(offset % 28)
		}
		tm := time.Unix(sec, 0).UTC()
		start, end := q.Bounds(tm)
		if tm.Before(start) || !tm.Before(end) {
			t.Fatalf("%v %s: got [%s, %s), want it to contain %s", q.Period, tm, start, end, tm)
		}
		days := end.Sub(start).Hours() / 24
		want := map[string][2]float64{PeriodDay: {1, 1}, PeriodWeek: {7, 7}, PeriodMonth: {28, 31}}[q.Period]
		if days < want[0] || days > want[1] {
			t.Fatalf("%s: period of %v days, want %v..%v", q.Period, days, want[0], want[1])
		}
		nextStart, _ := q.Bounds(end)
		prevStart, prevEnd := q.Bounds(start.Add(-time.Second))
		if !nextStart.Equal(end) || !prevEnd.Equal(start) || !prevStart.Before(start) {
			t.Fatalf("%s: periods do not tile around [%s, %s)", q.Period, start, end)
		}
	})
}
