package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/plans"
)

const msgNoRule = "Invalid Rate Limit Rule identifier specified"

type ruleRow struct {
	ApiID          string   `db:"api_id"`
	Stage          string   `db:"stage"`
	ID             string   `db:"id"`
	Name           string   `db:"name"`
	ResourcePath   string   `db:"resource_path"`
	HTTPMethod     string   `db:"http_method"`
	KeyBy          []string `db:"key_by"`
	Algorithm      string   `db:"algorithm"`
	RateLimit      *float64 `db:"rate_limit"`
	BurstLimit     *int32   `db:"burst_limit"`
	Limit          *int32   `db:"limit_count"`
	WindowSeconds  *int32   `db:"window_seconds"`
	MaxDelayMillis *int32   `db:"max_delay_millis"`
	Mode           string   `db:"mode"`
	CounterID      string   `db:"counter_id"`
}

const ruleCols = `api_id, stage, id, name, resource_path, http_method, key_by, algorithm, rate_limit, burst_limit,
	limit_count, window_seconds, max_delay_millis, mode, counter_id`

func (r ruleRow) rule() plans.RateLimitRule {
	keys := r.KeyBy
	if keys == nil {
		keys = []string{}
	}
	return plans.RateLimitRule{ID: r.ID, Name: r.Name, ResourcePath: r.ResourcePath, HTTPMethod: r.HTTPMethod,
		KeyBy: keys, Algorithm: r.Algorithm, RateLimit: r.RateLimit, BurstLimit: r.BurstLimit, Limit: r.Limit,
		WindowSeconds: r.WindowSeconds, MaxDelayMillis: r.MaxDelayMillis, Mode: r.Mode}
}

func (r ruleRow) stageRule() plans.StageRule {
	return plans.StageRule{RateLimitRule: r.rule(), CounterID: r.CounterID}
}

// queryRules runs a query selecting ruleCols.
func queryRules(ctx context.Context, tx pgx.Tx, q string, args ...any) ([]ruleRow, error) {
	rows, _ := tx.Query(ctx, q, args...)
	return pgx.CollectRows(rows, pgx.RowToStructByName[ruleRow])
}

// getRule returns a stage's rule with its counter id, locked when
// forUpdate. Errors: KindNotFound.
func getRule(ctx context.Context, tx pgx.Tx, apiID, stage, id string, forUpdate bool) (ruleRow, error) {
	q := `SELECT ` + ruleCols + ` FROM rate_limit_rules WHERE api_id = $1 AND stage = $2 AND id = $3`
	if forUpdate {
		q += ` FOR UPDATE`
	}
	rows, _ := tx.Query(ctx, q, apiID, stage, id)
	r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[ruleRow])
	return r, notFound(err, msgNoRule)
}

// ruleStage checks that the API and the stage exist (locking the stage
// row when forUpdate, so that a rule is never written beside a stage being
// deleted). Errors: KindNotFound.
func ruleStage(ctx context.Context, tx pgx.Tx, apiID, stage string, forUpdate bool) error {
	if _, err := getAPI(ctx, tx, apiID, false); err != nil {
		return err
	}
	_, err := getStage(ctx, tx, apiID, stage, forUpdate)
	return err
}

// routePaths returns the resource paths a rule of (apiID, stage) may name:
// the API's resources and those of the deployment the stage serves (when
// the stage exists), so a rule can precede the deployment of its resource
// and outlive its removal from the API.
func routePaths(ctx context.Context, tx pgx.Tx, apiID, stage string) (map[string]bool, error) {
	rows, _ := tx.Query(ctx, `SELECT path FROM resources WHERE api_id = $1
		UNION SELECT r->>'path' FROM stages s JOIN deployments d ON d.api_id = s.api_id AND d.id = s.deployment_id,
			jsonb_array_elements(d.resources) r
		WHERE s.api_id = $1 AND s.name = $2`, apiID, stage)
	paths, err := pgx.CollectRows(rows, pgx.RowTo[string])
	out := make(map[string]bool, len(paths))
	for _, p := range paths {
		out[p] = true
	}
	return out, err
}

