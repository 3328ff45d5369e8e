package postgres_test

import (
	"encoding/json"
	"reflect"
	"sync"
	"testing"
	"time"

	"tollgate/plans"
	"tollgate/plans/postgres"
)

// quotaSeen is an observation of keyID's quota state in planID.
func quotaSeen(planID, keyID string, start time.Time, count, seq int64) plans.UsageObservation {
	return plans.UsageObservation{KeyID: keyID, PlanID: planID, Quota: &plans.QuotaCount{PeriodStart: start, Count: count, Seq: seq}}
}

// customerKey creates an enabled key of customer ("" for none) and
// returns its id.
func customerKey(t *testing.T, db *postgres.DB, customer string) string {
	t.Helper()
	k := &plans.ApiKey{Name: "k", Enabled: true, Value: plans.NewKeyValue(), CustomerID: customer}
	must(t, db.CreateApiKey(ctx, k, plans.HashKey(k.Value, nil)))
	return k.ID
}

// outbox returns the bodies of the quota.threshold webhooks enqueued.
func thresholdWebhooks(t *testing.T, db *postgres.DB) []map[string]any {
	t.Helper()
	ws, err := db.ClaimWebhooks(ctx, 100, time.Minute)
	must(t, err)
	var out []map[string]any
	for _, w := range ws {
		if w.Type != plans.EventQuotaThreshold {
			continue
		}
		var m map[string]any
		must(t, json.Unmarshal(w.Body, &m))
		if m["id"] != w.ID {
			t.Fatalf("webhook %s has body id %v", w.ID, m["id"])
		}
		out = append(out, m)
	}
	return out
}

