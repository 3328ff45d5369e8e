package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/plans"
)

const msgNoMapping = "Invalid base path mapping identifier specified"

type mappingRow struct {
	DomainName string  `db:"domain_name"`
	BasePath   string  `db:"base_path"`
	ApiID      string  `db:"api_id"`
	Stage      *string `db:"stage"`
}

const mappingCols = `domain_name, base_path, api_id, stage`

func (r mappingRow) mapping() plans.BasePathMapping {
	m := plans.BasePathMapping{BasePath: r.BasePath, RestApiID: r.ApiID}
	if r.Stage != nil {
		m.Stage = *r.Stage
	}
	return m
}

// queryMappings runs a query selecting mappingCols.
func queryMappings(ctx context.Context, tx pgx.Tx, q string, args ...any) ([]mappingRow, error) {
	rows, _ := tx.Query(ctx, q, args...)
	return pgx.CollectRows(rows, pgx.RowToStructByName[mappingRow])
}

// getMapping loads one mapping, locked when forUpdate. Errors:
// KindNotFound.
func getMapping(ctx context.Context, tx pgx.Tx, domain, basePath string, forUpdate bool) (mappingRow, error) {
	q := `SELECT ` + mappingCols + ` FROM base_path_mappings WHERE domain_name = $1 AND base_path = $2`
	if forUpdate {
		q += ` FOR UPDATE`
	}
	rows, _ := tx.Query(ctx, q, domain, plans.NormalizeBasePath(basePath))
	r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[mappingRow])
	return r, notFound(err, msgNoMapping)
}

// checkMapping validates m (normalized) and that its API and stage exist,
// as 400s naming restApiId and stage (they are fields of the request
// body, as AWS answers them).
func checkMapping(ctx context.Context, tx pgx.Tx, m *plans.BasePathMapping) error {
	m.Normalize()
	if err := m.Validate(); err != nil {
		return err
	}
	if _, err := getAPI(ctx, tx, m.RestApiID, false); err != nil {
		if plans.ErrorKind(err) == plans.KindNotFound {
			return plans.Invalid("restApiId", "Invalid REST API identifier specified: %s", m.RestApiID)
		}
		return err
	}
	if m.Stage == "" {
		return nil
	}
	if _, err := getStage(ctx, tx, m.RestApiID, m.Stage, false); err != nil {
		if plans.ErrorKind(err) == plans.KindNotFound {
			return plans.Invalid("stage", "Invalid stage identifier specified: %s", m.Stage)
		}
		return err
	}
	return nil
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// CreateBasePathMapping stores a mapping of a domain name (BasePath
// normalized: "" becomes "(none)") and records a snapshot change. Errors:
// KindNotFound (domain name), KindInvalid naming the field (restApiId,
// stage, basePath), KindConflict when the base path is mapped already.
func (db *DB) CreateBasePathMapping(ctx context.Context, domain string, m *plans.BasePathMapping) error {
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		if _, err := getDomain(ctx, tx, domain, true); err != nil {
			return err
		}
		if err := checkMapping(ctx, tx, m); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO base_path_mappings (`+mappingCols+`, created_at) VALUES ($1, $2, $3, $4, $5)`,
			domain, m.BasePath, m.RestApiID, nullIfEmpty(m.Stage), now); err != nil {
			return err
		}
		return record(ctx, tx, now, &change{snapshot: true})
	})
}

// GetBasePathMapping returns one mapping of a domain name by base path
// ("" and "(none)" both name the empty one). Errors: KindNotFound.
func (db *DB) GetBasePathMapping(ctx context.Context, domain, basePath string) (*plans.BasePathMapping, error) {
	var out plans.BasePathMapping
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		if _, err := getDomain(ctx, tx, domain, false); err != nil {
			return err
		}
		r, err := getMapping(ctx, tx, domain, basePath, false)
		out = r.mapping()
		return err
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// ListBasePathMappings returns one page of a domain name's mappings
// ordered by base path. Errors: KindNotFound, KindInvalid ("position").
func (db *DB) ListBasePathMappings(ctx context.Context, domain string, p plans.Page) ([]plans.BasePathMapping, string, error) {
	after, limit, err := pageArgs(p)
	if err != nil {
		return nil, "", err
	}
	var out []plans.BasePathMapping
	err = db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		if _, err := getDomain(ctx, tx, domain, false); err != nil {
			return err
		}
		rs, err := queryMappings(ctx, tx, `SELECT `+mappingCols+` FROM base_path_mappings
			WHERE domain_name = $1 AND base_path > $2 ORDER BY base_path LIMIT $3`, domain, after, limit+1)
		for _, r := range rs {
			out = append(out, r.mapping())
		}
		return err
	})
	if err != nil {
		return nil, "", err
	}
	out, next := cut(out, limit, func(m plans.BasePathMapping) string { return m.BasePath })
	return out, next, nil
}

// UpdateBasePathMapping lets fn modify a mapping (its base path too),
// checks the result, stores it and records a snapshot change. Errors:
// KindNotFound, KindInvalid naming the field, KindConflict when the new
// base path is mapped already, or fn's error.
func (db *DB) UpdateBasePathMapping(ctx context.Context, domain, basePath string, fn func(*plans.BasePathMapping) error) (*plans.BasePathMapping, error) {
	var m plans.BasePathMapping
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		if _, err := getDomain(ctx, tx, domain, true); err != nil {
			return err
		}
		old, err := getMapping(ctx, tx, domain, basePath, true)
		if err != nil {
			return err
		}
		m = old.mapping()
		if err := fn(&m); err != nil {
			return err
		}
		if err := checkMapping(ctx, tx, &m); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE base_path_mappings SET base_path = $3, api_id = $4, stage = $5
			WHERE domain_name = $1 AND base_path = $2`, domain, old.BasePath, m.BasePath, m.RestApiID, nullIfEmpty(m.Stage)); err != nil {
			return err
		}
		return record(ctx, tx, now, &change{snapshot: true})
	})
	if err != nil {
		return nil, err
	}
	return &m, nil
}

// DeleteBasePathMapping deletes one mapping and records a snapshot
// change. Errors: KindNotFound.
func (db *DB) DeleteBasePathMapping(ctx context.Context, domain, basePath string) error {
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		if _, err := getDomain(ctx, tx, domain, true); err != nil {
			return err
		}
		old, err := getMapping(ctx, tx, domain, basePath, true)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM base_path_mappings WHERE domain_name = $1 AND base_path = $2`, domain, old.BasePath); err != nil {
			return err
		}
		return record(ctx, tx, now, &change{snapshot: true})
	})
}
