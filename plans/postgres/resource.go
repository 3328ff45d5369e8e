package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/plans"
)

type resourceRow struct {
	ID       string  `db:"id"`
	ParentID *string `db:"parent_id"`
	PathPart string  `db:"path_part"`
	Path     string  `db:"path"`
}

const resourceCols = `id, parent_id, path_part, path`

func (r resourceRow) resource() plans.Resource {
	res := plans.Resource{ID: r.ID, PathPart: r.PathPart, Path: r.Path}
	if r.ParentID != nil {
		res.ParentID = *r.ParentID
	}
	return res
}

// ListResources returns one page of the API's resources, ordered by id,
// each with its methods (and their integrations). Errors: KindNotFound
// ("Invalid API identifier specified"), KindInvalid ("position").
func (db *DB) ListResources(ctx context.Context, apiID string, p plans.Page) ([]plans.Resource, string, error) {
	after, limit, err := pageArgs(p)
	if err != nil {
		return nil, "", err
	}
	var out []plans.Resource
	err = db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		if _, err := getAPI(ctx, tx, apiID, false); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `SELECT `+resourceCols+` FROM resources WHERE api_id = $1 AND id > $2
			ORDER BY id LIMIT $3`, apiID, after, limit+1)
		var err error
		out, err = collectResources(ctx, tx, apiID, rows)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	out, next := cut(out, limit, func(r plans.Resource) string { return r.ID })
	return out, next, nil
}

// collectResources scans resource rows and attaches their methods.
func collectResources(ctx context.Context, tx pgx.Tx, apiID string, rows pgx.Rows) ([]plans.Resource, error) {
	rs, err := pgx.CollectRows(rows, pgx.RowToStructByName[resourceRow])
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
	}
	methods, err := loadMethods(ctx, tx, apiID, ids)
	if err != nil {
		return nil, err
	}
	out := make([]plans.Resource, len(rs))
	for i, r := range rs {
		out[i] = r.resource()
		out[i].ResourceMethods = methods[r.ID]
	}
	return out, nil
}

// GetResource returns one resource with its methods. Errors: KindNotFound
// ("Invalid API identifier specified", "Invalid Resource identifier
// specified").
func (db *DB) GetResource(ctx context.Context, apiID, resourceID string) (*plans.Resource, error) {
	var res *plans.Resource
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		if _, err := getAPI(ctx, tx, apiID, false); err != nil {
			return err
		}
		var err error
		res, err = getResource(ctx, tx, apiID, resourceID)
		return err
	})
	return res, err
}

func getResource(ctx context.Context, tx pgx.Tx, apiID, resourceID string) (*plans.Resource, error) {
	rows, _ := tx.Query(ctx, `SELECT `+resourceCols+` FROM resources WHERE api_id = $1 AND id = $2`, apiID, resourceID)
	out, err := collectResources(ctx, tx, apiID, rows)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, plans.NotFound(msgNoResource)
	}
	return &out[0], nil
}

// tree is an API's resources without methods, by id.
type tree map[string]plans.Resource

// lockTree locks the API's row (so concurrent tree changes of one API run
// one after the other) and loads its tree. Errors: KindNotFound for the
// API, or the driver's.
func lockTree(ctx context.Context, tx pgx.Tx, apiID string) (tree, error) {
	if _, err := getAPI(ctx, tx, apiID, true); err != nil {
		return nil, err
	}
	return loadTree(ctx, tx, apiID)
}

func loadTree(ctx context.Context, tx pgx.Tx, apiID string) (tree, error) {
	rows, _ := tx.Query(ctx, `SELECT `+resourceCols+` FROM resources WHERE api_id = $1`, apiID)
	rs, err := pgx.CollectRows(rows, pgx.RowToStructByName[resourceRow])
	t := make(tree, len(rs))
	for _, r := range rs {
		t[r.ID] = r.resource()
	}
	return t, err
}