// A flush whose quota states reach a plan's alert thresholds records each
// crossing once per key, period and threshold, with its webhook, whatever
// repeats it: the same flush again, higher counts, concurrent flushes. A
// new period crosses them again.
func TestFlushRecordsEachAlertOncePerKeyPeriodAndThreshold(t *testing.T) {
	db := newDB(t)
	p := &plans.UsagePlan{Name: "tokens", Quota: &plans.Quota{Limit: 300, Period: plans.PeriodMonth, Anchor: "15", TimeZone: "Asia/Tokyo"},
		Tags: map[string]string{plans.AlertsTag: "80,90,100"}}
	must(t, db.CreateUsagePlan(ctx, p))
	quiet := newPlan(t, db, "no alerts")
	k := &plans.ApiKey{Name: "k", Enabled: true, Value: plans.NewKeyValue(), CustomerID: "acme"}
	must(t, db.CreateApiKey(ctx, k, plans.HashKey(k.Value, nil)))
	start := time.Date(2026, 11, 14, 15, 0, 0, 0, time.UTC)
	end := time.Date(2026, 12, 14, 15, 0, 0, 0, time.UTC)

	flush(t, db, quotaSeen(p.ID, k.ID, start, 239, 1), quotaSeen(quiet.ID, k.ID, start, 1000, 1))
	if ws := thresholdWebhooks(t, db); len(ws) != 0 {
		t.Fatalf("239 of 300: webhooks %v, want none", ws)
	}
	flush(t, db, quotaSeen(p.ID, k.ID, start, 275, 2))
	ws := thresholdWebhooks(t, db)
	if len(ws) != 2 {
		t.Fatalf("275 of 300: webhooks %v, want 80 and 90", ws)
	}
	for _, w := range ws {
		if w["type"] != "quota.threshold" || w["planId"] != p.ID || w["keyId"] != k.ID || w["customerId"] != "acme" ||
			w["used"] != 275.0 || w["limit"] != 300.0 || w["periodStart"] != "2026-11-14T15:00:00Z" || w["periodEnd"] != "2026-12-14T15:00:00Z" ||
			(w["threshold"] != 80.0 && w["threshold"] != 90.0) {
			t.Fatalf("webhook %v", w)
		}
		if _, err := time.Parse(time.RFC3339, w["time"].(string)); err != nil {
			t.Fatalf("webhook time %v: %v", w["time"], err)
		}
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			if _, err := db.FlushUsage(ctx, batch(quotaSeen(p.ID, k.ID, start, 300+int64(i), 3+int64(i)))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	flush(t, db, quotaSeen(p.ID, k.ID, start, 275, 2))
	if ws := thresholdWebhooks(t, db); len(ws) != 1 || ws[0]["threshold"] != 100.0 {
		t.Fatalf("300 and more, four times at once: webhooks %v, want 100 once", ws)
	}
	flush(t, db, quotaSeen(p.ID, k.ID, end, 250, 10))
	if ws := thresholdWebhooks(t, db); len(ws) != 1 || ws[0]["threshold"] != 80.0 || ws[0]["periodStart"] != "2026-12-14T15:00:00Z" ||
		ws[0]["periodEnd"] != "2027-01-14T15:00:00Z" {
		t.Fatalf("the next period: webhooks %v, want 80 once in it", ws)
	}

	alerts, next, err := db.Alerts(ctx, plans.AlertQuery{PlanID: p.ID, Limit: 2})
	must(t, err)
	if len(alerts) != 2 || next == "" || alerts[0].Threshold != 80 || !alerts[0].PeriodStart.Equal(end) {
		t.Fatalf("first page of alerts %+v next %q", alerts, next)
	}
	rest, next2, err := db.Alerts(ctx, plans.AlertQuery{PlanID: p.ID, Limit: 10, Position: next})
	must(t, err)
	if len(rest) != 2 || next2 != "" {
		t.Fatalf("second page of alerts %+v next %q, want the other 2", rest, next2)
	}
	for _, a := range append(alerts, rest...) {
		if a.Delivery.State != plans.AlertPending || a.Delivery.Attempts != 1 || a.KeyID != k.ID || a.CustomerID != "acme" || a.Scope != plans.AlertScopeKey {
			t.Fatalf("alert %+v: want one pending try of key %s", a, k.ID)
		}
	}
	must(t, db.WebhookDelivered(ctx, alerts[0].ID))
	got, _, err := db.Alerts(ctx, plans.AlertQuery{KeyID: k.ID, Limit: 1})
	must(t, err)
	if len(got) != 1 || got[0].Delivery.State != plans.AlertDelivered || got[0].Delivery.DeliveredAt == nil {
		t.Fatalf("after delivery: %+v", got)
	}
	if none, _, err := db.Alerts(ctx, plans.AlertQuery{CustomerID: "other"}); err != nil || len(none) != 0 {
		t.Fatalf("alerts of another customer: %+v %v", none, err)
	}
	if _, _, err := db.Alerts(ctx, plans.AlertQuery{Position: "nonsense"}); plans.ErrorKind(err) != plans.KindInvalid {
		t.Fatalf("a bad position: %v", err)
	}
}

// A plan with a customer quota alerts of each customer's use too: its
// keys' counts in the period summed, once per customer, period and
// threshold; a key without a customer is its own customer.
func TestFlushRecordsCustomerAlertsOverTheirKeys(t *testing.T) {
	db := newDB(t)
	p := &plans.UsagePlan{Name: "shared", Quota: &plans.Quota{Limit: 1000, Period: plans.PeriodMonth},
		Tags: map[string]string{plans.AlertsTag: "50,100", "tollgate:customer-quota": "10"}}
	must(t, db.CreateUsagePlan(ctx, p))
	k1, k2, own := customerKey(t, db, "acme"), customerKey(t, db, "acme"), customerKey(t, db, "")
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

	flush(t, db, quotaSeen(p.ID, k1, start, 3, 1), quotaSeen(p.ID, k2, start, 1, 1))
	if ws := thresholdWebhooks(t, db); len(ws) != 0 {
		t.Fatalf("4 of acme's 10: webhooks %v, want none", ws)
	}
	flush(t, db, quotaSeen(p.ID, k2, start, 2, 2), quotaSeen(p.ID, own, start, 5, 1))
	ws := thresholdWebhooks(t, db)
	if len(ws) != 2 {
		t.Fatalf("acme at 5 of 10 and a lone key at 5: webhooks %v, want 2", ws)
	}
	for _, w := range ws {
		switch {
		case w["customerId"] == "acme" && w["keyId"] == nil && w["used"] == 5.0 && w["limit"] == 10.0 && w["threshold"] == 50.0:
		case w["customerId"] == nil && w["keyId"] == own && w["used"] == 5.0 && w["limit"] == 10.0 && w["threshold"] == 50.0:
		default:
			t.Fatalf("webhook %v", w)
		}
	}
	flush(t, db, quotaSeen(p.ID, k1, start, 8, 2))
	flush(t, db, quotaSeen(p.ID, k1, start, 8, 2))
	if ws := thresholdWebhooks(t, db); len(ws) != 1 || ws[0]["customerId"] != "acme" || ws[0]["threshold"] != 100.0 || ws[0]["used"] != 10.0 {
		t.Fatalf("acme at 10 of 10, flushed twice: webhooks %v, want 100 once", ws)
	}
	alerts, _, err := db.Alerts(ctx, plans.AlertQuery{CustomerID: "acme"})
	must(t, err)
	if len(alerts) != 2 || alerts[0].Scope != plans.AlertScopeCustomer || alerts[1].Scope != plans.AlertScopeCustomer {
		t.Fatalf("acme's alerts %+v", alerts)
	}
}

// What a restore writes back of each customer quota: per plan with one
// (the field or the tag), each customer's keys' counts of the period that
// holds now summed (an anchored, zoned period as the plan says; a key's
// state of an earlier period not counted), a key without a customer its
// own; a plan without a customer quota has none.
func TestCustomerQuotaUsagesSumTheKeysOfTheCurrentPeriod(t *testing.T) {
	db := newDB(t)
	native := &plans.UsagePlan{Name: "native", Quota: &plans.Quota{Limit: 1000, Period: plans.PeriodMonth},
		CustomerBudget: &plans.CustomerQuota{Limit: 10}}
	tokyo := &plans.UsagePlan{Name: "tokyo", Quota: &plans.Quota{Limit: 1000, Period: plans.PeriodMonth},
		Tags: map[string]string{plans.CustomerQuotaTag: "10", plans.QuotaAnchorTag: "15", plans.QuotaTimeZoneTag: "Asia/Tokyo"}}
	none := &plans.UsagePlan{Name: "none", Quota: &plans.Quota{Limit: 1000, Period: plans.PeriodMonth}}
	for _, p := range []*plans.UsagePlan{native, tokyo, none} {
		must(t, db.CreateUsagePlan(ctx, p))
	}
	k1, k2, own := customerKey(t, db, "acme"), customerKey(t, db, "acme"), customerKey(t, db, "")
	now := time.Date(2027, 3, 20, 0, 0, 0, 0, time.UTC)
	month := time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)
	anchored := time.Date(2027, 3, 14, 15, 0, 0, 0, time.UTC) // the 15th in Tokyo
	flush(t, db, quotaSeen(native.ID, k1, month, 3, 1), quotaSeen(native.ID, k2, month, 4, 1), quotaSeen(native.ID, own, month, 2, 1),
		quotaSeen(tokyo.ID, k1, anchored, 5, 1), quotaSeen(tokyo.ID, k2, anchored.AddDate(0, -1, 0), 9, 1),
		quotaSeen(none.ID, k1, month, 7, 1))
	uses, err := db.CustomerQuotaUsages(ctx, now)
	must(t, err)
	got := map[string]int64{}
	for _, u := range uses {
		start := map[string]time.Time{native.ID: month, tokyo.ID: anchored}[u.PlanID]
		if !u.PeriodStart.Equal(start) {
			t.Fatalf("%+v: period start %v, want %v", u, u.PeriodStart, start)
		}
		got[u.PlanID+"/"+u.CustomerID+"/"+u.KeyID] = u.Used
	}
	want := map[string]int64{native.ID + "/acme/": 7, native.ID + "//" + own: 2, tokyo.ID + "/acme/": 5}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("customer quota uses %v, want %v", got, want)
	}
}

