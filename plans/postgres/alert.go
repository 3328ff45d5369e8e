package postgres

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/plans"
)

// recordAlerts records, in a flush's transaction, the alert thresholds
// the quota states of quotas cross (docs/usage.md, "Alerts"): for each
// plan with alerts, each key's state whose count reaches a threshold of
// the plan's quota limit in its period, and, for a plan with a customer
// quota (tollgate:customer-quota), each customer whose keys' counts in the
// period, summed over the ledger, reach a threshold of it. A crossing
// already recorded for the plan, key or customer, period and threshold is
// left alone (the unique constraint quota_alerts_once), so several admin
// nodes and repeated flushes record it once; each new one enqueues its
// webhook in the same transaction. A key on its own calendar
// (plans.KeyCalendar) has its own periods; its customer's period is the
// plan's that holds the later of its quota state's period start and the
// last day days (the flush's day counts) counted it in.
func recordAlerts(ctx context.Context, tx pgx.Tx, quotas []plans.QuotaUsage, days []plans.UsageDay, now time.Time) error {
	if len(quotas) == 0 {
		return nil
	}
	var planIDs []string
	seen := map[string]bool{}
	for _, q := range quotas {
		if !seen[q.PlanID] {
			seen[q.PlanID] = true
			planIDs = append(planIDs, q.PlanID)
		}
	}
	rows, _ := tx.Query(ctx, `SELECT `+planCols+` FROM usage_plans
		WHERE id = ANY($1) AND quota_limit IS NOT NULL AND (cardinality(alerts) > 0 OR tags ? $2)`, planIDs, plans.AlertsTag)
	rs, err := pgx.CollectRows(rows, pgx.RowToStructByName[planRow])
	if err != nil || len(rs) == 0 {
		return err
	}
	byPlan := make(map[string]*plans.UsagePlan, len(rs))
	for _, r := range rs {
		p := r.plan()
		byPlan[p.ID] = &p
	}
	var keyIDs []string
	for _, q := range quotas {
		if byPlan[q.PlanID] != nil {
			keyIDs = append(keyIDs, q.KeyID)
		}
	}
	customers, cals, err := keyCustomersAndCalendars(ctx, tx, keyIDs)
	if err != nil {
		return err
	}
	lastDay := map[[2]string]time.Time{} // (plan, key) → the last day counted
	for _, d := range days {
		if p := [2]string{d.PlanID, d.KeyID}; d.Day.After(lastDay[p]) {
			lastDay[p] = d.Day
		}
	}
	var cands []plans.QuotaAlert
	type group struct{ planID, customerID, keyID string }
	groups := map[group]time.Time{} // customers' periods to sum, by their latest start seen
	for _, q := range quotas {
		p := byPlan[q.PlanID]
		if p == nil {
			continue
		}
		planRule := p.QuotaRule()
		rule := cals[q.KeyID].Apply(planRule) // the key's own periods
		_, end := rule.Bounds(q.PeriodStart)
		for _, t := range p.AlertThresholds() {
			if plans.Crossed(q.Count, int64(rule.Limit), t) {
				cands = append(cands, plans.QuotaAlert{ID: "ev" + plans.NewID(20), PlanID: q.PlanID, Scope: plans.AlertScopeKey,
					KeyID: q.KeyID, CustomerID: customers[q.KeyID], Threshold: t, Used: q.Count, Limit: int64(rule.Limit),
					PeriodStart: q.PeriodStart.UTC(), PeriodEnd: end, CrossedAt: now})
			}
		}
		if _, ok := p.CustomerQuota(); ok {
			g := group{planID: q.PlanID, customerID: customers[q.KeyID]}
			if g.customerID == "" {
				g.keyID = q.KeyID // a key without a customer is its own
			}
			start := q.PeriodStart
			if !rule.SameCalendar(planRule) {
				at := q.PeriodStart
				if d := lastDay[[2]string{q.PlanID, q.KeyID}]; d.After(at) {
					at = d
				}
				start, _ = planRule.Bounds(at)
			}
			if cur, ok := groups[g]; !ok || start.After(cur) {
				groups[g] = start
			}
		}
	}
	for g, start := range groups {
		p := byPlan[g.planID]
		uses, err := customerQuotaUsages(ctx, tx, p, start, &plans.CustomerQuotaUsage{CustomerID: g.customerID, KeyID: g.keyID})
		if err != nil {
			return err
		}
		var used int64
		for _, u := range uses {
			used += u.Used
		}
		n, _ := p.CustomerQuota()
		limit := int64(n)
		_, end := p.QuotaRule().Bounds(start)
		for _, t := range p.AlertThresholds() {
			if plans.Crossed(used, limit, t) {
				cands = append(cands, plans.QuotaAlert{ID: "ev" + plans.NewID(20), PlanID: g.planID, Scope: plans.AlertScopeCustomer,
					KeyID: g.keyID, CustomerID: g.customerID, Threshold: t, Used: used, Limit: limit,
					PeriodStart: start.UTC(), PeriodEnd: end, CrossedAt: now})
			}
		}
	}
	if len(cands) == 0 {
		return nil
	}
	return insertAlerts(ctx, tx, cands, now)
}

