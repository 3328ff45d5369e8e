package plans

import (
	"errors"
	"testing"
	"time"
)

// The anchor and zone of a plan's quota, as fields or tags: a bad value is
// a 400 naming the field or the tag, the zone whether or not an anchor is
// set; a field wins over its tag.
func TestQuotaAnchorAndZoneAreCheckedAndNamed(t *testing.T) {
	month := &Quota{Limit: 10, Period: PeriodMonth}
	week := &Quota{Limit: 10, Period: PeriodWeek}
	day := &Quota{Limit: 10, Period: PeriodDay}
	with := func(q *Quota, f func(*Quota)) *Quota { c := *q; f(&c); return &c }
	for _, tc := range []struct {
		name  string
		quota *Quota
		tags  map[string]string
		field string // "" valid
	}{
		{"a month day", with(month, func(q *Quota) { q.Anchor, q.TimeZone = "15", "Asia/Tokyo" }), nil, ""},
		{"the last day", with(month, func(q *Quota) { q.Anchor = "last" }), nil, ""},
		{"a weekday", with(week, func(q *Quota) { q.Anchor = "MON" }), nil, ""},
		{"a zone alone", with(day, func(q *Quota) { q.TimeZone = "Europe/Paris" }), nil, ""},
		{"day 29", with(month, func(q *Quota) { q.Anchor = "29" }), nil, "quota.anchor"},
		{"a weekday for a month", with(month, func(q *Quota) { q.Anchor = "MON" }), nil, "quota.anchor"},
		{"an anchor for a day", with(day, func(q *Quota) { q.Anchor = "1" }), nil, "quota.anchor"},
		{"an anchor with an offset", with(month, func(q *Quota) { q.Anchor, q.Offset = "3", 2 }), nil, "quota.anchor"},
		{"an unknown zone", with(month, func(q *Quota) { q.TimeZone = "Mars/Olympus" }), nil, "quota.timeZone"},
		{"tags", month, map[string]string{QuotaAnchorTag: "last", QuotaTimeZoneTag: "America/New_York"}, ""},
		{"a bad anchor tag", month, map[string]string{QuotaAnchorTag: "32"}, "tags." + QuotaAnchorTag},
		{"an unknown zone tag without an anchor", month, map[string]string{QuotaTimeZoneTag: "Asia/Nowhere"}, "tags." + QuotaTimeZoneTag},
		{"an empty zone tag", month, map[string]string{QuotaTimeZoneTag: ""}, "tags." + QuotaTimeZoneTag},
		{"an anchor tag on a plan without a quota", nil, map[string]string{QuotaAnchorTag: "SUN"}, ""},
		{"a bad anchor tag on a plan without a quota", nil, map[string]string{QuotaAnchorTag: "someday"}, "tags." + QuotaAnchorTag},
		{"a tag of another period beside the field", with(week, func(q *Quota) { q.Anchor = "FRI" }), map[string]string{QuotaAnchorTag: "15"}, "tags." + QuotaAnchorTag},
		{"day 29 as a tag beside the field", with(month, func(q *Quota) { q.Anchor = "15" }), map[string]string{QuotaAnchorTag: "29"}, "tags." + QuotaAnchorTag},
		{"a good tag beside the field", with(month, func(q *Quota) { q.Anchor = "15" }), map[string]string{QuotaAnchorTag: "last"}, ""},
		{"alerts", month, map[string]string{AlertsTag: "80, 90,100"}, ""},
		{"alerts over 200", month, map[string]string{AlertsTag: "80,250"}, "tags." + AlertsTag},
		{"alerts twice", month, map[string]string{AlertsTag: "80,80"}, "tags." + AlertsTag},
		{"alerts not numbers", month, map[string]string{AlertsTag: "eighty"}, "tags." + AlertsTag},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &UsagePlan{Name: "p", Quota: tc.quota, Tags: tc.tags}
			err := p.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var pe *Error
			if !errors.As(err, &pe) || pe.Kind != KindInvalid || pe.Field != tc.field {
				t.Fatalf("Validate: %v, want invalid %s", err, tc.field)
			}
		})
	}
}

