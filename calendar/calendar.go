// Package calendar is the period function of usage plan quotas: which
// DAY, WEEK or MONTH holds an instant, by AWS API Gateway's rule (UTC
// calendar periods shifted by an offset of days) or anchored to a day of
// the month or week at local midnight in an IANA time zone (the plan tags
// tollgate:quota-anchor and tollgate:quota-timezone, docs/usage.md,
// "Anchored periods"). The zone database is embedded in the binary, so a
// node reads no zone files and every node agrees.
//
// A period starts at the first instant of its start day in the zone: local
// midnight, or the end of a daylight-saving gap that skips midnight. A day
// a zone skipped whole starts where the next day does, so such a period is
// empty and Bounds never returns it.
package calendar

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // the zone database, in the binary
)

// Periods, the names of AWS's quota periods.
const (
	Day   = "DAY"
	Week  = "WEEK"
	Month = "MONTH"
)

// Anchor is the day a WEEK or MONTH period starts on: a day of the month
// 1..28, Last (the month's last day), or a weekday Monday..Sunday. The
// zero Anchor is none: the period starts where AWS's offset says.
type Anchor int8

// Anchors besides the days of the month 1..28.
const (
	Last Anchor = -1 - iota
	Monday
	Tuesday
	Wednesday
	Thursday
	Friday
	Saturday
	Sunday
)

var weekdayNames = [...]string{"MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"}

// Weekday returns the weekday of a weekday anchor.
func (a Anchor) Weekday() (time.Weekday, bool) {
	if a > Monday || a < Sunday {
		return 0, false
	}
	return time.Weekday((int(Monday-a) + 1) % 7), true
}

// String returns the anchor as tollgate:quota-anchor spells it ("" for none).
func (a Anchor) String() string {
	switch {
	case a == 0:
		return ""
	case a == Last:
		return "last"
	case a > 0:
		return strconv.Itoa(int(a))
	default:
		return weekdayNames[Monday-a]
	}
}

// ParseAnchor reads an anchor for period: 1..28 or "last" for MONTH,
// MON..SUN for WEEK (any case), "" for none. The error says what would fit.
func ParseAnchor(period, s string) (Anchor, error) {
	if s == "" {
		return 0, nil
	}
	switch period {
	case Month:
		if strings.EqualFold(s, "last") {
			return Last, nil
		}
		if n, err := strconv.Atoi(s); err == nil && n >= 1 && n <= 28 {
			return Anchor(n), nil
		}
		return 0, fmt.Errorf("anchor %q of a MONTH period must be a day 1..28 or last", s)
	case Week:
		for i, name := range weekdayNames {
			if strings.EqualFold(s, name) {
				return Monday - Anchor(i), nil
			}
		}
		return 0, fmt.Errorf("anchor %q of a WEEK period must be MON, TUE, WED, THU, FRI, SAT or SUN", s)
	default:
		return 0, fmt.Errorf("anchor %q needs a WEEK or MONTH period, not %q", s, period)
	}
}

