package postgres

import (
	"context"
	"errors"
	"maps"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/plans"
)

type stageRow struct {
	Name                string                         `db:"name"`
	DeploymentID        string                         `db:"deployment_id"`
	Description         string                         `db:"description"`
	CacheClusterEnabled bool                           `db:"cache_cluster_enabled"`
	CacheClusterSize    string                         `db:"cache_cluster_size"`
	TracingEnabled      bool                           `db:"tracing_enabled"`
	MethodSettings      map[string]plans.MethodSetting `db:"method_settings"`
	Variables           map[string]string              `db:"variables"`
	Tags                map[string]string              `db:"tags"`
	CreatedAt           time.Time                      `db:"created_at"`
	UpdatedAt           time.Time                      `db:"updated_at"`
}

const stageCols = `name, deployment_id, description, cache_cluster_enabled, cache_cluster_size, tracing_enabled,
	method_settings, variables, tags, created_at, updated_at`

// Values of Stage.CacheClusterStatus: the cache is the cache Redis, so it
// is available whenever the stage enables it.
const (
	cacheAvailable    = "AVAILABLE"
	cacheNotAvailable = "NOT_AVAILABLE"
)

func (r stageRow) stage() plans.Stage {
	s := plans.Stage{StageName: r.Name, DeploymentID: r.DeploymentID, Description: r.Description,
		CacheClusterEnabled: r.CacheClusterEnabled, CacheClusterSize: r.CacheClusterSize,
		TracingEnabled: r.TracingEnabled, MethodSettings: emptyIfNil(r.MethodSettings),
		Variables: nilIfEmptyMap(r.Variables), Tags: nilIfEmptyMap(r.Tags),
		CreatedDate: epoch(r.CreatedAt), LastUpdatedDate: epoch(r.UpdatedAt)}
	s.CacheClusterStatus = stageStatus(&s)
	return s
}

func getStage(ctx context.Context, tx pgx.Tx, apiID, name string, forUpdate bool) (*plans.Stage, error) {
	q := `SELECT ` + stageCols + ` FROM stages WHERE api_id = $1 AND name = $2`
	if forUpdate {
		q += ` FOR UPDATE`
	}
	rows, _ := tx.Query(ctx, q, apiID, name)
	r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[stageRow])
	if err != nil {
		return nil, notFound(err, msgNoStage)
	}
	s := r.stage()
	return &s, nil
}

// checkStage validates s, that its deployment exists and that every
// method setting added or changed since before names a method of that
// deployment.
func checkStage(ctx context.Context, tx pgx.Tx, apiID string, s *plans.Stage, before map[string]plans.MethodSetting) error {
	if err := s.Validate(); err != nil {
		return err
	}
	var rs []plans.Resource
	err := tx.QueryRow(ctx, `SELECT resources FROM deployments WHERE api_id = $1 AND id = $2`, apiID, s.DeploymentID).Scan(&rs)
	if errors.Is(err, pgx.ErrNoRows) {
		return plans.Invalid("deploymentId", "%s: %q", msgNoDeployment, s.DeploymentID)
	}
	if err != nil {
		return err
	}
	return s.CheckMethodSettingPaths(before, plans.DeployedMethods(rs))
}

// insertStage validates and inserts a new stage (dates set to now).
func insertStage(ctx context.Context, tx pgx.Tx, now time.Time, apiID string, s *plans.Stage) error {
	if err := checkStage(ctx, tx, apiID, s, nil); err != nil {
		return err
	}
	s.CreatedDate, s.LastUpdatedDate = epoch(now), epoch(now)
	s.MethodSettings = emptyIfNil(s.MethodSettings)
	_, err := tx.Exec(ctx, `INSERT INTO stages (api_id, `+stageCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		apiID, s.StageName, s.DeploymentID, s.Description, s.CacheClusterEnabled, s.CacheClusterSize, s.TracingEnabled,
		s.MethodSettings, emptyIfNil(s.Variables), emptyIfNil(s.Tags), now, now)
	s.CacheClusterStatus = stageStatus(s)
	return err
}

// saveStage validates and updates an existing stage (lastUpdatedDate set
// to now); before are its method settings as stored.
func saveStage(ctx context.Context, tx pgx.Tx, now time.Time, apiID string, s *plans.Stage, before map[string]plans.MethodSetting) error {
	if err := checkStage(ctx, tx, apiID, s, before); err != nil {
		return err
	}
	s.LastUpdatedDate = epoch(now)
	s.MethodSettings = emptyIfNil(s.MethodSettings)
	_, err := tx.Exec(ctx, `UPDATE stages SET deployment_id = $3, description = $4, cache_cluster_enabled = $5,
			cache_cluster_size = $6, tracing_enabled = $7, method_settings = $8, variables = $9, tags = $10, updated_at = $11
		WHERE api_id = $1 AND name = $2`,
		apiID, s.StageName, s.DeploymentID, s.Description, s.CacheClusterEnabled, s.CacheClusterSize, s.TracingEnabled,
		s.MethodSettings, emptyIfNil(s.Variables), emptyIfNil(s.Tags), now)
	s.CacheClusterStatus = stageStatus(s)
	return err
}

