package calendar

import (
	"math/rand/v2"
	"testing"
	"time"
)

// zones with the shapes a period function gets wrong: daylight saving at
// midnight (Santiago, Havana, Asuncion, Beirut), skipped days (Apia
// 2011-12-30, Kiritimati 1994-12-31), half and quarter hours (Kathmandu,
// Chatham, Lord Howe's 30-minute saving), two-hour saving (Troll), Ramadan
// changes (Casablanca), the southern hemisphere and fixed offsets.
var testZones = []string{"UTC", "America/New_York", "Europe/London", "Europe/Berlin", "Asia/Tokyo",
	"Australia/Sydney", "Australia/Lord_Howe", "America/Santiago", "America/Havana", "America/Asuncion",
	"Asia/Beirut", "America/Sao_Paulo", "Pacific/Apia", "Pacific/Kiritimati", "Pacific/Chatham",
	"Asia/Kathmandu", "America/St_Johns", "Africa/Casablanca", "Asia/Gaza", "Europe/Moscow",
	"Antarctica/Troll", "Asia/Tehran", "America/Nuuk", "Etc/GMT+12", "Pacific/Auckland"}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := LoadZone(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// isStartDay is the definition of a period's start day, asked of one
// day: the reference the date arithmetic of Bounds is held against.
func isStartDay(c Calendar, d time.Time) bool {
	switch c.Period {
	case Week:
		w := time.Sunday + time.Weekday(c.Offset)
		if wd, ok := c.Anchor.Weekday(); ok {
			w = wd
		}
		return d.Weekday() == w
	case Month:
		switch {
		case c.Anchor == Last:
			return d.AddDate(0, 0, 1).Day() == 1
		case c.Anchor > 0:
			return d.Day() == int(c.Anchor)
		default:
			return d.Day() == 1+c.Offset
		}
	default:
		return true
	}
}

// slowDayStart finds the first instant whose local date is day d or later
// by walking from 26 hours before d's midnight UTC in quarter hours, then
// the minutes and seconds before the first hit.
func slowDayStart(d time.Time, loc *time.Location) time.Time {
	localDay := func(t time.Time) time.Time {
		y, m, dd := t.In(loc).Date()
		return date(y, m, dd)
	}
	t := d.Add(-26 * time.Hour)
	for _, step := range []time.Duration{15 * time.Minute, time.Minute, time.Second} {
		for localDay(t).Before(d) {
			t = t.Add(step)
		}
		if step > time.Second {
			t = t.Add(-step)
		}
	}
	return t
}

// slowBounds is Bounds by definition: the last start day whose first
// instant is at or before t, and the next start day after it, found by
// walking days.
func slowBounds(c Calendar, t time.Time) (time.Time, time.Time) {
	loc := c.Zone
	y, m, d := t.In(loc).Date()
	s := date(y, m, d).AddDate(0, 0, 2) // the local date may lag where days repeat
	for !isStartDay(c, s) || slowDayStart(s, loc).After(t) {
		s = s.AddDate(0, 0, -1)
	}
	e := s.AddDate(0, 0, 1)
	for !isStartDay(c, e) {
		e = e.AddDate(0, 0, 1)
	}
	return slowDayStart(s, loc), slowDayStart(e, loc)
}

func randomCalendar(r *rand.Rand, loc *time.Location) Calendar {
	c := Calendar{Zone: loc}
	switch r.IntN(3) {
	case 0:
		c.Period = Day
	case 1:
		c.Period = Week
		if r.IntN(2) == 0 {
			c.Anchor = Monday - Anchor(r.IntN(7))
		} else {
			c.Offset = r.IntN(7)
		}
	default:
		c.Period = Month
		switch r.IntN(3) {
		case 0:
			c.Anchor = Anchor(1 + r.IntN(28))
		case 1:
			c.Anchor = Last
		default:
			c.Offset = r.IntN(28)
		}
	}
	return c
}

func TestBoundsHoldTheInstantAndMatchTheDefinitionInEveryZone(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 3))
	lo, hi := time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), time.Date(2060, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	n := 120
	if testing.Short() {
		n = 20
	}
	for _, name := range testZones {
		loc := mustZone(t, name)
		for range n {
			c := randomCalendar(r, loc)
			at := time.Unix(lo+r.Int64N(hi-lo), 0)
			start, end := c.Bounds(at)
			if at.Before(start) || !at.Before(end) {
				t.Fatalf("%s %+v at %s: [%s, %s) does not hold it", name, c, at, start, end)
			}
			ws, we := slowBounds(c, at)
			if !start.Equal(ws) || !end.Equal(we) {
				t.Fatalf("%s %+v at %s: [%s, %s), want [%s, %s)", name, c, at, start, end, ws, we)
			}
			// the periods tile time: the neighbours meet at the bounds
			if s2, e2 := c.Bounds(end); !s2.Equal(end) || !e2.After(end) {
				t.Fatalf("%s %+v: the period after [%s, %s) is [%s, %s)", name, c, start, end, s2, e2)
			}
			if s0, e0 := c.Bounds(start.Add(-time.Second)); !e0.Equal(start) || !s0.Before(start) {
				t.Fatalf("%s %+v: the period before [%s, %s) is [%s, %s)", name, c, start, end, s0, e0)
			}
		}
	}
}

