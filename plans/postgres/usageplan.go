package postgres

import (
	"context"
	"errors"
	"maps"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/plans"
)

type planRow struct {
	ID            string              `db:"id"`
	Name          string              `db:"name"`
	Description   string              `db:"description"`
	ThrottleRate  *float64            `db:"throttle_rate"`
	ThrottleBurst *int32              `db:"throttle_burst"`
	QuotaLimit    *int32              `db:"quota_limit"`
	QuotaOffset   *int32              `db:"quota_offset"`
	QuotaPeriod   *string             `db:"quota_period"`
	QuotaAnchor   string              `db:"quota_anchor"`
	QuotaTimeZone string              `db:"quota_time_zone"`
	Alerts        []int32             `db:"alerts"`
	Cost          *plans.CostSettings `db:"cost"`
	CustomerQuota *int32              `db:"customer_quota"`
	Tags          map[string]string   `db:"tags"`
}

const planCols = `id, name, description, throttle_rate, throttle_burst, quota_limit, quota_offset, quota_period, quota_anchor, quota_time_zone, alerts, cost, customer_quota, tags`

func (r planRow) plan() plans.UsagePlan {
	p := plans.UsagePlan{ID: r.ID, Name: r.Name, Description: r.Description,
		ApiStages: []plans.ApiStage{}, Tags: nilIfEmptyMap(r.Tags)}
	if len(r.Alerts) > 0 {
		p.Alerts = r.Alerts
	}
	p.CostSettings = r.Cost
	if r.CustomerQuota != nil {
		p.CustomerBudget = &plans.CustomerQuota{Limit: *r.CustomerQuota}
	}
	if r.ThrottleRate != nil && r.ThrottleBurst != nil {
		p.Throttle = &plans.Throttle{RateLimit: *r.ThrottleRate, BurstLimit: *r.ThrottleBurst}
	}
	if r.QuotaLimit != nil && r.QuotaOffset != nil && r.QuotaPeriod != nil {
		p.Quota = &plans.Quota{Limit: *r.QuotaLimit, Offset: *r.QuotaOffset, Period: *r.QuotaPeriod,
			Anchor: r.QuotaAnchor, TimeZone: r.QuotaTimeZone}
	}
	return p
}

// planArgs returns the nullable throttle and quota columns of p, and its
// quota's anchor and time zone ("" without).
func planArgs(p *plans.UsagePlan) (rate *float64, burst, limit, offset *int32, period *string, anchor, zone string) {
	if t := p.Throttle; t != nil {
		rate, burst = &t.RateLimit, &t.BurstLimit
	}
	if q := p.Quota; q != nil {
		limit, offset, period, anchor, zone = &q.Limit, &q.Offset, &q.Period, q.Anchor, q.TimeZone
	}
	return rate, burst, limit, offset, period, anchor, zone
}

// alertsArg is the alerts column of a plan's alerts: never NULL.
func alertsArg(a []int32) []int32 {
	if a == nil {
		return []int32{}
	}
	return a
}

// customerQuotaArg is the customer_quota column of p (NULL without).
func customerQuotaArg(p *plans.UsagePlan) *int32 {
	if p.CustomerBudget == nil {
		return nil
	}
	return &p.CustomerBudget.Limit
}

type planStageRow struct {
	PlanID      string                    `db:"plan_id"`
	ApiID       string                    `db:"api_id"`
	Stage       string                    `db:"stage"`
	Throttle    map[string]plans.Throttle `db:"throttle"`
	MethodCosts map[string]int32          `db:"method_costs"`
}

// queryPlans runs a query selecting planCols and attaches each plan's api
// stages (in their stored order).
func queryPlans(ctx context.Context, tx pgx.Tx, q string, args ...any) ([]plans.UsagePlan, error) {
	rows, _ := tx.Query(ctx, q, args...)
	rs, err := pgx.CollectRows(rows, pgx.RowToStructByName[planRow])
	if err != nil || len(rs) == 0 {
		return nil, err
	}
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
	}
	rows, _ = tx.Query(ctx, `SELECT plan_id, api_id, stage, throttle, method_costs FROM usage_plan_stages
		WHERE plan_id = ANY($1) ORDER BY plan_id, position`, ids)
	ss, err := pgx.CollectRows(rows, pgx.RowToStructByName[planStageRow])
	if err != nil {
		return nil, err
	}
	byPlan := map[string][]plans.ApiStage{}
	for _, s := range ss {
		byPlan[s.PlanID] = append(byPlan[s.PlanID], plans.ApiStage{ApiID: s.ApiID, Stage: s.Stage,
			Throttle: nilIfEmptyMap(s.Throttle), MethodCosts: nilIfEmptyMap(s.MethodCosts)})
	}
	out := make([]plans.UsagePlan, len(rs))
	for i, r := range rs {
		out[i] = r.plan()
		if as := byPlan[r.ID]; as != nil {
			out[i].ApiStages = as
		}
	}
	return out, nil
}