// QuotaRule takes the anchor and zone from the tags where the fields are
// empty, and the periods follow them.
func TestQuotaRuleFollowsTagsUnlessFieldsAreSet(t *testing.T) {
	p := &UsagePlan{Quota: &Quota{Limit: 300, Period: PeriodMonth},
		Tags: map[string]string{QuotaAnchorTag: "15", QuotaTimeZoneTag: "Asia/Tokyo", AlertsTag: "100,80"}}
	q := p.QuotaRule()
	start, end := q.Bounds(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC))
	if q.Anchor != "15" || q.TimeZone != "Asia/Tokyo" || !start.Equal(time.Date(2026, 11, 14, 15, 0, 0, 0, time.UTC)) ||
		!end.Equal(time.Date(2026, 12, 14, 15, 0, 0, 0, time.UTC)) {
		t.Fatalf("QuotaRule %+v: period [%s, %s)", q, start, end)
	}
	if a := p.AlertThresholds(); len(a) != 2 || a[0] != 80 || a[1] != 100 {
		t.Fatalf("AlertThresholds %v, want [80 100]", a)
	}
	p.Quota.Anchor, p.Alerts = "last", []int32{50}
	if q := p.QuotaRule(); q.Anchor != "last" || q.TimeZone != "Asia/Tokyo" {
		t.Fatalf("QuotaRule with the anchor field: %+v", q)
	}
	if a := p.AlertThresholds(); len(a) != 1 || a[0] != 50 {
		t.Fatalf("AlertThresholds with the field: %v", a)
	}
	if p.Quota.Anchor != "last" || p.Quota.TimeZone != "" {
		t.Fatalf("QuotaRule changed the plan's quota: %+v", p.Quota)
	}
}

func TestAlertsCrossAtTheirShareOfTheLimit(t *testing.T) {
	for _, tc := range []struct {
		used, limit int64
		threshold   int32
		want        bool
	}{{240, 300, 80, true}, {239, 300, 80, false}, {300, 300, 100, true}, {1, 3, 34, false}, {2, 3, 34, true},
		{0, 0, 100, false}, {1, 0, 100, true}, {301, 300, 100, true}} {
		if got := Crossed(tc.used, tc.limit, tc.threshold); got != tc.want {
			t.Errorf("Crossed(%d of %d, %d%%) = %v", tc.used, tc.limit, tc.threshold, got)
		}
	}
}

// A key's own calendar: its fields win over its tags, field by field; it
// replaces the plan's anchor (and offset) and zone, each only where it
// sets one; an anchor that does not fit the plan's period is left out.
func TestKeyCalendarReplacesThePlansAnchorAndZone(t *testing.T) {
	k := &ApiKey{QuotaAnchor: "15", Tags: map[string]string{QuotaAnchorTag: "last", QuotaTimeZoneTag: "Asia/Tokyo"}}
	if c := k.QuotaCalendar(); c != (KeyCalendar{Anchor: "15", TimeZone: "Asia/Tokyo"}) {
		t.Fatalf("QuotaCalendar %+v, want the field's anchor and the tag's zone", c)
	}
	plan := &Quota{Limit: 10, Period: PeriodMonth, Offset: 3}
	for _, tc := range []struct {
		name string
		cal  KeyCalendar
		want Quota
	}{
		{"none", KeyCalendar{}, *plan},
		{"anchor and zone", KeyCalendar{Anchor: "15", TimeZone: "Asia/Tokyo"}, Quota{Limit: 10, Period: PeriodMonth, Anchor: "15", TimeZone: "Asia/Tokyo"}},
		{"a zone alone keeps the offset", KeyCalendar{TimeZone: "Europe/Paris"}, Quota{Limit: 10, Period: PeriodMonth, Offset: 3, TimeZone: "Europe/Paris"}},
		{"a weekday on a MONTH plan is left out", KeyCalendar{Anchor: "MON", TimeZone: "UTC"}, Quota{Limit: 10, Period: PeriodMonth, Offset: 3, TimeZone: "UTC"}},
	} {
		if got := tc.cal.Apply(plan); *got != tc.want {
			t.Errorf("%s: Apply gives %+v, want %+v", tc.name, *got, tc.want)
		}
	}
	if got := (KeyCalendar{Anchor: "1"}).Apply(nil); got != nil {
		t.Errorf("Apply(nil) = %+v, want nil", got)
	}
	for _, tc := range []struct {
		anchors KeyAnchors
		period  string
		field   string // "" fits
	}{
		{KeyAnchors{Field: "15"}, PeriodMonth, ""},
		{KeyAnchors{Tag: "SUN"}, PeriodWeek, ""},
		{KeyAnchors{Field: "15"}, PeriodWeek, "quotaAnchor"},
		{KeyAnchors{Field: "MON", Tag: "15"}, PeriodWeek, "tags." + QuotaAnchorTag},
		{KeyAnchors{Tag: "last"}, PeriodDay, "tags." + QuotaAnchorTag},
		{KeyAnchors{Field: "last"}, "", ""},
	} {
		err := tc.anchors.Fits("key1", "plan1", tc.period)
		var pe *Error
		if tc.field == "" && err != nil || tc.field != "" && (!errors.As(err, &pe) || pe.Field != tc.field) {
			t.Errorf("%+v on %q: %v, want a refusal naming %q", tc.anchors, tc.period, err, tc.field)
		}
	}
}