// checkRule validates r and that its resource path is one of paths;
// field prefixes the field of an error (import locations).
func checkRule(r *plans.RateLimitRule, paths map[string]bool, field string) error {
	if err := r.Validate(); err != nil {
		return prefixField(err, field)
	}
	if r.ResourcePath != plans.AnyRoute && !paths[r.ResourcePath] {
		return plans.Invalid(field+"resourcePath", "%sresourcePath %q names no resource of the API", field, r.ResourcePath)
	}
	return nil
}

// prefixField returns err with prefix added to its field and message, for
// errors reported inside a larger document; err itself when prefix is "".
func prefixField(err error, prefix string) error {
	if prefix == "" {
		return err
	}
	return plans.Invalid(prefix+fieldOf(err), "%s%s", prefix, plans.ErrorMessage(err))
}

func fieldOf(err error) string {
	var e *plans.Error
	if errors.As(err, &e) {
		return e.Field
	}
	return ""
}

// checkRuleCount refuses a stage that would hold more than
// plans.MaxRateLimitRules rules.
func checkRuleCount(ctx context.Context, tx pgx.Tx, apiID, stage string) error {
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM rate_limit_rules WHERE api_id = $1 AND stage = $2`, apiID, stage).Scan(&n); err != nil {
		return err
	}
	if n > plans.MaxRateLimitRules {
		return plans.Invalid("ratelimitrules", "a stage holds at most %d rate-limit rules; %s would hold %d", plans.MaxRateLimitRules, stage, n)
	}
	return nil
}

// insertRule stores a new rule (id and counter id drawn here) of (apiID,
// stage), already checked.
func insertRule(ctx context.Context, tx pgx.Tx, now time.Time, apiID, stage string, r *plans.RateLimitRule) error {
	r.ID = plans.NewID(plans.ShortIDLen)
	_, err := tx.Exec(ctx, `INSERT INTO rate_limit_rules (`+ruleCols+`, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
		apiID, stage, r.ID, r.Name, r.ResourcePath, r.HTTPMethod, r.KeyBy, r.Algorithm, r.RateLimit, r.BurstLimit,
		r.Limit, r.WindowSeconds, r.MaxDelayMillis, r.Mode, plans.NewID(plans.LongIDLen), now)
	if err != nil {
		return err
	}
	return checkRuleCount(ctx, tx, apiID, stage)
}

// saveRule updates a stored rule from old (as stored) to r, already
// checked; the counter id changes when the algorithm or keyBy does.
func saveRule(ctx context.Context, tx pgx.Tx, old ruleRow, r *plans.RateLimitRule) error {
	counter := old.CounterID
	if prev := old.rule(); !r.SameCounters(&prev) {
		counter = plans.NewID(plans.LongIDLen)
	}
	_, err := tx.Exec(ctx, `UPDATE rate_limit_rules SET name = $4, resource_path = $5, http_method = $6, key_by = $7,
			algorithm = $8, rate_limit = $9, burst_limit = $10, limit_count = $11, window_seconds = $12,
			max_delay_millis = $13, mode = $14, counter_id = $15
		WHERE api_id = $1 AND stage = $2 AND id = $3`,
		old.ApiID, old.Stage, old.ID, r.Name, r.ResourcePath, r.HTTPMethod, r.KeyBy, r.Algorithm, r.RateLimit,
		r.BurstLimit, r.Limit, r.WindowSeconds, r.MaxDelayMillis, r.Mode, counter)
	return err
}

// CreateRateLimitRule validates r (defaults filled), checks that its
// resource path names a resource of the API, stores it (ID of 6
// characters filled) and records a snapshot change naming the stage.
// Errors: KindNotFound (API, stage), KindInvalid naming the field
// ("resourcePath" for an unknown resource; "ratelimitrules" past
// plans.MaxRateLimitRules), KindConflict when the stage has a rule of that
// name.
func (db *DB) CreateRateLimitRule(ctx context.Context, apiID, stage string, r *plans.RateLimitRule) error {
	r.SetDefaults()
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		if err := ruleStage(ctx, tx, apiID, stage, true); err != nil {
			return err
		}
		paths, err := routePaths(ctx, tx, apiID, stage)
		if err != nil {
			return err
		}
		if err := checkRule(r, paths, ""); err != nil {
			return err
		}
		if err := insertRule(ctx, tx, now, apiID, stage, r); err != nil {
			return err
		}
		return record(ctx, tx, now, &change{snapshot: true, stages: []string{stageRef(apiID, stage)}})
	})
}