func getPlan(ctx context.Context, tx pgx.Tx, id string, forUpdate bool) (*plans.UsagePlan, error) {
	q := `SELECT ` + planCols + ` FROM usage_plans WHERE id = $1`
	if forUpdate {
		q += ` FOR UPDATE`
	}
	ps, err := queryPlans(ctx, tx, q, id)
	if err != nil {
		return nil, err
	}
	if len(ps) == 0 {
		return nil, plans.NotFound(msgNoPlan)
	}
	return &ps[0], nil
}

// checkPlan normalises and validates p, checks that every api stage exists and that every
// per-method throttle and method cost added or changed since before (the
// api stages as stored, by "apiId:stage") names a method the stage's
// deployment serves.
func checkPlan(ctx context.Context, tx pgx.Tx, p *plans.UsagePlan, before map[string]plans.ApiStage) error {
	p.Normalize()
	if err := p.Validate(); err != nil {
		return err
	}
	for _, as := range p.ApiStages {
		var rs []plans.Resource
		err := tx.QueryRow(ctx, `SELECT d.resources FROM stages s JOIN deployments d ON d.api_id = s.api_id AND d.id = s.deployment_id
			WHERE s.api_id = $1 AND s.name = $2`, as.ApiID, as.Stage).Scan(&rs)
		if errors.Is(err, pgx.ErrNoRows) {
			return plans.Invalid("apiStages", "API Stage not found: %s:%s", as.ApiID, as.Stage)
		}
		if err != nil {
			return err
		}
		was, deployed := before[stageRef(as.ApiID, as.Stage)], plans.DeployedMethods(rs)
		if err := as.CheckMethodThrottlePaths(was.Throttle, deployed); err != nil {
			return err
		}
		if err := as.CheckMethodCostPaths(was.MethodCosts, deployed); err != nil {
			return err
		}
	}
	return nil
}

// methodLimits copies the per-method throttles and costs of p's api
// stages, by "apiId:stage" (the "before" of checkPlan).
func methodLimits(p *plans.UsagePlan) map[string]plans.ApiStage {
	out := make(map[string]plans.ApiStage, len(p.ApiStages))
	for _, as := range p.ApiStages {
		out[stageRef(as.ApiID, as.Stage)] = plans.ApiStage{Throttle: maps.Clone(as.Throttle), MethodCosts: maps.Clone(as.MethodCosts)}
	}
	return out
}

// CreateUsagePlan validates p, checks that its api stages exist, stores it
// (ID of 6 characters filled) and records a snapshot change naming the
// plan. Errors: KindInvalid naming the field ("apiStages" for a missing
// stage).
func (db *DB) CreateUsagePlan(ctx context.Context, p *plans.UsagePlan) error {
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		if err := checkPlan(ctx, tx, p, nil); err != nil {
			return err
		}
		p.ID = plans.NewID(plans.ShortIDLen)
		rate, burst, limit, offset, period, anchor, zone := planArgs(p)
		if _, err := tx.Exec(ctx, `INSERT INTO usage_plans (`+planCols+`, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`, p.ID, p.Name, p.Description,
			rate, burst, limit, offset, period, anchor, zone, alertsArg(p.Alerts), p.CostSettings, customerQuotaArg(p), emptyIfNil(p.Tags), now); err != nil {
			return err
		}
		if err := syncPlanStages(ctx, tx, p.ID, nil, p.ApiStages); err != nil {
			return err
		}
		return record(ctx, tx, now, &change{snapshot: true, plans: []string{p.ID}})
	})
}

// syncPlanStages turns the plan's stored api stages from old into new:
// removed ones are deleted (their key claims cascade), kept ones updated,
// added ones inserted (the insert trigger claims (key, api, stage) for
// the plan's keys, so a key already in another plan for that stage is
// 23505 → 409).
func syncPlanStages(ctx context.Context, tx pgx.Tx, planID string, old, new []plans.ApiStage) error {
	keep := map[string]bool{}
	for _, as := range new {
		keep[stageRef(as.ApiID, as.Stage)] = true
	}
	had := map[string]bool{}
	for _, as := range old {
		had[stageRef(as.ApiID, as.Stage)] = true
		if keep[stageRef(as.ApiID, as.Stage)] {
			continue
		}
		if _, err := tx.Exec(ctx, `DELETE FROM usage_plan_stages WHERE plan_id = $1 AND api_id = $2 AND stage = $3`,
			planID, as.ApiID, as.Stage); err != nil {
			return err
		}
	}
	for i, as := range new {
		q := `INSERT INTO usage_plan_stages (plan_id, api_id, stage, position, throttle, method_costs) VALUES ($1, $2, $3, $4, $5, $6)`
		if had[stageRef(as.ApiID, as.Stage)] {
			q = `UPDATE usage_plan_stages SET position = $4, throttle = $5, method_costs = $6 WHERE plan_id = $1 AND api_id = $2 AND stage = $3`
		} else if err := stageClaimFree(ctx, tx, planID, as.ApiID, as.Stage); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, q, planID, as.ApiID, as.Stage, i, emptyIfNil(as.Throttle), emptyIfNil(as.MethodCosts)); err != nil {
			return err
		}
	}
	return nil
}

