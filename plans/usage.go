package plans

import "time"

// The usage ledger (docs/usage.md) keeps the requests the gateway admitted
// per (key, plan, UTC day) in PostgreSQL, and the last observed quota state
// per (key, plan), so that usage survives a limiter Redis that loses its
// data and can be billed from. The limiter counts in Redis; a flush worker
// moves what it observed there into the ledger (package ledger).

// UsageDay is one row of the usage ledger: Requests requests admitted for
// key KeyID in plan PlanID on the UTC day Day (00:00 UTC), costing Count
// units (docs/cost.md: one per request unless the plan says otherwise).
//
// Version is the ledger version of the row's last change: it comes from
// one sequence for the whole ledger, rises every time the row's count
// changes, and rows become visible in version order, so a consumer that
// remembers the highest version it has seen misses nothing (the record
// feed). UpdatedAt is when the row last changed. KeyName and CustomerID
// are filled by exports only (from the key, empty once it is deleted).
type UsageDay struct {
	PlanID     string
	KeyID      string
	Day        time.Time
	Count      int64
	Requests   int64
	Version    int64
	UpdatedAt  time.Time
	KeyName    string
	CustomerID string
}

// DayCount is the absolute number of requests admitted on one UTC day
// (Requests) and their cost units (Count), as the limiter counts them (Day
// is 00:00 UTC of that day). Requests 0 with a Count means Count requests
// of one unit each.
type DayCount struct {
	Day      time.Time
	Count    int64
	Requests int64
}

// QuotaCount is the quota state of one (key, plan) as the limiter holds it:
// Count requests counted in the quota period that starts at PeriodStart
// (UTC). Seq is the limiter's change sequence number of that state: it
// rises with every change, including an UpdateUsage that lowers Count and
// a new period that restarts it, and keeps rising across a limiter restore
// (a restore starts from the ledger's Seq), so the newer of two states is
// the one with the higher Seq, and two observations with the same Seq hold
// the same state (the first one kept wins).
type QuotaCount struct {
	PeriodStart time.Time
	Count       int64
	Seq         int64
}

// UsageObservation is what a usage source observed for one (key, plan): the
// absolute count of every day that changed (not increments, so observing
// twice is harmless) and, when the plan has a quota, the quota state
// (nil when none was observed).
type UsageObservation struct {
	KeyID  string
	PlanID string
	Days   []DayCount
	Quota  *QuotaCount
}

// CustomerUsage is a customer quota's state (CustomerQuotaTag) in the
// limiter now: the units the customer's keys used in the current period
// (a settled cost may take it past Limit by one request's excess) and
// what is left, on the limiter's clock.
type CustomerUsage struct {
	Limit, Used, Remaining      int64
	Now, PeriodStart, PeriodEnd time.Time
}

// CustomerQuotaUsage is what the ledger knows of one customer's use of a
// plan's customer quota in one period: the counts of its keys' quota
// states of that period, summed. A key without a customerId is its own
// customer: CustomerID is then empty and KeyID names the key.
type CustomerQuotaUsage struct {
	PlanID, CustomerID, KeyID string
	PeriodStart               time.Time
	Used                      int64
}

// QuotaUsage is one stored quota state of the ledger (see QuotaCount).
// UpdatedAt is when the ledger last replaced it.
type QuotaUsage struct {
	KeyID  string
	PlanID string
	QuotaCount
	UpdatedAt time.Time
}

// UsageQuery selects ledger rows: the days From to To inclusive (UTC dates;
// times of day are ignored), of plan PlanID ("" for every plan) and, when
// KeyIDs is not empty, of those keys only. Rows come in (day, plan, key)
// order, at most Limit of them (1..MaxUsagePage; other values mean
// MaxUsagePage), after the row After names (nil: from the first).
type UsageQuery struct {
	PlanID   string
	KeyIDs   []string
	From, To time.Time
	After    *UsageCursor
	Limit    int
}

// UsageCursor names one ledger row, the last of a page: the next page
// starts after it.
type UsageCursor struct {
	PlanID string
	KeyID  string
	Day    time.Time
}

// MaxUsagePage is the largest page of ledger rows one read returns.
const MaxUsagePage = 10000

// MaxUsageExportDays is the longest date range of one usage export, in days
// (both ends included): a year, leap day included.
const MaxUsageExportDays = 366

// UsageDateLayout is the format of usage dates on the wire (GetUsage's
// startDate and endDate, exports, the record feed): "2006-01-02", UTC.
const UsageDateLayout = "2006-01-02"

// UTCDate returns t's UTC calendar date at 00:00 UTC.
func UTCDate(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// ParseUsageDate reads a YYYY-MM-DD date of the query parameter or flag
// named field. Errors: KindInvalid naming field.
func ParseUsageDate(field, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, Invalid(field, "%s is required (YYYY-MM-DD)", field)
	}
	t, err := time.Parse(UsageDateLayout, v)
	if err != nil {
		return time.Time{}, Invalid(field, "%s %q must be a date YYYY-MM-DD", field, v)
	}
	return t, nil
}

// ValidateUsageRange checks that from..to (UTC dates, both included) is a
// range of at most maxDays days. Errors: KindInvalid naming endDate when to
// is before from, startDate when the range is too long (the names of
// GetUsage's and the export's query parameters).
func ValidateUsageRange(from, to time.Time, maxDays int) error {
	if to.Before(from) {
		return Invalid("endDate", "endDate %s is before startDate %s", to.Format(UsageDateLayout), from.Format(UsageDateLayout))
	}
	if days := int(UTCDate(to).Sub(UTCDate(from))/(24*time.Hour)) + 1; days > maxDays {
		return Invalid("startDate", "startDate..endDate spans %d days; at most %d are allowed", days, maxDays)
	}
	return nil
}

// Validate checks an observation: key and plan ids set, every day and the
// quota period start set, counts not negative. Errors: KindInvalid naming
// the field ("keyId", "usagePlanId", "days", "quota").
func (o *UsageObservation) Validate() error {
	switch {
	case o.KeyID == "":
		return Invalid("keyId", "usage observation without keyId")
	case o.PlanID == "":
		return Invalid("usagePlanId", "usage observation of key %s without usagePlanId", o.KeyID)
	}
	for _, d := range o.Days {
		if d.Day.IsZero() || d.Count < 0 || d.Requests < 0 {
			return Invalid("days", "usage observation of key %s: day %s count %d is not a day with a count >= 0",
				o.KeyID, d.Day.Format(UsageDateLayout), d.Count)
		}
	}
	if q := o.Quota; q != nil && (q.PeriodStart.IsZero() || q.Count < 0) {
		return Invalid("quota", "usage observation of key %s: quota period start %v count %d is not a period with a count >= 0",
			o.KeyID, q.PeriodStart, q.Count)
	}
	return nil
}