// Near the edges the walk above rarely lands: every instant within an
// hour either side of local midnight on the days of a year's
// daylight-saving changes, a second apart at the edge.
func TestBoundsAtDaylightSavingChangesAndMonthEnds(t *testing.T) {
	for _, name := range []string{"America/Santiago", "America/Havana", "America/New_York", "Europe/London",
		"Australia/Lord_Howe", "Pacific/Apia", "Asia/Beirut"} {
		loc := mustZone(t, name)
		for _, year := range []int{2011, 2012, 2022, 2024, 2026} {
			for day := date(year, 1, 1); day.Year() == year; day = day.AddDate(0, 0, 1) {
				mid := time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, loc)
				_, o1 := mid.Add(-3 * time.Hour).Zone()
				_, o2 := mid.Add(3 * time.Hour).Zone()
				if o1 == o2 && day.AddDate(0, 0, 1).Day() != 1 {
					continue
				}
				for _, c := range []Calendar{{Period: Day, Zone: loc}, {Period: Month, Anchor: Last, Zone: loc},
					{Period: Month, Anchor: Anchor(day.Day() % 29), Zone: loc}, {Period: Week, Anchor: Monday, Zone: loc}} {
					for at := mid.Add(-90 * time.Minute); at.Before(mid.Add(90 * time.Minute)); at = at.Add(20 * time.Minute) {
						start, end := c.Bounds(at)
						ws, we := slowBounds(c, at)
						if !start.Equal(ws) || !end.Equal(we) {
							t.Fatalf("%s %+v at %s: [%s, %s), want [%s, %s)", name, c, at, start, end, ws, we)
						}
					}
				}
			}
		}
	}
}

func TestBoundsOfNamedDays(t *testing.T) {
	tokyo, santiago, newYork, apia := mustZone(t, "Asia/Tokyo"), mustZone(t, "America/Santiago"),
		mustZone(t, "America/New_York"), mustZone(t, "Pacific/Apia")
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		name       string
		c          Calendar
		at         string
		start, end string
	}{
		{"the 15th in Tokyo starts at 15:00 UTC the day before", Calendar{Period: Month, Anchor: 15, Zone: tokyo},
			"2026-12-02T00:00:00Z", "2026-11-14T15:00:00Z", "2026-12-14T15:00:00Z"},
		{"a second before the 15th in Tokyo is the period before", Calendar{Period: Month, Anchor: 15, Zone: tokyo},
			"2026-12-14T14:59:59Z", "2026-11-14T15:00:00Z", "2026-12-14T15:00:00Z"},
		{"the last day of a leap February", Calendar{Period: Month, Anchor: Last},
			"2028-02-29T12:00:00Z", "2028-02-29T00:00:00Z", "2028-03-31T00:00:00Z"},
		{"the day before a leap day is January's last", Calendar{Period: Month, Anchor: Last},
			"2028-02-28T23:59:59Z", "2028-01-31T00:00:00Z", "2028-02-29T00:00:00Z"},
		{"the 8th of March in New York loses an hour to daylight saving", Calendar{Period: Month, Anchor: 8, Zone: newYork},
			"2026-03-20T00:00:00Z", "2026-03-08T05:00:00Z", "2026-04-08T04:00:00Z"},
		{"Santiago skips midnight: the day starts at 01:00", Calendar{Period: Day, Zone: santiago},
			"2022-09-11T12:00:00Z", "2022-09-11T04:00:00Z", "2022-09-12T03:00:00Z"},
		{"Santiago repeats the hour before midnight: a day of 25 hours", Calendar{Period: Day, Zone: santiago},
			"2022-04-03T03:30:00Z", "2022-04-02T03:00:00Z", "2022-04-03T04:00:00Z"},
		{"Apia skipped the 30th of December 2011", Calendar{Period: Day, Zone: apia},
			"2011-12-30T12:00:00Z", "2011-12-30T10:00:00Z", "2011-12-31T10:00:00Z"},
		{"AWS's offset: MONTH from the 1st + 2 days in UTC", Calendar{Period: Month, Offset: 2},
			"2026-01-02T23:00:00Z", "2025-12-03T00:00:00Z", "2026-01-03T00:00:00Z"},
		{"AWS's offset: WEEK from Sunday + 1 day (Monday) in UTC", Calendar{Period: Week, Offset: 1},
			"2026-12-02T00:00:00Z", "2026-11-30T00:00:00Z", "2026-12-07T00:00:00Z"},
		{"a Sunday anchor in Tokyo", Calendar{Period: Week, Anchor: Sunday, Zone: tokyo},
			"2026-12-05T15:00:00Z", "2026-12-05T15:00:00Z", "2026-12-12T15:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start, end := tc.c.Bounds(utc(tc.at))
			if !start.Equal(utc(tc.start)) || !end.Equal(utc(tc.end)) {
				t.Fatalf("Bounds(%s) = [%s, %s), want [%s, %s)", tc.at, start, end, tc.start, tc.end)
			}
		})
	}
}