// insertAlerts inserts the alerts of cands not recorded yet and enqueues
// the webhook of each it inserted.
func insertAlerts(ctx context.Context, tx pgx.Tx, cands []plans.QuotaAlert, now time.Time) error {
	n := len(cands)
	ids, planIDs, scopes, subjects := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	keyIDs, customerIDs := make([]string, n), make([]string, n)
	starts, ends := make([]time.Time, n), make([]time.Time, n)
	thresholds, used, limits := make([]int32, n), make([]int64, n), make([]int64, n)
	byID := make(map[string]*plans.QuotaAlert, n)
	for i := range cands {
		a := &cands[i]
		subject := a.KeyID
		if a.Scope == plans.AlertScopeCustomer && a.CustomerID != "" {
			subject = a.CustomerID
		}
		ids[i], planIDs[i], scopes[i], subjects[i], keyIDs[i], customerIDs[i] = a.ID, a.PlanID, a.Scope, subject, a.KeyID, a.CustomerID
		starts[i], ends[i], thresholds[i], used[i], limits[i] = a.PeriodStart, a.PeriodEnd, a.Threshold, a.Used, a.Limit
		byID[a.ID] = a
	}
	rows, _ := tx.Query(ctx, `INSERT INTO quota_alerts (id, plan_id, scope, subject, key_id, customer_id,
			period_start, period_end, threshold, used, quota_limit, crossed_at)
		SELECT t.*, $12 FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
			$7::timestamptz[], $8::timestamptz[], $9::integer[], $10::bigint[], $11::bigint[]) AS t
		ON CONFLICT ON CONSTRAINT quota_alerts_once DO NOTHING
		RETURNING id`, ids, planIDs, scopes, subjects, keyIDs, customerIDs, starts, ends, thresholds, used, limits, now)
	inserted, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, id := range inserted {
		if err := enqueue(ctx, tx, now, byID[id].Webhook(), plans.EventQuotaThreshold+":"+id); err != nil {
			return err
		}
	}
	return nil
}

type alertRow struct {
	ID          string     `db:"id"`
	PlanID      string     `db:"plan_id"`
	Scope       string     `db:"scope"`
	KeyID       string     `db:"key_id"`
	CustomerID  string     `db:"customer_id"`
	PeriodStart time.Time  `db:"period_start"`
	PeriodEnd   time.Time  `db:"period_end"`
	Threshold   int32      `db:"threshold"`
	Used        int64      `db:"used"`
	Limit       int64      `db:"quota_limit"`
	CrossedAt   time.Time  `db:"crossed_at"`
	Attempts    *int       `db:"attempts"`
	LastError   *string    `db:"last_error"`
	DeliveredAt *time.Time `db:"delivered_at"`
}

func (r alertRow) alert() plans.QuotaAlert {
	a := plans.QuotaAlert{ID: r.ID, PlanID: r.PlanID, Scope: r.Scope, KeyID: r.KeyID, CustomerID: r.CustomerID,
		Threshold: r.Threshold, Used: r.Used, Limit: r.Limit, PeriodStart: r.PeriodStart.UTC(), PeriodEnd: r.PeriodEnd.UTC(),
		CrossedAt: r.CrossedAt.UTC(), Delivery: plans.AlertDelivery{State: plans.AlertDropped}}
	if r.Attempts != nil {
		a.Delivery = plans.AlertDelivery{State: plans.AlertPending, Attempts: *r.Attempts, LastError: *r.LastError}
		if r.DeliveredAt != nil {
			t := r.DeliveredAt.UTC()
			a.Delivery.State, a.Delivery.DeliveredAt = plans.AlertDelivered, &t
		}
	}
	return a
}

// Alerts returns the alerts q selects, newest first, with the state of
// their webhooks, and the position of the next page ("" for none).
// Errors: KindInvalid naming position, KindUnavailable.
func (db *DB) Alerts(ctx context.Context, q plans.AlertQuery) ([]plans.QuotaAlert, string, error) {
	limit := q.Limit
	if limit <= 0 || limit > maxLimit {
		limit = defaultLimit
	}
	var beforeAt *time.Time
	beforeID := ""
	if q.Position != "" {
		b, err := base64.RawURLEncoding.DecodeString(q.Position)
		ns, id, ok := strings.Cut(string(b), "|")
		n, perr := strconv.ParseInt(ns, 10, 64)
		if err != nil || perr != nil || !ok {
			return nil, "", plans.Invalid("position", "Invalid position")
		}
		t := time.Unix(0, n)
		beforeAt, beforeID = &t, id
	}
	var out []plans.QuotaAlert
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		rows, _ := tx.Query(ctx, `SELECT a.id, a.plan_id, a.scope, a.key_id, a.customer_id, a.period_start, a.period_end,
				a.threshold, a.used, a.quota_limit, a.crossed_at, w.attempts, w.last_error, w.delivered_at
			FROM quota_alerts a LEFT JOIN webhook_outbox w ON w.id = a.id
			WHERE ($1::timestamptz IS NULL OR (a.crossed_at, a.id) < ($1, $2))
			  AND ($3 = '' OR a.plan_id = $3) AND ($4 = '' OR a.key_id = $4) AND ($5 = '' OR a.customer_id = $5)
			ORDER BY a.crossed_at DESC, a.id DESC LIMIT $6`,
			beforeAt, beforeID, q.PlanID, q.KeyID, q.CustomerID, limit+1)
		rs, err := pgx.CollectRows(rows, pgx.RowToStructByName[alertRow])
		out = make([]plans.QuotaAlert, len(rs))
		for i, r := range rs {
			out[i] = r.alert()
		}
		return err
	})
	if err != nil {
		return nil, "", err
	}
	if len(out) <= limit {
		return out, "", nil
	}
	out = out[:limit]
	last := out[limit-1]
	return out, base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(last.CrossedAt.UnixNano(), 10) + "|" + last.ID)), nil
}
