package postgres

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/plans"
)

// ImportRestApi creates an API from a definition (ImportRestApi): the API
// with its root resource, every resource, method, integration, gateway
// response and rate-limit rule (kept for the stages they name, which a
// deployment creates), all in one transaction (nothing is stored when any part is
// refused) bounded by definitionBound, and records a snapshot change.
// Errors: KindInvalid naming the field or the resource path.
func (db *DB) ImportRestApi(ctx context.Context, def *plans.ApiDefinition) (*plans.RestApi, error) {
	api := &plans.RestApi{Name: def.Name, Description: def.Description, ApiKeySource: def.ApiKeySource}
	api.Normalize()
	if err := api.Validate(); err != nil {
		return nil, err
	}
	err := db.writeBulk(ctx, db.definitionBound(def), func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		if err := insertAPI(ctx, tx, now, api); err != nil {
			return err
		}
		stages, err := storeDefinition(ctx, tx, now, api.ID, def, plans.PutModeOverwrite)
		if err != nil {
			return err
		}
		return record(ctx, tx, now, &change{snapshot: true, stages: stages})
	})
	if err != nil {
		return nil, err
	}
	return api, nil
}

// PutRestApi updates an API from a definition (PutRestApi) in one
// transaction: mode overwrite replaces its resources, methods,
// integrations and gateway responses (resources whose path stays keep
// their ids) and takes the definition's name and description; mode merge
// adds the definition's resources and replaces only the methods and
// gateway responses it names. Like every method change it reaches traffic
// with the next deployment. The definition's rate-limit rules replace the
// stored rules of their names, and in mode overwrite the other rules of
// the stages the definition names are deleted (storeRules); they reach
// traffic at once. Errors: KindNotFound (API), KindInvalid
// naming the field, the resource path or the mode.
func (db *DB) PutRestApi(ctx context.Context, id, mode string, def *plans.ApiDefinition) (*plans.RestApi, error) {
	if mode != plans.PutModeOverwrite && mode != plans.PutModeMerge {
		return nil, plans.Invalid("mode", "mode %q must be overwrite or merge", mode)
	}
	var api plans.RestApi
	err := db.writeBulk(ctx, db.definitionBound(def), func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		var err error
		if api, err = getAPI(ctx, tx, id, true); err != nil {
			return err
		}
		if mode == plans.PutModeOverwrite {
			api.Name, api.Description = def.Name, def.Description
			api.Normalize()
			if err := api.Validate(); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE rest_apis SET name = $2, description = $3 WHERE id = $1`, id, api.Name, api.Description); err != nil {
				return err
			}
		}
		stages, err := storeDefinition(ctx, tx, now, id, def, mode)
		if err != nil {
			return err
		}
		return record(ctx, tx, now, &change{snapshot: true, stages: stages})
	})
	if err != nil {
		return nil, err
	}
	return &api, nil
}

// definitionBound is the time an import or put of def may take: the
// statement timeout plus importRowBudget for each resource and method, as
// an API key import gets for each row.
func (db *DB) definitionBound(def *plans.ApiDefinition) time.Duration {
	rows := len(def.Resources)
	for _, r := range def.Resources {
		rows += len(r.ResourceMethods)
	}
	return db.timeout + time.Duration(rows)*importRowBudget
}

// storeDefinition writes def's resources, methods, integrations, gateway
// responses and rate-limit rules into the API apiID (whose row the caller
// has locked or created): overwrite first clears what def does not keep.
// It returns the "apiId:stage" of the stages whose rules it wrote (rules
// take effect at once, unlike methods).
func storeDefinition(ctx context.Context, tx pgx.Tx, now time.Time, apiID string, def *plans.ApiDefinition, mode string) ([]string, error) {
	if err := storeResources(ctx, tx, apiID, def, mode); err != nil {
		return nil, err
	}
	return storeRules(ctx, tx, now, apiID, def.RateLimitRules, mode)
}

// storeResources writes def's resources, methods, integrations and
// gateway responses (storeDefinition) in a handful of statements whatever
// their number: the tree rules are checked in memory, then the new
// resources, the methods and their integrations go in with one COPY each.
func storeResources(ctx context.Context, tx pgx.Tx, apiID string, def *plans.ApiDefinition, mode string) error {
	if mode == plans.PutModeOverwrite {
		if err := clearDefinition(ctx, tx, apiID, def); err != nil {
			return err
		}
	}
	authorizers, err := storeAuthorizers(ctx, tx, apiID, def, mode)
	if err != nil {
		return err
	}
	t, err := loadTree(ctx, tx, apiID)
	if err != nil {
		return err
	}
	b := newTreeBuilder(t)
	var rows definitionRows
	for i := range def.Resources {
		r := &def.Resources[i]
		id, err := b.ensure(r.Path)
		if err != nil {
			return err
		}
		if err := rows.addMethods(apiID, id, r, authorizers); err != nil {
			return err
		}
	}
	for _, r := range b.created {
		rows.resources = append(rows.resources, []any{apiID, r.ID, r.ParentID, r.PathPart, r.Path})
	}
	if err := rows.store(ctx, tx, apiID, mode); err != nil {
		return err
	}
	for _, t := range plans.GatewayResponseTypes {
		if gr, ok := def.GatewayResponses[t]; ok {
			if err := storeGatewayResponse(ctx, tx, apiID, &gr); err != nil {
				return err
			}
		}
	}
	return nil
}

// clearDefinition deletes the API's methods, gateway responses and the
// resources whose path def does not have (with their subtrees);
// storeAuthorizers then replaces the authorizers.
func clearDefinition(ctx context.Context, tx pgx.Tx, apiID string, def *plans.ApiDefinition) error {
	keep := make([]string, 0, len(def.Resources))
	for _, r := range def.Resources {
		keep = append(keep, r.Path)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM resources r WHERE r.api_id = $1 AND r.parent_id IS NOT NULL
		AND NOT EXISTS (SELECT FROM unnest($2::text[]) AS k(path) WHERE k.path = r.path)`, apiID, keep); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM methods WHERE api_id = $1`, apiID); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `DELETE FROM gateway_responses WHERE api_id = $1`, apiID)
	return err
}

// treeBuilder adds the resources a definition's paths need to an API's
// tree, with CreateResource's rules checked against an index by parent,
// so that each path costs the same whatever the size of the tree.
type treeBuilder struct {
	t        tree
	ids      map[string]string          // path → resource id
	parts    map[string]map[string]bool // parent id → its children's path parts
	varChild map[string]string          // parent id → its {variable} child's path part
	created  []plans.Resource           // each parent before its children
}

func newTreeBuilder(t tree) *treeBuilder {
	b := &treeBuilder{t: t, ids: map[string]string{}, parts: map[string]map[string]bool{}, varChild: map[string]string{}}
	for _, r := range t {
		b.index(r)
	}
	return b
}

func (b *treeBuilder) index(r plans.Resource) {
	b.t[r.ID], b.ids[r.Path] = r, r.ID
	if r.ParentID == "" {
		return
	}
	if b.parts[r.ParentID] == nil {
		b.parts[r.ParentID] = map[string]bool{}
	}
	b.parts[r.ParentID][r.PathPart] = true
	if plans.IsParam(r.PathPart) {
		b.varChild[r.ParentID] = r.PathPart
	}
}

// ensure returns the id of the resource at path, adding it (under its
// parent, which a definition lists first) with CreateResource's rules.
func (b *treeBuilder) ensure(path string) (string, error) {
	if id, ok := b.ids[path]; ok {
		return id, nil
	}
	i := strings.LastIndexByte(path, '/')
	parentPath, part := path[:max(i, 1)], path[i+1:]
	parentID, ok := b.ids[parentPath]
	if !ok {
		return "", plans.Invalid("paths."+path, "paths.%s: its parent %s is missing", path, parentPath)
	}
	if err := b.checkChild(parentID, part); err != nil {
		return "", plans.Invalid("paths."+path, "paths.%s: %s", path, plans.ErrorMessage(err))
	}
	r := plans.Resource{ID: b.t.newID(), ParentID: parentID, PathPart: part, Path: path}
	b.index(r)
	b.created = append(b.created, r)
	return r.ID, nil
}

// checkChild applies tree.checkChild's rules to a new part under parentID.
func (b *treeBuilder) checkChild(parentID, part string) error {
	if err := plans.ValidatePathPart(part); err != nil {
		return err
	}
	if parent := b.t[parentID].PathPart; plans.IsGreedy(parent) {
		return errGreedyParent(parent)
	}
	if b.parts[parentID][part] {
		return errSameName(part)
	}
	if other, ok := b.varChild[parentID]; ok && plans.IsParam(part) {
		return errVariableSibling(other)
	}
	return nil
}

// definitionRows are the rows storeResources copies in, and the methods
// they replace.
type definitionRows struct {
	resources, methods, integrations [][]any
	replacedIDs, replacedVerbs       []string
}

// addMethods validates the methods r names, on resource id, and adds
// their rows (a missing cacheNamespace is the resource id, as
// PutIntegration's; the authorizer a method names is looked up by name in
// authorizers and stored by id).
func (rows *definitionRows) addMethods(apiID, id string, r *plans.Resource, authorizers map[string]*plans.Authorizer) error {
	for _, verb := range sortedMethodKeys(r.ResourceMethods) {
		m := *r.ResourceMethods[verb]
		m.HTTPMethod = verb
		m.Normalize()
		err := m.Validate()
		if a := authorizers[m.AuthorizerID]; err == nil && m.AuthorizerID != "" {
			if a != nil {
				m.AuthorizerID = a.ID
			}
			err = plans.CheckMethodAuthorizer(&m, a)
		}
		if err != nil {
			return plans.Invalid("paths."+r.Path, "paths.%s %s: %s", r.Path, verb, plans.ErrorMessage(err))
		}
		rows.replacedIDs, rows.replacedVerbs = append(rows.replacedIDs, id), append(rows.replacedVerbs, verb)
		rows.methods = append(rows.methods, methodValues(apiID, id, &m))
		if m.MethodIntegration == nil {
			continue
		}
		in := *m.MethodIntegration
		if in.CacheNamespace == "" {
			in.CacheNamespace = id
		}
		in.Normalize()
		if err := in.Validate(); err != nil {
			return plans.Invalid("paths."+r.Path, "paths.%s %s: %s", r.Path, verb, plans.ErrorMessage(err))
		}
		rows.integrations = append(rows.integrations, integrationValues(apiID, id, verb, &in))
	}
	return nil
}

// store deletes the methods the rows replace (in merge mode: overwrite
// deleted them all) and copies the rows in, parents first.
func (rows *definitionRows) store(ctx context.Context, tx pgx.Tx, apiID, mode string) error {
	if mode == plans.PutModeMerge && len(rows.replacedIDs) > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM methods m USING unnest($2::text[], $3::text[]) AS d(resource_id, http_method)
			WHERE m.api_id = $1 AND m.resource_id = d.resource_id AND m.http_method = d.http_method`,
			apiID, rows.replacedIDs, rows.replacedVerbs); err != nil {
			return err
		}
	}
	for _, c := range []struct {
		table string
		cols  []string
		rows  [][]any
	}{
		{"resources", resourceColumns, rows.resources},
		{"methods", methodColumns, rows.methods},
		{"integrations", integrationColumns, rows.integrations},
	} {
		if len(c.rows) == 0 {
			continue
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{c.table}, c.cols, pgx.CopyFromRows(c.rows)); err != nil {
			return err
		}
	}
	return nil
}

// resourceColumns are the columns of a resource row.
var resourceColumns = []string{"api_id", "id", "parent_id", "path_part", "path"}

func sortedMethodKeys(m map[string]*plans.Method) []string {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if v != nil {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