// GetUsagePlan returns a usage plan with its api stages. Errors:
// KindNotFound ("Invalid Usage Plan ID specified").
func (db *DB) GetUsagePlan(ctx context.Context, id string) (*plans.UsagePlan, error) {
	var p *plans.UsagePlan
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		var err error
		p, err = getPlan(ctx, tx, id, false)
		return err
	})
	return p, err
}

// ListUsagePlans returns one page of usage plans ordered by id, only those
// the API key keyID is in when keyID is not empty. Errors: KindInvalid
// ("position").
func (db *DB) ListUsagePlans(ctx context.Context, keyID string, p plans.Page) ([]plans.UsagePlan, string, error) {
	after, limit, err := pageArgs(p)
	if err != nil {
		return nil, "", err
	}
	var out []plans.UsagePlan
	err = db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		var err error
		out, err = queryPlans(ctx, tx, `SELECT `+planCols+` FROM usage_plans p WHERE id > $1
			AND ($2 = '' OR EXISTS (SELECT 1 FROM usage_plan_keys k WHERE k.plan_id = p.id AND k.key_id = $2))
			ORDER BY id LIMIT $3`, after, keyID, limit+1)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	out, next := cut(out, limit, func(p plans.UsagePlan) string { return p.ID })
	return out, next, nil
}

// UpdateUsagePlan lets fn modify a usage plan (ID kept), validates the
// result (api stages must exist), stores it and records a snapshot change
// naming the plan (not its keys: their records do not change). Errors:
// KindNotFound, KindInvalid naming the field, KindConflict when an added
// api stage would put one of the plan's keys in two plans for that stage,
// or fn's error.
func (db *DB) UpdateUsagePlan(ctx context.Context, id string, fn func(*plans.UsagePlan) error) (*plans.UsagePlan, error) {
	var p *plans.UsagePlan
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		var err error
		if p, err = getPlan(ctx, tx, id, true); err != nil {
			return err
		}
		old, before := append([]plans.ApiStage(nil), p.ApiStages...), methodLimits(p)
		if err := fn(p); err != nil {
			return err
		}
		p.ID = id
		if err := checkPlan(ctx, tx, p, before); err != nil {
			return err
		}
		rate, burst, limit, offset, period, anchor, zone := planArgs(p)
		if _, err := tx.Exec(ctx, `UPDATE usage_plans SET name = $2, description = $3, throttle_rate = $4,
				throttle_burst = $5, quota_limit = $6, quota_offset = $7, quota_period = $8, quota_anchor = $9,
				quota_time_zone = $10, alerts = $11, cost = $12, customer_quota = $13, tags = $14 WHERE id = $1`,
			id, p.Name, p.Description, rate, burst, limit, offset, period, anchor, zone, alertsArg(p.Alerts), p.CostSettings,
			customerQuotaArg(p), emptyIfNil(p.Tags)); err != nil {
			return err
		}
		if err := syncPlanStages(ctx, tx, id, old, p.ApiStages); err != nil {
			return err
		}
		if err := keyAnchorsFit(ctx, tx, `k.plan_id = $1`, id); err != nil {
			return quotaMisfit(err)
		}
		return record(ctx, tx, now, &change{snapshot: true, plans: []string{id}})
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// DeleteUsagePlan deletes a usage plan with its key associations and
// records a snapshot change naming the plan and the hashes of its keys
// (their records lose the plan). Errors: KindNotFound.
func (db *DB) DeleteUsagePlan(ctx context.Context, id string) error {
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		if _, err := getPlan(ctx, tx, id, true); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `SELECT a.key_hash FROM usage_plan_keys k JOIN api_keys a ON a.id = k.key_id
			WHERE k.plan_id = $1`, id)
		hashes, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM usage_plans WHERE id = $1`, id); err != nil {
			return err
		}
		return record(ctx, tx, now, &change{snapshot: true, plans: []string{id}, keys: hashes})
	})
}
