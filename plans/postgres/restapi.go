package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/plans"
)

type apiRow struct {
	ID           string            `db:"id"`
	Name         string            `db:"name"`
	Description  string            `db:"description"`
	ApiKeySource string            `db:"api_key_source"`
	Tags         map[string]string `db:"tags"`
	CreatedAt    time.Time         `db:"created_at"`
	RootID       string            `db:"root_resource_id"`
}

const apiCols = `id, name, description, api_key_source, tags, created_at`

// apiSelect reads apiRows: the API's columns and its root resource's id.
const apiSelect = `SELECT ` + apiCols + `, (SELECT r.id FROM resources r WHERE r.api_id = rest_apis.id AND r.parent_id IS NULL) AS root_resource_id
	FROM rest_apis`

func (r apiRow) api() plans.RestApi {
	return plans.RestApi{ID: r.ID, Name: r.Name, Description: r.Description, ApiKeySource: r.ApiKeySource,
		RootResourceID: r.RootID, Tags: nilIfEmptyMap(r.Tags), CreatedDate: epoch(r.CreatedAt)}
}

func epoch(t time.Time) plans.Epoch { return plans.Epoch{Time: t.UTC()} }

// emptyIfNil returns m, or an empty map when m is nil (jsonb columns are
// NOT NULL objects).
func emptyIfNil[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return m
}

func nilIfEmptyMap[V any](m map[string]V) map[string]V {
	if len(m) == 0 {
		return nil
	}
	return m
}

// CreateRestApi validates api, fills its ID (10 characters) and
// CreatedDate, stores it with its root resource ("/", id of 10
// characters) and records a snapshot change. Errors: KindInvalid naming
// the field.
func (db *DB) CreateRestApi(ctx context.Context, api *plans.RestApi) error {
	api.Normalize()
	if err := api.Validate(); err != nil {
		return err
	}
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		if err := insertAPI(ctx, tx, now, api); err != nil {
			return err
		}
		return record(ctx, tx, now, &change{snapshot: true})
	})
}

// insertAPI fills api's ID and CreatedDate and inserts it with its root
// resource.
func insertAPI(ctx context.Context, tx pgx.Tx, now time.Time, api *plans.RestApi) error {
	api.ID, api.CreatedDate, api.RootResourceID = plans.NewID(plans.LongIDLen), epoch(now), plans.NewID(plans.LongIDLen)
	if _, err := tx.Exec(ctx, `INSERT INTO rest_apis (`+apiCols+`) VALUES ($1, $2, $3, $4, $5, $6)`,
		api.ID, api.Name, api.Description, api.ApiKeySource, emptyIfNil(api.Tags), now); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO resources (api_id, id, parent_id, path_part, path)
		VALUES ($1, $2, NULL, '', '/')`, api.ID, api.RootResourceID)
	return err
}

// GetRestApi returns the API with the given id. Errors: KindNotFound
// ("Invalid API identifier specified").
func (db *DB) GetRestApi(ctx context.Context, id string) (*plans.RestApi, error) {
	var api plans.RestApi
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		var err error
		api, err = getAPI(ctx, tx, id, false)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &api, nil
}

// getAPI loads one API, locking its row when forUpdate.
func getAPI(ctx context.Context, tx pgx.Tx, id string, forUpdate bool) (plans.RestApi, error) {
	q := apiSelect + ` WHERE id = $1`
	if forUpdate {
		q += ` FOR UPDATE`
	}
	rows, _ := tx.Query(ctx, q, id)
	r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[apiRow])
	return r.api(), notFound(err, msgNoAPI)
}

// ListRestApis returns one page of APIs ordered by id and the position of
// the next page. Errors: KindInvalid ("position").
func (db *DB) ListRestApis(ctx context.Context, p plans.Page) ([]plans.RestApi, string, error) {
	after, limit, err := pageArgs(p)
	if err != nil {
		return nil, "", err
	}
	var out []plans.RestApi
	err = db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		rows, _ := tx.Query(ctx, apiSelect+` WHERE id > $1 ORDER BY id LIMIT $2`, after, limit+1)
		rs, err := pgx.CollectRows(rows, pgx.RowToStructByName[apiRow])
		for _, r := range rs {
			out = append(out, r.api())
		}
		return err
	})
	if err != nil {
		return nil, "", err
	}
	out, next := cut(out, limit, func(a plans.RestApi) string { return a.ID })
	return out, next, nil
}

// UpdateRestApi loads the API, lets fn modify it (ID and CreatedDate are
// kept), validates and stores the result, and records a snapshot change.
// Errors: KindNotFound, KindInvalid, or fn's error.
func (db *DB) UpdateRestApi(ctx context.Context, id string, fn func(*plans.RestApi) error) (*plans.RestApi, error) {
	var api plans.RestApi
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		var err error
		if api, err = getAPI(ctx, tx, id, true); err != nil {
			return err
		}
		orig := api
		if err := fn(&api); err != nil {
			return err
		}
		api.ID, api.CreatedDate, api.RootResourceID = orig.ID, orig.CreatedDate, orig.RootResourceID
		api.Normalize()
		if err := api.Validate(); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE rest_apis SET name = $2, description = $3, api_key_source = $4, tags = $5
			WHERE id = $1`, id, api.Name, api.Description, api.ApiKeySource, emptyIfNil(api.Tags)); err != nil {
			return err
		}
		return record(ctx, tx, now, &change{snapshot: true})
	})
	if err != nil {
		return nil, err
	}
	return &api, nil
}

// DeleteRestApi deletes the API with its resources, deployments and stages
// and records a snapshot change naming its stages. Errors: KindNotFound;
// KindInvalid ("restApiId") while a usage plan covers one of its stages.
func (db *DB) DeleteRestApi(ctx context.Context, id string) error {
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		if _, err := getAPI(ctx, tx, id, true); err != nil {
			return err
		}
		var planID, stage string
		err := tx.QueryRow(ctx, `SELECT plan_id, stage FROM usage_plan_stages WHERE api_id = $1
			ORDER BY plan_id, stage LIMIT 1`, id).Scan(&planID, &stage)
		if err == nil {
			return plans.Invalid("restApiId", "Cannot delete API %s: its stage %s is in usage plan %s", id, stage, planID)
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		rows, _ := tx.Query(ctx, `DELETE FROM stages WHERE api_id = $1 RETURNING name`, id)
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return deleting(err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM rest_apis WHERE id = $1`, id); err != nil {
			return deleting(err)
		}
		c := &change{snapshot: true}
		for _, n := range names {
			c.stages = append(c.stages, stageRef(id, n))
		}
		return record(ctx, tx, now, c)
	})
}
