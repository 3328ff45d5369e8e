package plans

import (
	"cmp"
	"slices"
)

// UsageBatch merges usage observations before they are written to the
// ledger: per (plan, key, UTC day) it keeps the highest count, per (key,
// plan) the quota state with the highest Seq (units and requests each).
// Because the limiter's counts
// are absolute, merging two observations of the same day is taking the
// larger, and adding an observation twice changes nothing. The zero value
// is an empty batch; a batch is not safe for concurrent use.
type UsageBatch struct {
	days   map[UsageCursor]dayTotals
	quotas map[usagePair]QuotaCount
}

type usagePair struct{ keyID, planID string }

// dayTotals is one day's cost units and requests.
type dayTotals struct{ units, requests int64 }

// Add merges o into the batch; o should be valid (Validate). Days are
// taken at their UTC date. A day without requests adds nothing (the ledger
// has no row for it).
func (b *UsageBatch) Add(o UsageObservation) {
	if b.days == nil {
		b.days, b.quotas = map[UsageCursor]dayTotals{}, map[usagePair]QuotaCount{}
	}
	for _, d := range o.Days {
		k := UsageCursor{PlanID: o.PlanID, KeyID: o.KeyID, Day: UTCDate(d.Day)}
		if d.Count > 0 || d.Requests > 0 {
			if d.Requests == 0 {
				d.Requests = d.Count
			}
			t := b.days[k]
			b.days[k] = dayTotals{units: max(t.units, d.Count), requests: max(t.requests, d.Requests)}
		}
	}
	if q := o.Quota; q != nil {
		p := usagePair{o.KeyID, o.PlanID}
		if cur, ok := b.quotas[p]; !ok || q.Seq > cur.Seq {
			b.quotas[p] = QuotaCount{PeriodStart: q.PeriodStart.UTC(), Count: q.Count, Seq: q.Seq}
		}
	}
}

// Len is the number of day counts plus quota states in the batch.
func (b *UsageBatch) Len() int { return len(b.days) + len(b.quotas) }

// Days returns the batch's day counts in (plan, key, day) order, with
// Version and UpdatedAt zero.
func (b *UsageBatch) Days() []UsageDay {
	out := make([]UsageDay, 0, len(b.days))
	for k, t := range b.days {
		out = append(out, UsageDay{PlanID: k.PlanID, KeyID: k.KeyID, Day: k.Day, Count: t.units, Requests: t.requests})
	}
	slices.SortFunc(out, func(x, y UsageDay) int {
		return cmp.Or(cmp.Compare(x.PlanID, y.PlanID), cmp.Compare(x.KeyID, y.KeyID), x.Day.Compare(y.Day))
	})
	return out
}

// Quotas returns the batch's quota states in (key, plan) order, with
// UpdatedAt zero.
func (b *UsageBatch) Quotas() []QuotaUsage {
	out := make([]QuotaUsage, 0, len(b.quotas))
	for p, q := range b.quotas {
		out = append(out, QuotaUsage{KeyID: p.keyID, PlanID: p.planID, QuotaCount: q})
	}
	slices.SortFunc(out, func(x, y QuotaUsage) int {
		return cmp.Or(cmp.Compare(x.KeyID, y.KeyID), cmp.Compare(x.PlanID, y.PlanID))
	})
	return out
}