// checkChild applies AWS's rules for a resource self (empty when new)
// with pathPart under parent: the parent is not greedy, no sibling has
// the same pathPart (409), and at most one sibling is a path parameter.
func (t tree) checkChild(parent plans.Resource, self, pathPart string) error {
	if plans.IsGreedy(parent.PathPart) {
		return errGreedyParent(parent.PathPart)
	}
	for _, sib := range t {
		if sib.ParentID != parent.ID || sib.ID == self {
			continue
		}
		if sib.PathPart == pathPart {
			return errSameName(pathPart)
		}
		if plans.IsParam(sib.PathPart) && plans.IsParam(pathPart) {
			return errVariableSibling(sib.PathPart)
		}
	}
	return nil
}

// The refusals of the tree rules, as AWS words them.
func errGreedyParent(parentPart string) error {
	return plans.Invalid("parentId", "Cannot create a child of a resource with a greedy path variable: %s", parentPart)
}

func errSameName(pathPart string) error {
	return plans.Conflict("Another resource with the same parent already has this name: %s", pathPart)
}

func errVariableSibling(sibling string) error {
	return plans.Invalid("pathPart", "A sibling (%s) of this resource already has a variable path part -- only one is allowed", sibling)
}

// newID draws a resource id (6 characters) no resource of t has: ids are
// unique per API, and in an API of tens of thousands of resources a
// random draw would repeat one often enough to matter.
func (t tree) newID() string {
	for {
		if id := plans.NewID(plans.ShortIDLen); t[id].ID == "" {
			return id
		}
	}
}

// isAncestor reports whether id is anc or lies below it.
func (t tree) isAncestor(anc, id string) bool {
	for range len(t) + 1 {
		if id == anc {
			return true
		}
		r, ok := t[id]
		if !ok || r.ParentID == "" {
			return false
		}
		id = r.ParentID
	}
	return false
}

// hasChildren reports whether any resource has parent id.
func (t tree) hasChildren(id string) bool {
	for _, r := range t {
		if r.ParentID == id {
			return true
		}
	}
	return false
}

