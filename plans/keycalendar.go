package plans

import (
	"fmt"
	"strings"

	"tollgate/calendar"
)

// KeyCalendar is an API key's own quota calendar (docs/cost.md, "Anchored
// periods"): an anchor and an IANA zone that replace, field by field, those
// of every usage plan the key is on, for that key's own quota only. The
// plan's period, limit and customer quota stay the plan's. "" leaves the
// plan's anchor (or offset) or zone. It comes from the key's fields
// quotaAnchor and quotaTimeZone, else its tags QuotaAnchorTag and
// QuotaTimeZoneTag, the same tags a plan takes.
type KeyCalendar struct {
	Anchor   string `json:"anchor,omitempty"`
	TimeZone string `json:"timeZone,omitempty"`
}

// IsZero reports whether c replaces nothing.
func (c KeyCalendar) IsZero() bool { return c.Anchor == "" && c.TimeZone == "" }

// QuotaCalendar returns the key's own quota calendar: each field that is
// set, else its tag.
func (k *ApiKey) QuotaCalendar() KeyCalendar {
	return keyCalendar(k.QuotaAnchor, k.QuotaTimeZone, k.Tags)
}

// keyCalendar is the calendar of a key with those fields and tags.
func keyCalendar(anchor, zone string, tags map[string]string) KeyCalendar {
	c := KeyCalendar{Anchor: anchor, TimeZone: zone}
	if c.Anchor == "" {
		c.Anchor = tags[QuotaAnchorTag]
	}
	if c.TimeZone == "" {
		c.TimeZone = tags[QuotaTimeZoneTag]
	}
	return c
}

// Apply returns the plan quota rule q (UsagePlan.QuotaRule) as the key's
// quota runs: c's anchor in place of q's anchor and offset, c's zone in
// place of q's. An anchor that does not fit q's period (the admin refuses
// to put such a key on such a plan, KeyCalendar.Fits) is left out: the
// plan's anchor stands. nil stays nil.
func (c KeyCalendar) Apply(q *Quota) *Quota {
	if q == nil || c.IsZero() {
		return q
	}
	out := *q
	if c.Anchor != "" {
		if _, err := calendar.ParseAnchor(q.Period, c.Anchor); err == nil {
			out.Anchor, out.Offset = c.Anchor, 0
		}
	}
	if c.TimeZone != "" {
		out.TimeZone = c.TimeZone
	}
	return &out
}

// SameCalendar reports whether q and o start their periods alike (their
// period, offset, anchor and zone; limits aside).
func (q *Quota) SameCalendar(o *Quota) bool {
	if q == nil || o == nil {
		return q == o
	}
	return q.Calendar() == o.Calendar()
}

// keyAnchorField and keyZoneField are the key's fields of its own quota
// calendar, as a 400 names them.
const (
	keyAnchorField = "quotaAnchor"
	keyZoneField   = "quotaTimeZone"
)

// validateCalendar checks the key's quota anchor and zone, as fields and
// as tags, each whatever the other says (a PATCH clearing a field must not
// find a bad tag): a zone must be an IANA zone, an anchor a day 1..28,
// last, or MON..SUN. Whether an anchor fits the period of the key's plans
// is the store's check (KeyAnchors.Fits).
func (k *ApiKey) validateCalendar() error {
	tagAnchor, anchorTagged := k.Tags[QuotaAnchorTag]
	tagZone, zoneTagged := k.Tags[QuotaTimeZoneTag]
	for _, c := range []struct {
		anchorField, zoneField, anchor, zone string
		anchorSet, zoneSet                   bool
	}{
		{keyAnchorField, keyZoneField, k.QuotaAnchor, k.QuotaTimeZone, k.QuotaAnchor != "", k.QuotaTimeZone != ""},
		{"tags." + QuotaAnchorTag, "tags." + QuotaTimeZoneTag, tagAnchor, tagZone, anchorTagged, zoneTagged},
	} {
		if c.zoneSet && !validZone(c.zone) {
			return Invalid(c.zoneField, "%s=%q is not an IANA time zone name such as Asia/Tokyo", c.zoneField, c.zone)
		}
		if c.anchorSet && !anyAnchor(c.anchor) {
			return Invalid(c.anchorField, "%s=%q must be a day 1..28 or last (MONTH plans), or MON..SUN (WEEK plans)", c.anchorField, c.anchor)
		}
	}
	return nil
}

// validZone reports whether zone names an IANA time zone.
func validZone(zone string) bool {
	_, err := calendar.LoadZone(zone)
	return err == nil && zone != ""
}

// anyAnchor reports whether s is an anchor of some period.
func anyAnchor(s string) bool {
	_, e1 := calendar.ParseAnchor(calendar.Month, s)
	_, e2 := calendar.ParseAnchor(calendar.Week, s)
	return s != "" && (e1 == nil || e2 == nil)
}

// KeyAnchors are the anchors a key sets, by where each is set: its field
// quotaAnchor and its tag QuotaAnchorTag (either "" when absent). Both
// must fit every plan the key is on (the tag even where the field wins
// today: clearing the field must not leave a misfit).
type KeyAnchors struct {
	Field, Tag string
}

// Fits returns a KindInvalid error, naming the key's field or tag that
// does not fit, when an anchor of a does not fit period, the quota period
// of usage plan planID the key keyID is (or is being put) on: a day 1..28
// or last for MONTH, MON..SUN for WEEK, none for DAY. period "" (a plan
// without a quota) fits anything.
func (a KeyAnchors) Fits(keyID, planID, period string) error {
	if period == "" {
		return nil
	}
	for _, c := range []struct{ field, label, v string }{
		{keyAnchorField, keyAnchorField, a.Field},
		{"tags." + QuotaAnchorTag, "tag " + QuotaAnchorTag, a.Tag},
	} {
		if c.v == "" {
			continue
		}
		if _, err := calendar.ParseAnchor(period, c.v); err != nil {
			return Invalid(c.field, "%s=%q of API key %s does not fit the %s quota of usage plan %s: %s",
				c.label, c.v, keyID, period, planID, anchorsFor(period))
		}
	}
	return nil
}

// anchorsFor says which anchors a period takes.
func anchorsFor(period string) string {
	switch strings.ToUpper(period) {
	case PeriodMonth:
		return "a MONTH period starts on a day 1..28 or last"
	case PeriodWeek:
		return "a WEEK period starts on MON..SUN"
	default:
		return fmt.Sprintf("a %s period takes no anchor (a time zone alone is fine)", period)
	}
}