func stageStatus(s *plans.Stage) string {
	if s.CacheClusterEnabled {
		return cacheAvailable
	}
	return cacheNotAvailable
}

// CreateStage validates s, checks that its deployment exists, stores it
// (dates filled) and records a snapshot change naming the stage. Errors:
// KindNotFound (API), KindInvalid naming the field ("deploymentId" when
// the deployment does not exist), KindConflict on a duplicate name.
func (db *DB) CreateStage(ctx context.Context, apiID string, s *plans.Stage) error {
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		if _, err := getAPI(ctx, tx, apiID, true); err != nil {
			return err
		}
		if err := insertStage(ctx, tx, now, apiID, s); err != nil {
			return err
		}
		return record(ctx, tx, now, &change{snapshot: true, stages: []string{stageRef(apiID, s.StageName)}})
	})
}

// GetStage returns a stage. Errors: KindNotFound ("Invalid API identifier
// specified", "Invalid Stage identifier specified").
func (db *DB) GetStage(ctx context.Context, apiID, name string) (*plans.Stage, error) {
	var s *plans.Stage
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		if _, err := getAPI(ctx, tx, apiID, false); err != nil {
			return err
		}
		var err error
		s, err = getStage(ctx, tx, apiID, name, false)
		return err
	})
	return s, err
}

// ListStages returns every stage of the API ordered by name (AWS does not
// page stages). Errors: KindNotFound.
func (db *DB) ListStages(ctx context.Context, apiID string) ([]plans.Stage, error) {
	out := []plans.Stage{}
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		if _, err := getAPI(ctx, tx, apiID, false); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `SELECT `+stageCols+` FROM stages WHERE api_id = $1 ORDER BY name`, apiID)
		rs, err := pgx.CollectRows(rows, pgx.RowToStructByName[stageRow])
		for _, r := range rs {
			out = append(out, r.stage())
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// UpdateStage lets fn modify a stage (StageName and CreatedDate are kept),
// validates the result (the deployment must exist), stores it and records
// a snapshot change naming the stage. Errors: KindNotFound, KindInvalid
// naming the field, or fn's error.
func (db *DB) UpdateStage(ctx context.Context, apiID, name string, fn func(*plans.Stage) error) (*plans.Stage, error) {
	var s *plans.Stage
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		if _, err := getAPI(ctx, tx, apiID, false); err != nil {
			return err
		}
		var err error
		if s, err = getStage(ctx, tx, apiID, name, true); err != nil {
			return err
		}
		created, before := s.CreatedDate, maps.Clone(s.MethodSettings)
		if err := fn(s); err != nil {
			return err
		}
		s.StageName, s.CreatedDate = name, created
		if err := saveStage(ctx, tx, now, apiID, s, before); err != nil {
			return err
		}
		return record(ctx, tx, now, &change{snapshot: true, stages: []string{stageRef(apiID, name)}})
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// DeleteStage deletes a stage no usage plan covers, with its rate-limit
// rules, and records a snapshot change naming it. Errors: KindNotFound; KindInvalid ("stageName") naming
// the usage plan that covers it.
func (db *DB) DeleteStage(ctx context.Context, apiID, name string) error {
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		if _, err := getAPI(ctx, tx, apiID, false); err != nil {
			return err
		}
		if _, err := getStage(ctx, tx, apiID, name, true); err != nil {
			return err
		}
		var planID string
		err := tx.QueryRow(ctx, `SELECT plan_id FROM usage_plan_stages WHERE api_id = $1 AND stage = $2
			ORDER BY plan_id LIMIT 1`, apiID, name).Scan(&planID)
		if err == nil {
			return plans.Invalid("stageName", "Cannot delete stage %s: it is in usage plan %s; remove it from the plan first", name, planID)
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM stages WHERE api_id = $1 AND name = $2`, apiID, name); err != nil {
			return deleting(err)
		}
		if err := deleteStageRules(ctx, tx, apiID, name); err != nil {
			return err
		}
		return record(ctx, tx, now, &change{snapshot: true, stages: []string{stageRef(apiID, name)}})
	})
}