// CreateResource creates a child resource (id of 6 characters) with
// pathPart ("pets", "{petId}" or "{proxy+}") under parentID. Errors:
// KindNotFound (API, parent resource), KindInvalid ("pathPart", or
// "parentId" under a greedy resource), KindConflict on a sibling with the
// same pathPart.
func (db *DB) CreateResource(ctx context.Context, apiID, parentID, pathPart string) (*plans.Resource, error) {
	if err := plans.ValidatePathPart(pathPart); err != nil {
		return nil, err
	}
	var res plans.Resource
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		t, err := lockTree(ctx, tx, apiID)
		if err != nil {
			return err
		}
		parent, ok := t[parentID]
		if !ok {
			return plans.NotFound(msgNoResource)
		}
		if err := t.checkChild(parent, "", pathPart); err != nil {
			return err
		}
		res = plans.Resource{ID: t.newID(), ParentID: parentID,
			PathPart: pathPart, Path: plans.JoinPath(parent.Path, pathPart)}
		_, err = tx.Exec(ctx, `INSERT INTO resources (api_id, id, parent_id, path_part, path) VALUES ($1, $2, $3, $4, $5)`,
			apiID, res.ID, res.ParentID, res.PathPart, res.Path)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// UpdateResource lets fn change a resource's PathPart or ParentID (as
// AWS's patch of /pathPart and /parentId), checks the tree rules again and
// rewrites the paths of the whole subtree. Every method of the subtree
// must keep its path parameters in its new path. Errors: KindNotFound,
// KindInvalid (the root cannot change, a resource cannot move below
// itself, "pathPart"), KindConflict (sibling with the same pathPart), or
// fn's error.
func (db *DB) UpdateResource(ctx context.Context, apiID, resourceID string, fn func(*plans.Resource) error) (*plans.Resource, error) {
	var out *plans.Resource
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		t, err := lockTree(ctx, tx, apiID)
		if err != nil {
			return err
		}
		orig, ok := t[resourceID]
		if !ok {
			return plans.NotFound(msgNoResource)
		}
		res := orig
		if err := fn(&res); err != nil {
			return err
		}
		if res.PathPart != orig.PathPart || res.ParentID != orig.ParentID {
			if err := t.checkMove(orig, res); err != nil {
				return err
			}
			if err := moveResource(ctx, tx, apiID, res, plans.JoinPath(t[res.ParentID].Path, res.PathPart)); err != nil {
				return err
			}
			if err := t.checkMovedMethods(ctx, tx, apiID, res.ID); err != nil {
				return err
			}
		}
		out, err = getResource(ctx, tx, apiID, resourceID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// checkMove validates changing orig into res.
func (t tree) checkMove(orig, res plans.Resource) error {
	if orig.ParentID == "" {
		return plans.Invalid("resourceId", "The root resource cannot be changed")
	}
	if err := plans.ValidatePathPart(res.PathPart); err != nil {
		return err
	}
	parent, ok := t[res.ParentID]
	if !ok {
		return plans.Invalid("parentId", "Invalid parent resource identifier specified")
	}
	if t.isAncestor(orig.ID, parent.ID) {
		return plans.Invalid("parentId", "A resource cannot be moved below itself")
	}
	if plans.IsGreedy(res.PathPart) && t.hasChildren(orig.ID) {
		return plans.Invalid("pathPart", "A resource with children cannot have a greedy path variable: %s", res.PathPart)
	}
	return t.checkChild(parent, orig.ID, res.PathPart)
}

// checkMovedMethods requires the path parameters of every method at or
// below the moved resource (t is the tree before the move) to name a
// {param} of its new path. Errors: KindInvalid on "pathPart" naming the
// method and the parameter.
func (t tree) checkMovedMethods(ctx context.Context, tx pgx.Tx, apiID, movedID string) error {
	var ids []string
	for id := range t {
		if t.isAncestor(movedID, id) {
			ids = append(ids, id)
		}
	}
	rows, _ := tx.Query(ctx, `SELECT r.path, m.http_method, m.request_parameters FROM methods m
		JOIN resources r ON r.api_id = m.api_id AND r.id = m.resource_id
		WHERE m.api_id = $1 AND m.resource_id = ANY($2) ORDER BY r.path, m.http_method`, apiID, ids)
	var path, verb string
	var params map[string]bool
	_, err := pgx.ForEachRow(rows, []any{&path, &verb, &params}, func() error {
		if err := plans.CheckPathParameters(path, params, nil); err != nil {
			return plans.Invalid("pathPart", "%s %s: %s", verb, path, plans.ErrorMessage(err))
		}
		return nil
	})
	return err
}

// moveResource stores res's parent and pathPart and rewrites the path of
// res (to path) and of every resource below it.
func moveResource(ctx context.Context, tx pgx.Tx, apiID string, res plans.Resource, path string) error {
	if _, err := tx.Exec(ctx, `UPDATE resources SET parent_id = $3, path_part = $4 WHERE api_id = $1 AND id = $2`,
		apiID, res.ID, res.ParentID, res.PathPart); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `WITH RECURSIVE sub(id, path) AS (
			SELECT $2::text, $3::text
			UNION ALL
			SELECT r.id, sub.path || '/' || r.path_part
			FROM resources r JOIN sub ON r.api_id = $1 AND r.parent_id = sub.id)
		UPDATE resources r SET path = sub.path FROM sub WHERE r.api_id = $1 AND r.id = sub.id`,
		apiID, res.ID, path)
	return err
}

// DeleteResource deletes a resource with its subtree, methods and
// integrations. Errors: KindNotFound; KindInvalid ("resourceId") for the
// root.
func (db *DB) DeleteResource(ctx context.Context, apiID, resourceID string) error {
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		if _, err := getAPI(ctx, tx, apiID, true); err != nil {
			return err
		}
		var parent *string
		err := tx.QueryRow(ctx, `SELECT parent_id FROM resources WHERE api_id = $1 AND id = $2`, apiID, resourceID).Scan(&parent)
		if err != nil {
			return notFound(err, msgNoResource)
		}
		if parent == nil {
			return plans.Invalid("resourceId", "Cannot delete the root resource")
		}
		_, err = tx.Exec(ctx, `DELETE FROM resources WHERE api_id = $1 AND id = $2`, apiID, resourceID)
		return err
	})
}
