package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/plans"
)

// keyAnchorsFit refuses, with a 400 naming the key's field or tag, a key
// whose own quota anchor (the field quota_anchor or the tag
// tollgate:quota-anchor) does not fit the quota period of a plan it is on
// (plans.KeyAnchors.Fits), among the memberships where selects (a
// condition on usage_plan_keys k, with args). Writes that put a key on a
// plan, change a key's anchor or a plan's quota call it after their
// change, in their transaction, so no key runs on a period its anchor
// does not fit.
func keyAnchorsFit(ctx context.Context, tx pgx.Tx, where string, args ...any) error {
	rows, _ := tx.Query(ctx, `SELECT k.key_id, k.plan_id, p.quota_period, a.quota_anchor,
			coalesce(a.tags->>'`+plans.QuotaAnchorTag+`', '')
		FROM usage_plan_keys k JOIN api_keys a ON a.id = k.key_id JOIN usage_plans p ON p.id = k.plan_id
		WHERE p.quota_limit IS NOT NULL AND (a.quota_anchor <> '' OR a.tags ? '`+plans.QuotaAnchorTag+`') AND `+where+`
		ORDER BY k.key_id, k.plan_id`, args...)
	var keyID, planID, period string
	var a plans.KeyAnchors
	var misfit error
	_, err := pgx.ForEachRow(rows, []any{&keyID, &planID, &period, &a.Field, &a.Tag}, func() error {
		if misfit == nil {
			misfit = a.Fits(keyID, planID, period)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return misfit
}

// quotaMisfit is keyAnchorsFit's refusal of a plan change: it names the
// plan's quota.period, the key's anchor in its message.
func quotaMisfit(err error) error {
	var pe *plans.Error
	if errors.As(err, &pe) && pe.Kind == plans.KindInvalid {
		return plans.Invalid("quota.period", "%s; change the key's anchor or take the key off the plan first", pe.Message)
	}
	return err
}

// KeyCalendars returns the own quota calendar (plans.ApiKey.QuotaCalendar)
// of each of ids that has one; keys without one, or that do not exist,
// are absent. Errors: KindUnavailable.
func (db *DB) KeyCalendars(ctx context.Context, ids []string) (map[string]plans.KeyCalendar, error) {
	var out map[string]plans.KeyCalendar
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		var err error
		_, out, err = keyCustomersAndCalendars(ctx, tx, ids)
		return err
	})
	return out, err
}

// keyCustomersAndCalendars reads, in tx, the customerId and the own quota
// calendar of each of ids that has either; the others are absent from
// both maps.
func keyCustomersAndCalendars(ctx context.Context, tx pgx.Tx, ids []string) (map[string]string, map[string]plans.KeyCalendar, error) {
	customers, cals := map[string]string{}, map[string]plans.KeyCalendar{}
	rows, _ := tx.Query(ctx, `SELECT id, customer_id, quota_anchor, quota_time_zone, tags FROM api_keys
		WHERE id = ANY($1) AND (customer_id <> '' OR quota_anchor <> '' OR quota_time_zone <> '' OR tags ?| $2)`, ids, calendarTags)
	var k plans.ApiKey
	_, err := pgx.ForEachRow(rows, []any{&k.ID, &k.CustomerID, &k.QuotaAnchor, &k.QuotaTimeZone, &k.Tags}, func() error {
		if k.CustomerID != "" {
			customers[k.ID] = k.CustomerID
		}
		if c := k.QuotaCalendar(); !c.IsZero() {
			cals[k.ID] = c
		}
		k = plans.ApiKey{} // the next row's tags must not merge into these
		return nil
	})
	return customers, cals, err
}

// calendarTags are the tags of a key's own quota calendar.
var calendarTags = []string{plans.QuotaAnchorTag, plans.QuotaTimeZoneTag}
