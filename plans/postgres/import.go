package postgres

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/plans"
)

// ImportRestApi creates an API from a definition (ImportRestApi): the API
// with its root resource, every resource, method, integration, gateway
// response and rate-limit rule (kept for the stages they name, which a
// deployment creates), all in one transaction (nothing is stored when any part is
// refused), and records a snapshot change. Errors: KindInvalid naming the
// field or the resource path.
func (db *DB) ImportRestApi(ctx context.Context, def *plans.ApiDefinition) (*plans.RestApi, error) {
	api := &plans.RestApi{Name: def.Name, Description: def.Description, ApiKeySource: def.ApiKeySource}
	api.Normalize()
	if err := api.Validate(); err != nil {
		return nil, err
	}
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
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
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
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
// gateway responses (storeDefinition).
func storeResources(ctx context.Context, tx pgx.Tx, apiID string, def *plans.ApiDefinition, mode string) error {
	if mode == plans.PutModeOverwrite {
		if err := clearDefinition(ctx, tx, apiID, def); err != nil {
			return err
		}
	}
	t, err := loadTree(ctx, tx, apiID)
	if err != nil {
		return err
	}
	ids := map[string]string{}
	for id, r := range t {
		ids[r.Path] = id
	}
	for i := range def.Resources {
		r := &def.Resources[i]
		id, err := ensureResource(ctx, tx, apiID, t, ids, r.Path)
		if err != nil {
			return err
		}
		if err := storeMethods(ctx, tx, apiID, id, r); err != nil {
			return err
		}
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
// resources whose path def does not have (with their subtrees).
func clearDefinition(ctx context.Context, tx pgx.Tx, apiID string, def *plans.ApiDefinition) error {
	keep := make([]string, 0, len(def.Resources))
	for _, r := range def.Resources {
		keep = append(keep, r.Path)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM resources WHERE api_id = $1 AND parent_id IS NOT NULL AND NOT (path = ANY($2))`,
		apiID, keep); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM methods WHERE api_id = $1`, apiID); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `DELETE FROM gateway_responses WHERE api_id = $1`, apiID)
	return err
}

// ensureResource returns the id of the resource at path, creating it
// (under its parent, which def lists first) with CreateResource's rules.
func ensureResource(ctx context.Context, tx pgx.Tx, apiID string, t tree, ids map[string]string, path string) (string, error) {
	if id, ok := ids[path]; ok {
		return id, nil
	}
	i := len(path) - 1
	for i > 0 && path[i] != '/' {
		i--
	}
	parentPath, part := path[:max(i, 1)], path[i+1:]
	parentID, ok := ids[parentPath]
	if !ok {
		return "", plans.Invalid("paths."+path, "paths.%s: its parent %s is missing", path, parentPath)
	}
	if err := plans.ValidatePathPart(part); err != nil {
		return "", plans.Invalid("paths."+path, "paths.%s: %s", path, plans.ErrorMessage(err))
	}
	if err := t.checkChild(t[parentID], "", part); err != nil {
		return "", plans.Invalid("paths."+path, "paths.%s: %s", path, plans.ErrorMessage(err))
	}
	r := plans.Resource{ID: plans.NewID(plans.ShortIDLen), ParentID: parentID, PathPart: part, Path: path}
	if _, err := tx.Exec(ctx, `INSERT INTO resources (api_id, id, parent_id, path_part, path) VALUES ($1, $2, $3, $4, $5)`,
		apiID, r.ID, r.ParentID, r.PathPart, r.Path); err != nil {
		return "", err
	}
	t[r.ID], ids[path] = r, r.ID
	return r.ID, nil
}

// storeMethods replaces the methods of resource id that r names, with
// their integrations (a missing cacheNamespace is the resource id, as
// PutIntegration's).
func storeMethods(ctx context.Context, tx pgx.Tx, apiID, id string, r *plans.Resource) error {
	for _, verb := range sortedMethodKeys(r.ResourceMethods) {
		m := *r.ResourceMethods[verb]
		m.HTTPMethod = verb
		m.Normalize()
		if err := m.Validate(); err != nil {
			return plans.Invalid("paths."+r.Path, "paths.%s %s: %s", r.Path, verb, plans.ErrorMessage(err))
		}
		if _, err := tx.Exec(ctx, `DELETE FROM methods WHERE api_id = $1 AND resource_id = $2 AND http_method = $3`, apiID, id, verb); err != nil {
			return err
		}
		if err := insertMethod(ctx, tx, apiID, id, &m); err != nil {
			return err
		}
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
		if err := storeIntegration(ctx, tx, apiID, id, verb, &in); err != nil {
			return err
		}
	}
	return nil
}

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
