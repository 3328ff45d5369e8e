package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/plans"
)

type snapshotStageRow struct {
	ApiID string `db:"api_id"`
	stageRow
	Resources        []plans.Resource                 `db:"resources"`
	GatewayResponses map[string]plans.GatewayResponse `db:"gateway_responses"`
}

// Snapshot returns the whole configuration the gateway runs on, read in
// one REPEATABLE READ transaction so it is consistent with its Version:
// the account throttle, every API (with an empty stage map when it has no
// stage) with its stages, each carrying the resources of the deployment it
// points to and its rate-limit rules, every usage plan with its api
// stages, and every custom domain name with its certificate and base path
// mappings. It holds no API keys.
// Errors: KindUnavailable.
func (db *DB) Snapshot(ctx context.Context) (*plans.Snapshot, error) {
	var s *plans.Snapshot
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		var err error
		s, err = readSnapshot(ctx, tx)
		return err
	})
	return s, err
}

func readSnapshot(ctx context.Context, tx pgx.Tx) (*plans.Snapshot, error) {
	s := &plans.Snapshot{Apis: map[string]*plans.ApiConfig{}, Plans: map[string]*plans.UsagePlan{}}
	var err error
	if s.Version, err = currentVersion(ctx, tx); err != nil {
		return nil, err
	}
	acct, err := getAccount(ctx, tx, false)
	if err != nil {
		return nil, err
	}
	s.Account = acct.ThrottleSettings
	if err := readSnapshotApis(ctx, tx, s); err != nil {
		return nil, err
	}
	if err := readSnapshotRules(ctx, tx, s); err != nil {
		return nil, err
	}
	if err := readSnapshotDomains(ctx, tx, s); err != nil {
		return nil, err
	}
	ps, err := queryPlans(ctx, tx, `SELECT `+planCols+` FROM usage_plans ORDER BY id`)
	for i := range ps {
		s.Plans[ps[i].ID] = &ps[i]
	}
	return s, err
}

func readSnapshotApis(ctx context.Context, tx pgx.Tx, s *plans.Snapshot) error {
	rows, _ := tx.Query(ctx, apiSelect)
	apis, err := pgx.CollectRows(rows, pgx.RowToStructByName[apiRow])
	if err != nil {
		return err
	}
	for _, a := range apis {
		s.Apis[a.ID] = &plans.ApiConfig{ID: a.ID, ApiKeySource: a.ApiKeySource, Stages: map[string]*plans.StageConfig{}}
	}
	rows, _ = tx.Query(ctx, `SELECT s.api_id, s.name, s.deployment_id, s.description, s.cache_cluster_enabled,
		s.cache_cluster_size, s.tracing_enabled, s.method_settings, s.variables, s.tags, s.created_at, s.updated_at,
		d.resources, d.gateway_responses FROM stages s JOIN deployments d ON d.api_id = s.api_id AND d.id = s.deployment_id`)
	stages, err := pgx.CollectRows(rows, pgx.RowToStructByName[snapshotStageRow])
	for _, st := range stages {
		if api := s.Apis[st.ApiID]; api != nil {
			api.Stages[st.Name] = &plans.StageConfig{Stage: st.stage(), Resources: st.Resources,
				GatewayResponses: nilIfEmptyMap(st.GatewayResponses)}
		}
	}
	return err
}

type keyRecordRow struct {
	KeyHash        string            `db:"key_hash"`
	ID             string            `db:"id"`
	Enabled        bool              `db:"enabled"`
	CustomerID     string            `db:"customer_id"`
	Tags           map[string]string `db:"tags"`
	PlanIDs        []string          `db:"plan_ids"`
	ExpiresAt      *time.Time        `db:"expires_at"`
	ValueExpiresAt *time.Time        `db:"value_expires_at"`
	Anchor         string            `db:"quota_anchor"`
	TimeZone       string            `db:"quota_time_zone"`
}

// keyRecordSelect reads the record of every value: each key's current
// one, and the previous values of rotated keys (their value_expires_at
// set), as rows of one relation r to filter and order by key_hash.
const keyRecordSelect = `SELECT * FROM (
	SELECT a.key_hash, a.id, a.enabled, a.customer_id, a.tags, a.expires_at, NULL::timestamptz AS value_expires_at,
		a.quota_anchor, a.quota_time_zone,
		ARRAY(SELECT k.plan_id FROM usage_plan_keys k WHERE k.key_id = a.id ORDER BY k.plan_id) AS plan_ids
	FROM api_keys a
	UNION ALL
	SELECT p.key_hash, a.id, a.enabled, a.customer_id, a.tags, a.expires_at, p.expires_at, a.quota_anchor, a.quota_time_zone,
		ARRAY(SELECT k.plan_id FROM usage_plan_keys k WHERE k.key_id = a.id ORDER BY k.plan_id)
	FROM api_key_previous_values p JOIN api_keys a ON a.id = p.key_id) r`

func (r keyRecordRow) record(version int64) *plans.KeyRecord {
	ids := r.PlanIDs
	if ids == nil {
		ids = []string{}
	}
	rec := &plans.KeyRecord{KeyID: r.ID, Enabled: r.Enabled, PlanIDs: ids, CustomerID: r.CustomerID,
		InvalidateCache: plans.CanInvalidateCache(r.Tags), Version: version,
		Calendar: (&plans.ApiKey{QuotaAnchor: r.Anchor, QuotaTimeZone: r.TimeZone, Tags: r.Tags}).QuotaCalendar()}
	if r.ExpiresAt != nil {
		rec.ExpiresAt = r.ExpiresAt.UTC()
	}
	if r.ValueExpiresAt != nil {
		rec.ValueExpiresAt = r.ValueExpiresAt.UTC()
	}
	return rec
}

// KeyRecords returns the records of the keys with the given hashes, by
// hash, at the current config version (each record's Version). Hashes of
// keys that do not exist (deleted) are absent from the map. PlanIDs are
// sorted and never nil. Errors: KindUnavailable.
func (db *DB) KeyRecords(ctx context.Context, hashes []string) (map[string]*plans.KeyRecord, error) {
	out := make(map[string]*plans.KeyRecord, len(hashes))
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		v, err := currentVersion(ctx, tx)
		if err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, keyRecordSelect+` WHERE r.key_hash = ANY($1)`, hashes)
		rs, err := pgx.CollectRows(rows, pgx.RowToStructByName[keyRecordRow])
		for _, r := range rs {
			out[r.KeyHash] = r.record(v)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// AllKeyRecords calls fn with the hash and record of every API key, in
// hash order, all at one consistent config version, streaming rows rather
// than loading them all. It stops at fn's first error and returns it. It
// is exempt from Options.StatementTimeout (millions of keys take longer):
// ctx bounds it. Errors: KindUnavailable, or fn's error.
func (db *DB) AllKeyRecords(ctx context.Context, fn func(hash string, rec *plans.KeyRecord) error) error {
	return db.readBulk(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		v, err := currentVersion(ctx, tx)
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, keyRecordSelect+` ORDER BY r.key_hash`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := pgx.RowToStructByName[keyRecordRow](rows)
			if err != nil {
				return err
			}
			if err := fn(r.KeyHash, r.record(v)); err != nil {
				return err
			}
		}
		return rows.Err()
	})
}
