package postgres

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/plans"
)

// UsageWriterLock is the key of the transaction-level advisory lock
// (pg_advisory_xact_lock) every writer that draws versions of usage_days
// (an insert, or an update that sets version) takes before it does: the
// lock is released only when its transaction ends, so writers draw versions
// one transaction at a time and they become visible in the order drawn. It
// is the ASCII bytes of "usageday". An advisory lock, unlike a table lock,
// leaves VACUUM, ANALYZE, CREATE INDEX CONCURRENTLY and deletes alone
// (docs/usage.md, "Writing to the ledger by hand").
const UsageWriterLock int64 = 8463215221469897081

// FlushUsage writes a batch of observed usage into the ledger in one
// transaction and returns how many day rows it inserted or raised.
//
// A day row keeps GREATEST(stored, observed): the limiter's day counts are
// absolute, so a retried, repeated, late or concurrent flush of the same
// observation never double counts and never lowers a row. A row's version
// is drawn from usage_version_seq only when its count changes. A quota
// state replaces the stored one only when its Seq is higher, so a lowered
// count (UpdateUsage) is kept and an older observation never overwrites a
// newer one.
//
// The transaction first takes the advisory lock UsageWriterLock, which
// serialises flushes (but not readers): each draws its versions only after
// the previous flush committed, so versions become visible in the order
// they were drawn and the record feed (UsageRecords) never skips one.
// The quota states also record the alert thresholds they cross
// (recordAlerts). Errors: KindUnavailable.
func (db *DB) FlushUsage(ctx context.Context, b *plans.UsageBatch) (int64, error) {
	days, quotas := b.Days(), b.Quotas()
	if len(days) == 0 && len(quotas) == 0 {
		return 0, nil
	}
	var changed int64
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, UsageWriterLock); err != nil {
			return err
		}
		var err error
		if changed, err = upsertDays(ctx, tx, days, now); err != nil {
			return err
		}
		if err := upsertQuotas(ctx, tx, quotas, now); err != nil {
			return err
		}
		return recordAlerts(ctx, tx, quotas, days, now)
	})
	return changed, err
}

// upsertDays stores days (sorted, one per row, counts > 0) keeping the
// greater count; it returns the number of rows inserted or raised.
func upsertDays(ctx context.Context, tx pgx.Tx, days []plans.UsageDay, now time.Time) (int64, error) {
	if len(days) == 0 {
		return 0, nil
	}
	planIDs, keyIDs := make([]string, len(days)), make([]string, len(days))
	dates, counts, requests := make([]time.Time, len(days)), make([]int64, len(days)), make([]int64, len(days))
	for i, d := range days {
		planIDs[i], keyIDs[i], dates[i], counts[i], requests[i] = d.PlanID, d.KeyID, d.Day, d.Count, d.Requests
		if requests[i] == 0 {
			requests[i] = d.Count // requests of one unit each
		}
	}
	// requests NULL: a row of before migration 000015, its count of
	// requests of one unit each
	tag, err := tx.Exec(ctx, `INSERT INTO usage_days AS u (plan_id, key_id, day, count, requests, updated_at)
		SELECT t.plan_id, t.key_id, t.day, t.count, t.requests, $6
		FROM unnest($1::text[], $2::text[], $3::date[], $4::bigint[], $5::bigint[])
			WITH ORDINALITY AS t(plan_id, key_id, day, count, requests, n)
		ORDER BY t.n
		ON CONFLICT (plan_id, key_id, day) DO UPDATE
		SET count = GREATEST(EXCLUDED.count, u.count), requests = GREATEST(EXCLUDED.requests, COALESCE(u.requests, u.count)),
			version = nextval('usage_version_seq'), updated_at = EXCLUDED.updated_at
		WHERE EXCLUDED.count > u.count OR EXCLUDED.requests > COALESCE(u.requests, u.count)`,
		planIDs, keyIDs, dates, counts, requests, now)
	return tag.RowsAffected(), err
}