// A key on its own calendar (the 15th in Tokyo) on a plan of the 1st in
// UTC: its alerts name its own period; its share of its customer's budget
// is its ledger days of the plan's period (its quota state is of another
// period), for the customer's alerts and the restore alike.
func TestKeyOnItsOwnCalendarCountsInTheCustomersPeriodByItsDays(t *testing.T) {
	db := newDB(t)
	p := &plans.UsagePlan{Name: "shared", Quota: &plans.Quota{Limit: 8, Period: plans.PeriodMonth},
		Tags: map[string]string{plans.AlertsTag: "50", plans.CustomerQuotaTag: "10"}}
	must(t, db.CreateUsagePlan(ctx, p))
	plain := customerKey(t, db, "acme")
	own := &plans.ApiKey{Name: "tokyo", Enabled: true, Value: plans.NewKeyValue(), CustomerID: "acme",
		Tags: map[string]string{plans.QuotaAnchorTag: "15", plans.QuotaTimeZoneTag: "Asia/Tokyo"}}
	must(t, db.CreateApiKey(ctx, own, plans.HashKey(own.Value, nil)))
	month := time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)
	ownStart, ownEnd := time.Date(2027, 2, 14, 15, 0, 0, 0, time.UTC), time.Date(2027, 3, 14, 15, 0, 0, 0, time.UTC)
	day := func(d int, m time.Month, units int64) plans.DayCount {
		return plans.DayCount{Day: time.Date(2027, m, d, 0, 0, 0, 0, time.UTC), Count: units, Requests: units}
	}
	plainSeen := quotaSeen(p.ID, plain, month, 3, 1)
	plainSeen.Days = []plans.DayCount{day(5, time.March, 3)}
	ownSeen := quotaSeen(p.ID, own.ID, ownStart, 4, 1) // 2 units on the 28th of February, 2 on the 10th of March
	ownSeen.Days = []plans.DayCount{day(28, time.February, 2), day(10, time.March, 2)}
	flush(t, db, plainSeen, ownSeen)

	ws := thresholdWebhooks(t, db)
	if len(ws) != 2 {
		t.Fatalf("the Tokyo key at 4 of 8, acme at 3 + 2 of 10: webhooks %v, want 2", ws)
	}
	for _, w := range ws {
		switch {
		case w["keyId"] == own.ID && w["used"] == 4.0 && w["periodStart"] == ownStart.Format(time.RFC3339) && w["periodEnd"] == ownEnd.Format(time.RFC3339):
		case w["keyId"] == nil && w["customerId"] == "acme" && w["used"] == 5.0 && w["periodStart"] == month.Format(time.RFC3339) &&
			w["periodEnd"] == month.AddDate(0, 1, 0).Format(time.RFC3339):
		default:
			t.Fatalf("webhook %v: want the Tokyo key's in [%s, %s), acme's 5 in March", w, ownStart, ownEnd)
		}
	}
	uses, err := db.CustomerQuotaUsages(ctx, time.Date(2027, 3, 12, 0, 0, 0, 0, time.UTC))
	must(t, err)
	if len(uses) != 1 || uses[0].CustomerID != "acme" || uses[0].Used != 5 || !uses[0].PeriodStart.Equal(month) {
		t.Fatalf("customer quota uses %+v, want acme's 5 of March", uses)
	}
}