// LoadZone returns the IANA zone named name ("" is UTC) from the embedded
// zone database. "Local" and file paths are not zones. Zones are loaded
// once per process and shared.
func LoadZone(name string) (*time.Location, error) {
	if name == "" || name == "UTC" {
		return time.UTC, nil
	}
	if v, ok := zones.Load(name); ok {
		return v.(*time.Location), nil
	}
	if name == "Local" || strings.HasPrefix(name, "/") {
		return nil, fmt.Errorf("time zone %q is not an IANA zone name such as Europe/Paris", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("time zone %q is not an IANA zone name such as Europe/Paris", name)
	}
	v, _ := zones.LoadOrStore(name, loc)
	return v.(*time.Location), nil
}

// zones keeps the loaded zones by name: one *time.Location per zone, so
// calendars of one zone compare equal.
var zones sync.Map

// Calendar is the period rule of one quota. The zero Calendar is AWS's
// DAY in UTC.
type Calendar struct {
	// Period is Day, Week or Month; anything else counts as Day.
	Period string
	// Offset shifts the start by days when Anchor is none (WEEK 0..6 from
	// Sunday, MONTH 0..27 from the 1st), as AWS's quota offset does.
	Offset int
	// Anchor is the start day; it replaces Offset.
	Anchor Anchor
	// Zone is where days start; nil is UTC.
	Zone *time.Location
}

// Plain reports whether c is AWS's rule in UTC: no anchor, no zone. The
// limiter script computes such periods itself.
func (c Calendar) Plain() bool {
	return c.Anchor == 0 && (c.Zone == nil || c.Zone == time.UTC)
}

// Bounds returns the period [start, end) of c that holds t, both in UTC.
func (c Calendar) Bounds(t time.Time) (start, end time.Time) {
	loc := c.Zone
	if loc == nil {
		loc = time.UTC
	}
	y, m, d := t.In(loc).Date()
	s := c.first(date(y, m, d))
	start, end = dayStart(s, loc), dayStart(c.next(s), loc)
	// Where local days repeat (a clock set back over midnight) the local
	// date may lag: the boundaries decide.
	for start.After(t) {
		s = c.prev(s)
		start, end = dayStart(s, loc), start
	}
	for !end.After(t) {
		s = c.next(s)
		start, end = end, dayStart(c.next(s), loc)
	}
	return start.UTC(), end.UTC()
}

// Table returns the boundaries of the period of c holding t and of the
// periods just before and after it: from < start <= t < end < to.
func (c Calendar) Table(t time.Time) (from, start, end, to time.Time) {
	start, end = c.Bounds(t)
	from, _ = c.Bounds(start.Add(-time.Second))
	_, to = c.Bounds(end)
	return from, start, end, to
}

// date is a civil date, as midnight UTC.
func date(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// first returns the start day of the period that holds day d.
func (c Calendar) first(d time.Time) time.Time {
	switch c.Period {
	case Week:
		w := time.Sunday + time.Weekday(c.Offset)
		if wd, ok := c.Anchor.Weekday(); ok {
			w = wd
		}
		return d.AddDate(0, 0, -((int(d.Weekday()) - int(w) + 7) % 7))
	case Month:
		s := c.inMonth(d.Year(), d.Month())
		if s.After(d) {
			s = c.inMonth(d.Year(), d.Month()-1)
		}
		return s
	default:
		return d
	}
}

// inMonth returns the start day of c's MONTH period in month m of year y.
func (c Calendar) inMonth(y int, m time.Month) time.Time {
	switch {
	case c.Anchor == Last:
		return date(y, m+1, 0)
	case c.Anchor > 0:
		return date(y, m, int(c.Anchor))
	default:
		return date(y, m, 1+c.Offset)
	}
}

// next and prev return the start day of the period after or before the
// one starting on day s.
func (c Calendar) next(s time.Time) time.Time {
	switch c.Period {
	case Week:
		return s.AddDate(0, 0, 7)
	case Month:
		return c.inMonth(s.Year(), s.Month()+1)
	default:
		return s.AddDate(0, 0, 1)
	}
}

func (c Calendar) prev(s time.Time) time.Time {
	switch c.Period {
	case Week:
		return s.AddDate(0, 0, -7)
	case Month:
		return c.inMonth(s.Year(), s.Month()-1)
	default:
		return s.AddDate(0, 0, -1)
	}
}

// dayStart returns the first instant whose local date in loc is day d or
// later. Within one zone period (one UTC offset o) the local date reaches
// d at d's midnight − o; the zone periods around d are walked in order
// and the first that reaches it answers. time.Date is not used: it does
// not say which instant it picks where midnight is skipped or repeated.
func dayStart(d time.Time, loc *time.Location) time.Time {
	if loc == time.UTC {
		return d
	}
	mid := d.Unix()
	// UTC offsets lie within ±26 hours
	t, hi := mid-26*3600, mid+26*3600
	for t < hi {
		lt := time.Unix(t, 0).In(loc)
		_, off := lt.Zone()
		at := max(t, mid-int64(off))
		_, zoneEnd := lt.ZoneBounds()
		if zoneEnd.IsZero() || at < zoneEnd.Unix() || zoneEnd.Unix() <= t {
			return time.Unix(at, 0)
		}
		t = zoneEnd.Unix()
	}
	return time.Unix(mid, 0) // not reached: some offset reaches d by hi
}