// upsertQuotas stores quota states (sorted, one per row) that are newer
// (higher seq) than the stored ones.
func upsertQuotas(ctx context.Context, tx pgx.Tx, quotas []plans.QuotaUsage, now time.Time) error {
	if len(quotas) == 0 {
		return nil
	}
	keyIDs, planIDs := make([]string, len(quotas)), make([]string, len(quotas))
	starts, counts, seqs := make([]time.Time, len(quotas)), make([]int64, len(quotas)), make([]int64, len(quotas))
	for i, q := range quotas {
		keyIDs[i], planIDs[i], starts[i], counts[i], seqs[i] = q.KeyID, q.PlanID, q.PeriodStart, q.Count, q.Seq
	}
	_, err := tx.Exec(ctx, `INSERT INTO usage_quotas AS q (key_id, plan_id, period_start, count, seq, updated_at)
		SELECT t.key_id, t.plan_id, t.period_start, t.count, t.seq, $6
		FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::bigint[], $5::bigint[])
			WITH ORDINALITY AS t(key_id, plan_id, period_start, count, seq, n)
		ORDER BY t.n
		ON CONFLICT (key_id, plan_id) DO UPDATE
		SET period_start = EXCLUDED.period_start, count = EXCLUDED.count, seq = EXCLUDED.seq, updated_at = EXCLUDED.updated_at
		WHERE EXCLUDED.seq > q.seq`, keyIDs, planIDs, starts, counts, seqs, now)
	return err
}

// usageColumns are the columns of a plans.UsageDay, from usage_days u
// joined to api_keys a.
const usageColumns = `u.plan_id, u.key_id, u.day, u.count, COALESCE(u.requests, u.count) AS requests, u.version, u.updated_at,
	COALESCE(a.name, '') AS key_name, COALESCE(a.customer_id, '') AS customer_id`

// UsageDays returns the ledger rows q selects, in (day, plan, key) order,
// with the key's name and customer id (empty once the key is deleted).
// Days without requests have no row. Errors: KindUnavailable.
//
// A read walks the index (day, plan_id, key_id) over the range only, never
// a plan's whole history (migration 000007; EXPLAIN figures in the issue
// 12 note); a GetUsage of a few keys uses the primary key.
func (db *DB) UsageDays(ctx context.Context, q plans.UsageQuery) ([]plans.UsageDay, error) {
	// Filters are added only when asked for, so that a generic plan can
	// use the index bounds: "$1 = '' OR plan_id = $1" cannot, and a
	// cursor condition from the start of time made the scan start there.
	sql := `SELECT ` + usageColumns + ` FROM usage_days u LEFT JOIN api_keys a ON a.id = u.key_id
		WHERE u.day BETWEEN $1 AND $2`
	args := []any{plans.UTCDate(q.From), plans.UTCDate(q.To)}
	if a := q.After; a != nil {
		args = append(args, plans.UTCDate(a.Day), a.PlanID, a.KeyID)
		sql += fmt.Sprintf(` AND (u.day, u.plan_id, u.key_id) > ($%d, $%d, $%d)`, len(args)-2, len(args)-1, len(args))
	}
	if q.PlanID != "" {
		args = append(args, q.PlanID)
		sql += fmt.Sprintf(` AND u.plan_id = $%d`, len(args))
	}
	if len(q.KeyIDs) > 0 {
		args = append(args, q.KeyIDs)
		sql += fmt.Sprintf(` AND u.key_id = ANY($%d)`, len(args))
	}
	args = append(args, usageLimit(q.Limit))
	sql += fmt.Sprintf(` ORDER BY u.day, u.plan_id, u.key_id LIMIT $%d`, len(args))
	var out []plans.UsageDay
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		rows, _ := tx.Query(ctx, sql, args...)
		var err error
		out, err = pgx.CollectRows(rows, pgx.RowToStructByName[plans.UsageDay])
		return err
	})
	return out, err
}