func TestTableHoldsThreePeriodsAroundTheInstant(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 4))
	for _, name := range testZones {
		loc := mustZone(t, name)
		for range 50 {
			c := randomCalendar(r, loc)
			at := time.Unix(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).Unix()+r.Int64N(40*365*86400), 0)
			from, start, end, to := c.Table(at)
			s, e := c.Bounds(at)
			if !start.Equal(s) || !end.Equal(e) || !from.Before(start) || !to.After(end) {
				t.Fatalf("%s %+v at %s: table %s %s %s %s", name, c, at, from, start, end, to)
			}
			if ps, pe := c.Bounds(from); !ps.Equal(from) || !pe.Equal(start) {
				t.Fatalf("%s %+v at %s: the period before is [%s, %s), the table says [%s, %s)", name, c, at, ps, pe, from, start)
			}
			if ns, ne := c.Bounds(end); !ns.Equal(end) || !ne.Equal(to) {
				t.Fatalf("%s %+v at %s: the period after is [%s, %s), the table says [%s, %s)", name, c, at, ns, ne, end, to)
			}
		}
	}
}

func TestAnchorsParseAndPrintAsTheTagSpellsThem(t *testing.T) {
	for _, tc := range []struct {
		period, in, out string
		ok              bool
	}{
		{Month, "1", "1", true}, {Month, "28", "28", true}, {Month, "last", "last", true}, {Month, "LAST", "last", true},
		{Month, "29", "", false}, {Month, "0", "", false}, {Month, "MON", "", false},
		{Week, "MON", "MON", true}, {Week, "sun", "SUN", true}, {Week, "1", "", false},
		{Day, "1", "", false}, {Day, "MON", "", false}, {Month, "", "", true},
	} {
		a, err := ParseAnchor(tc.period, tc.in)
		if (err == nil) != tc.ok || (err == nil && a.String() != tc.out) {
			t.Errorf("ParseAnchor(%s, %q) = %q, %v", tc.period, tc.in, a, err)
		}
	}
	for i, want := range []time.Weekday{time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday, time.Saturday, time.Sunday} {
		if wd, ok := (Monday - Anchor(i)).Weekday(); !ok || wd != want {
			t.Errorf("anchor %s: weekday %s, want %s", Monday-Anchor(i), wd, want)
		}
	}
}

func TestOnlyIANAZonesLoad(t *testing.T) {
	for _, name := range []string{"Asia/Tokyo", "America/Argentina/Buenos_Aires", "UTC", ""} {
		if _, err := LoadZone(name); err != nil {
			t.Errorf("LoadZone(%q): %v", name, err)
		}
	}
	for _, name := range []string{"Local", "Mars/Olympus", "/etc/localtime", "../../etc/passwd", "Asia/Tokyo "} {
		if _, err := LoadZone(name); err == nil {
			t.Errorf("LoadZone(%q) loaded", name)
		}
	}
}