// GetRateLimitRule returns one rule of a stage. Errors: KindNotFound (API,
// stage, rule).
func (db *DB) GetRateLimitRule(ctx context.Context, apiID, stage, id string) (*plans.RateLimitRule, error) {
	var out plans.RateLimitRule
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		if err := ruleStage(ctx, tx, apiID, stage, false); err != nil {
			return err
		}
		r, err := getRule(ctx, tx, apiID, stage, id, false)
		out = r.rule()
		return err
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// ListRateLimitRules returns one page of a stage's rules ordered by id.
// Errors: KindNotFound (API, stage), KindInvalid ("position").
func (db *DB) ListRateLimitRules(ctx context.Context, apiID, stage string, p plans.Page) ([]plans.RateLimitRule, string, error) {
	after, limit, err := pageArgs(p)
	if err != nil {
		return nil, "", err
	}
	var out []plans.RateLimitRule
	err = db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		if err := ruleStage(ctx, tx, apiID, stage, false); err != nil {
			return err
		}
		rs, err := queryRules(ctx, tx, `SELECT `+ruleCols+` FROM rate_limit_rules
			WHERE api_id = $1 AND stage = $2 AND id > $3 ORDER BY id LIMIT $4`, apiID, stage, after, limit+1)
		for _, r := range rs {
			out = append(out, r.rule())
		}
		return err
	})
	if err != nil {
		return nil, "", err
	}
	out, next := cut(out, limit, func(r plans.RateLimitRule) string { return r.ID })
	return out, next, nil
}