// HasPlanUsage reports whether the ledger holds any usage of planID, on any
// day (a deleted plan's usage stays). One index probe of usage_days's
// primary key. Errors: KindUnavailable.
func (db *DB) HasPlanUsage(ctx context.Context, planID string) (bool, error) {
	var has bool
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		return tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM usage_days WHERE plan_id = $1)`, planID).Scan(&has)
	})
	return has, err
}

// usageLimit is limit, or plans.MaxUsagePage when it is outside
// 1..MaxUsagePage.
func usageLimit(limit int) int {
	if limit < 1 || limit > plans.MaxUsagePage {
		return plans.MaxUsagePage
	}
	return limit
}

// UsageRecords returns up to limit (1..plans.MaxUsagePage; other values
// mean the maximum) ledger rows whose version is above after, in version
// order: the record feed. A row that changes again reappears later with a
// higher version and a higher count. Errors: KindUnavailable.
func (db *DB) UsageRecords(ctx context.Context, after int64, limit int) ([]plans.UsageDay, error) {
	var out []plans.UsageDay
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		rows, _ := tx.Query(ctx, `SELECT `+usageColumns+`
			FROM usage_days u LEFT JOIN api_keys a ON a.id = u.key_id
			WHERE u.version > $1 ORDER BY u.version LIMIT $2`, after, usageLimit(limit))
		var err error
		out, err = pgx.CollectRows(rows, pgx.RowToStructByName[plans.UsageDay])
		return err
	})
	return out, err
}

// QuotaUsages returns up to limit (1..plans.MaxUsagePage; other values mean
// the maximum) stored quota states after (afterKeyID, afterPlanID) in (key,
// plan) order; ("", "") starts at the first. A limiter restore reads them
// page by page. Errors: KindUnavailable.
func (db *DB) QuotaUsages(ctx context.Context, afterKeyID, afterPlanID string, limit int) ([]plans.QuotaUsage, error) {
	var out []plans.QuotaUsage
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		rows, _ := tx.Query(ctx, `SELECT key_id, plan_id, period_start, count, seq, updated_at FROM usage_quotas
			WHERE (key_id, plan_id) > ($1, $2) ORDER BY key_id, plan_id LIMIT $3`,
			afterKeyID, afterPlanID, usageLimit(limit))
		var err error
		out, err = pgx.CollectRows(rows, pgx.RowToStructByName[plans.QuotaUsage])
		return err
	})
	return out, err
}

// CustomerQuotaUsages returns, for every plan with a customer quota
// (customerQuota, or the tag tollgate:customer-quota), what the ledger knows each customer used of
// it in the plan's quota period that holds now (the limiter's time): what
// a restore writes back (docs/usage.md, "Restore after a loss").
func (db *DB) CustomerQuotaUsages(ctx context.Context, now time.Time) ([]plans.CustomerQuotaUsage, error) {
	var out []plans.CustomerQuotaUsage
	err := db.readBulk(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		out = out[:0] // a retried read starts over
		rows, _ := tx.Query(ctx, `SELECT `+planCols+` FROM usage_plans WHERE quota_limit IS NOT NULL AND (customer_quota IS NOT NULL OR tags ? $1) ORDER BY id`,
			plans.CustomerQuotaTag)
		rs, err := pgx.CollectRows(rows, pgx.RowToStructByName[planRow])
		if err != nil {
			return err
		}
		for _, r := range rs {
			p := r.plan()
			if _, ok := p.CustomerQuota(); !ok {
				continue
			}
			start, _ := p.QuotaRule().Bounds(now)
			uses, err := customerQuotaUsages(ctx, tx, &p, start, nil)
			if err != nil {
				return err
			}
			out = append(out, uses...)
		}
		return nil
	})
	return out, err
}

// customerQuotaUsages returns what each customer of plan p used of its
// customer quota in the plan's period starting at start, as the ledger
// knows it (a key without a customerId is its own customer). A key on the
// plan's calendar counts its quota state of that period; a key on its own
// calendar (plans.KeyCalendar), whose quota states are of other periods,
// counts its ledger days whose first instant (00:00 UTC) lies in the
// period: exact where the plan's periods start at midnight UTC, else the
// units of the day a period starts in count in the period before it
// (docs/usage.md). only, when not nil, selects one customer (CustomerID,
// or KeyID when that is empty). The alerts of a customer quota and the
// restore after a loss both count by it.
func customerQuotaUsages(ctx context.Context, tx pgx.Tx, p *plans.UsagePlan, start time.Time, only *plans.CustomerQuotaUsage) ([]plans.CustomerQuotaUsage, error) {
	var customerID, keyID string
	if only != nil {
		customerID, keyID = only.CustomerID, only.KeyID
	}
	rule := p.QuotaRule()
	_, end := rule.Bounds(start)
	type subject struct{ customerID, keyID string }
	used := map[subject]int64{}
	var subjects []subject
	sum := func(ownCalendar bool, q string, args ...any) error {
		rows, _ := tx.Query(ctx, q, args...)
		var k plans.ApiKey
		var n int64
		_, err := pgx.ForEachRow(rows, []any{&k.CustomerID, &k.ID, &k.QuotaAnchor, &k.QuotaTimeZone, &k.Tags, &n}, func() error {
			own := !k.QuotaCalendar().Apply(rule).SameCalendar(rule)
			if own == ownCalendar {
				s := subject{customerID: k.CustomerID}
				if s.customerID == "" {
					s.keyID = k.ID
				}
				if _, ok := used[s]; !ok {
					subjects = append(subjects, s)
				}
				used[s] += n
			}
			k = plans.ApiKey{} // the next row's tags must not merge into these
			return nil
		})
		return err
	}
	const selectKey = `SELECT a.customer_id, a.id, a.quota_anchor, a.quota_time_zone, a.tags, `
	const onlyCond = ` AND ($3 OR a.customer_id = $4 AND $4 <> '' OR a.customer_id = '' AND a.id = $5)`
	if err := sum(false, selectKey+`q.count FROM usage_quotas q JOIN api_keys a ON a.id = q.key_id
		WHERE q.plan_id = $1 AND q.period_start = $2`+onlyCond, p.ID, start, only == nil, customerID, keyID); err != nil {
		return nil, err
	}
	if err := sum(true, selectKey+`d.count FROM (SELECT key_id, sum(count)::bigint AS count FROM usage_days
			WHERE plan_id = $1 AND day >= $2 AND day < $6 GROUP BY key_id) d JOIN api_keys a ON a.id = d.key_id
		WHERE (a.quota_anchor <> '' OR a.quota_time_zone <> '' OR a.tags ?| $7)`+onlyCond,
		p.ID, firstWholeDay(start), only == nil, customerID, keyID, firstWholeDay(end), calendarTags); err != nil {
		return nil, err
	}
	slices.SortFunc(subjects, func(a, b subject) int {
		return cmp.Or(cmp.Compare(a.customerID, b.customerID), cmp.Compare(a.keyID, b.keyID))
	})
	out := make([]plans.CustomerQuotaUsage, 0, len(subjects))
	for _, s := range subjects {
		out = append(out, plans.CustomerQuotaUsage{PlanID: p.ID, CustomerID: s.customerID, KeyID: s.keyID, PeriodStart: start.UTC(), Used: used[s]})
	}
	return out, nil
}

// firstWholeDay is the first UTC date whose first instant is t or later.
func firstWholeDay(t time.Time) time.Time {
	d := plans.UTCDate(t)
	if d.Before(t) {
		d = d.AddDate(0, 0, 1)
	}
	return d
}
