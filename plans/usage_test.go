package plans_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"tollgate/plans"
)

var march1 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

func TestUsageBatchKeepsTheHighestCountAndTheNewestQuota(t *testing.T) {
	var b plans.UsageBatch
	late := time.Date(2026, 3, 1, 23, 59, 0, 0, time.FixedZone("x", -3600)) // 2026-03-02 00:59 UTC
	b.Add(plans.UsageObservation{KeyID: "k", PlanID: "p", Days: []plans.DayCount{{march1, 5, 0}, {late, 2, 0}},
		Quota: &plans.QuotaCount{PeriodStart: march1, Count: 7, Seq: 7}})
	b.Add(plans.UsageObservation{KeyID: "k", PlanID: "p", Days: []plans.DayCount{{march1.Add(time.Hour), 3, 0}, {march1.AddDate(0, 0, 2), 0, 0}},
		Quota: &plans.QuotaCount{PeriodStart: march1, Count: 6, Seq: 6}})
	b.Add(plans.UsageObservation{KeyID: "k", PlanID: "p", Days: []plans.DayCount{{march1.AddDate(0, 0, 1), 4, 0}},
		Quota: &plans.QuotaCount{PeriodStart: march1, Count: 1, Seq: 8}})
	if got, want := dayList(&b), "[p/k/2026-03-01=5 p/k/2026-03-02=4]"; got != want {
		t.Errorf("days: got %s, want %s", got, want)
	}
	qs := b.Quotas()
	if len(qs) != 1 || qs[0].Seq != 8 || qs[0].Count != 1 {
		t.Errorf("quotas: got %+v, want the one with seq 8", qs)
	}
	if b.Len() != 3 {
		t.Errorf("got len %d, want 3", b.Len())
	}
}

func dayList(b *plans.UsageBatch) string {
	var days []string
	for _, d := range b.Days() {
		days = append(days, fmt.Sprintf("%s/%s/%s=%d", d.PlanID, d.KeyID, d.Day.Format(plans.UsageDateLayout), d.Count))
	}
	return fmt.Sprint(days)
}

// TestUsageBatchIsOrderFreeAndIdempotent checks UsageBatch against a
// reference model (the maximum per day, the highest Seq per pair) on
// random observations added in random orders, some twice.
func TestUsageBatchIsOrderFreeAndIdempotent(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 12))
	for round := range 200 {
		var obs []plans.UsageObservation
		maxDay := map[string]int64{}
		for range 1 + rng.IntN(20) {
			o := plans.UsageObservation{KeyID: fmt.Sprintf("k%d", rng.IntN(3)), PlanID: fmt.Sprintf("p%d", rng.IntN(2))}
			for range rng.IntN(3) {
				d := plans.DayCount{Day: march1.AddDate(0, 0, rng.IntN(3)).Add(time.Duration(rng.IntN(86400)) * time.Second), Count: int64(rng.IntN(50))}
				o.Days = append(o.Days, d)
				if id := o.PlanID + "/" + o.KeyID + "/" + d.Day.Format(plans.UsageDateLayout); d.Count > maxDay[id] {
					maxDay[id] = d.Count
				}
			}
			if rng.IntN(2) == 0 {
				o.Quota = &plans.QuotaCount{PeriodStart: march1, Count: int64(rng.IntN(100)), Seq: int64(rng.IntN(1000))}
			}
			obs = append(obs, o)
		}
		var first, second plans.UsageBatch
		for _, o := range obs {
			first.Add(o)
		}
		for _, i := range rng.Perm(len(obs)) {
			second.Add(obs[i])
			if rng.IntN(3) == 0 {
				second.Add(obs[i])
			}
		}
		if a, b := dayList(&first), dayList(&second); a != b {
			t.Fatalf("round %d: got %s in one order and %s in another", round, a, b)
		}
		for _, d := range first.Days() {
			if id := d.PlanID + "/" + d.KeyID + "/" + d.Day.Format(plans.UsageDateLayout); d.Count != maxDay[id] {
				t.Fatalf("round %d: %s got %d, want the maximum %d", round, id, d.Count, maxDay[id])
			}
		}
		if a, b := fmt.Sprint(first.Quotas()), fmt.Sprint(second.Quotas()); a != b {
			t.Fatalf("round %d: quotas %s in one order, %s in another", round, a, b)
		}
	}
}

func TestUsageObservationValidate(t *testing.T) {
	ok := plans.UsageObservation{KeyID: "k", PlanID: "p", Days: []plans.DayCount{{march1, 0, 0}}}
	cases := map[string]struct {
		edit  func(*plans.UsageObservation)
		field string
	}{
		"valid":           {func(*plans.UsageObservation) {}, ""},
		"no key":          {func(o *plans.UsageObservation) { o.KeyID = "" }, "keyId"},
		"no plan":         {func(o *plans.UsageObservation) { o.PlanID = "" }, "usagePlanId"},
		"negative count":  {func(o *plans.UsageObservation) { o.Days[0].Count = -1 }, "days"},
		"no day":          {func(o *plans.UsageObservation) { o.Days[0].Day = time.Time{} }, "days"},
		"no period start": {func(o *plans.UsageObservation) { o.Quota = &plans.QuotaCount{Count: 1} }, "quota"},
		"negative quota":  {func(o *plans.UsageObservation) { o.Quota = &plans.QuotaCount{PeriodStart: march1, Count: -2} }, "quota"},
	}
	for name, c := range cases {
		o := ok
		o.Days = append([]plans.DayCount(nil), ok.Days...)
		c.edit(&o)
		err := o.Validate()
		if c.field == "" {
			if err != nil {
				t.Errorf("%s: got %v, want no error", name, err)
			}
			continue
		}
		var pe *plans.Error
		if !errors.As(err, &pe) || pe.Field != c.field {
			t.Errorf("%s: got %v, want an error naming %s", name, err, c.field)
		}
	}
}

func TestValidateUsageRange(t *testing.T) {
	if err := plans.ValidateUsageRange(march1, march1.AddDate(0, 0, 89), 90); err != nil {
		t.Errorf("90 days: got %v, want none", err)
	}
	for _, c := range []struct {
		to    time.Time
		field string
	}{{march1.AddDate(0, 0, 90), "startDate"}, {march1.AddDate(0, 0, -1), "endDate"}} {
		var pe *plans.Error
		if err := plans.ValidateUsageRange(march1, c.to, 90); !errors.As(err, &pe) || pe.Field != c.field {
			t.Errorf("to %v: got %v, want an error naming %s", c.to, err, c.field)
		}
	}
}