// UpdateRateLimitRule lets fn modify a rule (ID kept), validates the
// result (a changed resource path must name a resource of the API),
// stores it and records a snapshot change naming the stage. The rule's
// counters carry over unless its algorithm or keyBy changed. Errors:
// KindNotFound, KindInvalid naming the field, KindConflict on a name
// another rule of the stage has, or fn's error.
func (db *DB) UpdateRateLimitRule(ctx context.Context, apiID, stage, id string, fn func(*plans.RateLimitRule) error) (*plans.RateLimitRule, error) {
	var r plans.RateLimitRule
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		if err := ruleStage(ctx, tx, apiID, stage, true); err != nil {
			return err
		}
		old, err := getRule(ctx, tx, apiID, stage, id, true)
		if err != nil {
			return err
		}
		r = old.rule()
		if err := fn(&r); err != nil {
			return err
		}
		r.ID = id
		paths := map[string]bool{old.ResourcePath: true}
		if r.ResourcePath != old.ResourcePath {
			if paths, err = routePaths(ctx, tx, apiID, stage); err != nil {
				return err
			}
		}
		if err := checkRule(&r, paths, ""); err != nil {
			return err
		}
		if err := saveRule(ctx, tx, old, &r); err != nil {
			return err
		}
		return record(ctx, tx, now, &change{snapshot: true, stages: []string{stageRef(apiID, stage)}})
	})
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// DeleteRateLimitRule deletes one rule of a stage and records a snapshot
// change naming the stage. Errors: KindNotFound.
func (db *DB) DeleteRateLimitRule(ctx context.Context, apiID, stage, id string) error {
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		if err := ruleStage(ctx, tx, apiID, stage, true); err != nil {
			return err
		}
		if _, err := getRule(ctx, tx, apiID, stage, id, true); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM rate_limit_rules WHERE api_id = $1 AND stage = $2 AND id = $3`, apiID, stage, id); err != nil {
			return err
		}
		return record(ctx, tx, now, &change{snapshot: true, stages: []string{stageRef(apiID, stage)}})
	})
}

// RateLimitRules returns every rule of every stage of an API, by stage
// name, each stage's ordered by name (what GetExport writes). Stages
// without rules are absent. Errors: KindNotFound (API).
func (db *DB) RateLimitRules(ctx context.Context, apiID string) (map[string][]plans.RateLimitRule, error) {
	out := map[string][]plans.RateLimitRule{}
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		if _, err := getAPI(ctx, tx, apiID, false); err != nil {
			return err
		}
		rs, err := queryRules(ctx, tx, `SELECT `+ruleCols+` FROM rate_limit_rules WHERE api_id = $1 ORDER BY stage, name`, apiID)
		for _, r := range rs {
			out[r.Stage] = append(out[r.Stage], r.rule())
		}
		return err
	})
	return out, err
}

// storeRules writes an API definition's rules (by stage name) into the
// API apiID, matching stored rules by name: a rule of the document
// replaces the stored rule of its name (keeping its id, and its counters
// unless the algorithm or keyBy changed) or is added; mode overwrite also
// deletes the rules of each stage the document names that the document
// does not list. Stages the document does not name keep their rules. A
// stage need not exist yet: its rules apply once a deployment creates it.
// It returns the "apiId:stage" of every stage it touched.
func storeRules(ctx context.Context, tx pgx.Tx, now time.Time, apiID string, byStage map[string][]plans.RateLimitRule, mode string) ([]string, error) {
	var touched []string
	for _, stage := range slices.Sorted(maps.Keys(byStage)) {
		if err := storeStageRules(ctx, tx, now, apiID, stage, byStage[stage], mode); err != nil {
			return nil, err
		}
		touched = append(touched, stageRef(apiID, stage))
	}
	return touched, nil
}

func storeStageRules(ctx context.Context, tx pgx.Tx, now time.Time, apiID, stage string, rules []plans.RateLimitRule, mode string) error {
	loc := plans.RulesExtension + "." + stage
	if err := plans.ValidateStageName(stage); err != nil {
		return prefixField(err, loc+".")
	}
	paths, err := routePaths(ctx, tx, apiID, stage)
	if err != nil {
		return err
	}
	listed := map[string]bool{}
	for i := range rules {
		r := &rules[i]
		r.SetDefaults()
		at := fmt.Sprintf("%s[%d].", loc, i)
		if err := checkRule(r, paths, at); err != nil {
			return err
		}
		if listed[r.Name] {
			return plans.Invalid(at+"name", "%sname: rule %q is listed twice", at, r.Name)
		}
		listed[r.Name] = true
	}
	byName, err := keepListedRules(ctx, tx, apiID, stage, listed, mode)
	if err != nil {
		return err
	}
	for i := range rules {
		if err := upsertRule(ctx, tx, now, apiID, stage, byName, &rules[i]); err != nil {
			return err
		}
	}
	return nil
}

// keepListedRules returns the stored rules of a stage by name, first
// deleting, in mode overwrite, those whose name is not listed.
func keepListedRules(ctx context.Context, tx pgx.Tx, apiID, stage string, listed map[string]bool, mode string) (map[string]ruleRow, error) {
	stored, err := queryRules(ctx, tx, `SELECT `+ruleCols+` FROM rate_limit_rules WHERE api_id = $1 AND stage = $2 FOR UPDATE`, apiID, stage)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]ruleRow, len(stored))
	for _, r := range stored {
		if listed[r.Name] || mode != plans.PutModeOverwrite {
			byName[r.Name] = r
			continue
		}
		if _, err := tx.Exec(ctx, `DELETE FROM rate_limit_rules WHERE api_id = $1 AND stage = $2 AND id = $3`, apiID, stage, r.ID); err != nil {
			return nil, err
		}
	}
	return byName, nil
}

// upsertRule saves r over the stored rule of its name, or inserts it.
func upsertRule(ctx context.Context, tx pgx.Tx, now time.Time, apiID, stage string, byName map[string]ruleRow, r *plans.RateLimitRule) error {
	if old, ok := byName[r.Name]; ok {
		r.ID = old.ID
		return saveRule(ctx, tx, old, r)
	}
	return insertRule(ctx, tx, now, apiID, stage, r)
}

// deleteStageRules deletes the rules of a stage (with the stage).
func deleteStageRules(ctx context.Context, tx pgx.Tx, apiID, stage string) error {
	_, err := tx.Exec(ctx, `DELETE FROM rate_limit_rules WHERE api_id = $1 AND stage = $2`, apiID, stage)
	return err
}

// readSnapshotRules attaches every rule to its stage in s (rules of a
// stage that does not exist are left out), ordered by name.
func readSnapshotRules(ctx context.Context, tx pgx.Tx, s *plans.Snapshot) error {
	rs, err := queryRules(ctx, tx, `SELECT `+ruleCols+` FROM rate_limit_rules ORDER BY api_id, stage, name`)
	for _, r := range rs {
		if api := s.Apis[r.ApiID]; api != nil {
			if st := api.Stages[r.Stage]; st != nil {
				st.RateLimitRules = append(st.RateLimitRules, r.stageRule())
			}
		}
	}
	return err
}
