package postgres

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/plans"
)

// methodRow is a method left-joined with its integration (integration
// columns are NULL when there is none).
type methodRow struct {
	ResourceID         string                                `db:"resource_id"`
	HTTPMethod         string                                `db:"http_method"`
	AuthorizationType  string                                `db:"authorization_type"`
	AuthorizerID       *string                               `db:"authorizer_id"`
	AuthScopes         []string                              `db:"authorization_scopes"`
	APIKeyRequired     bool                                  `db:"api_key_required"`
	RequestParameters  map[string]bool                       `db:"request_parameters"`
	MethodResponses    map[string]*plans.MethodResponse      `db:"method_responses"`
	Type               *string                               `db:"type"`
	IntegrationMethod  *string                               `db:"integration_method"`
	URI                *string                               `db:"uri"`
	TimeoutMillis      *int32                                `db:"timeout_ms"`
	CacheKeyParameters []string                              `db:"cache_key_parameters"`
	CacheNamespace     *string                               `db:"cache_namespace"`
	IntegrationParams  map[string]string                     `db:"integration_parameters"`
	Passthrough        *string                               `db:"passthrough_behavior"`
	ConnectionType     *string                               `db:"connection_type"`
	IntegrationResps   map[string]*plans.IntegrationResponse `db:"integration_responses"`
	RequestTemplates   map[string]string                     `db:"request_templates"`
}

const methodSelect = `SELECT m.resource_id, m.http_method, m.authorization_type, m.authorizer_id, m.authorization_scopes, m.api_key_required,
	m.request_parameters, m.method_responses, i.type, i.integration_method, i.uri, i.timeout_ms, i.cache_key_parameters,
	i.cache_namespace, i.request_parameters AS integration_parameters, i.passthrough_behavior, i.connection_type,
	i.integration_responses, i.request_templates
	FROM methods m LEFT JOIN integrations i USING (api_id, resource_id, http_method)`

func (r methodRow) method() *plans.Method {
	m := &plans.Method{HTTPMethod: r.HTTPMethod, AuthorizationType: r.AuthorizationType,
		APIKeyRequired: r.APIKeyRequired, RequestParameters: nilIfEmptyMap(r.RequestParameters),
		MethodResponses: nilIfEmptyMap(r.MethodResponses)}
	if r.AuthorizerID != nil {
		m.AuthorizerID = *r.AuthorizerID
	}
	if len(r.AuthScopes) > 0 {
		m.AuthorizationScopes = r.AuthScopes
	}
	if r.Type != nil {
		m.MethodIntegration = &plans.Integration{Type: *r.Type, HTTPMethod: *r.IntegrationMethod,
			URI: *r.URI, TimeoutInMillis: *r.TimeoutMillis, CacheKeyParameters: r.CacheKeyParameters,
			CacheNamespace: *r.CacheNamespace, RequestParameters: nilIfEmptyMap(r.IntegrationParams),
			PassthroughBehavior: *r.Passthrough, ConnectionType: *r.ConnectionType,
			IntegrationResponses: nilIfEmptyMap(r.IntegrationResps), RequestTemplates: nilIfEmptyMap(r.RequestTemplates)}
	}
	return m
}

// loadMethods returns the methods (with integrations) of the given
// resources of an API: resource id → HTTP method → Method.
func loadMethods(ctx context.Context, tx pgx.Tx, apiID string, resourceIDs []string) (map[string]map[string]*plans.Method, error) {
	rows, _ := tx.Query(ctx, methodSelect+` WHERE m.api_id = $1 AND m.resource_id = ANY($2)`, apiID, resourceIDs)
	rs, err := pgx.CollectRows(rows, pgx.RowToStructByName[methodRow])
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]*plans.Method{}
	for _, r := range rs {
		if out[r.ResourceID] == nil {
			out[r.ResourceID] = map[string]*plans.Method{}
		}
		out[r.ResourceID][r.HTTPMethod] = r.method()
	}
	return out, nil
}

// getMethod loads one method with its integration. It reports a missing
// API or resource before a missing method, as AWS.
func getMethod(ctx context.Context, tx pgx.Tx, apiID, resourceID, httpMethod string, forUpdate bool) (*plans.Method, error) {
	if err := resourceExists(ctx, tx, apiID, resourceID); err != nil {
		return nil, err
	}
	q := methodSelect + ` WHERE m.api_id = $1 AND m.resource_id = $2 AND m.http_method = $3`
	if forUpdate {
		q += ` FOR UPDATE OF m`
	}
	rows, _ := tx.Query(ctx, q, apiID, resourceID, httpMethod)
	r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[methodRow])
	if err != nil {
		return nil, notFound(err, msgNoMethod)
	}
	return r.method(), nil
}

func resourceExists(ctx context.Context, tx pgx.Tx, apiID, resourceID string) error {
	_, err := resourcePath(ctx, tx, apiID, resourceID)
	return err
}

// resourcePath returns the path of a resource; a missing API is reported
// before a missing resource.
func resourcePath(ctx context.Context, tx pgx.Tx, apiID, resourceID string) (string, error) {
	if _, err := getAPI(ctx, tx, apiID, false); err != nil {
		return "", err
	}
	var path string
	err := tx.QueryRow(ctx, `SELECT path FROM resources WHERE api_id = $1 AND id = $2`, apiID, resourceID).Scan(&path)
	return path, notFound(err, msgNoResource)
}

// PutMethod validates m and stores it on the resource, without an
// integration (m's MethodIntegration is ignored and cleared). A path
// parameter must name a {param} of the resource's path
// (plans.CheckPathParameters). Errors: KindNotFound (API, resource),
// KindInvalid ("httpMethod", "authorizationType", "authorizerId" naming
// no authorizer of the API or one of another type, "requestParameters",
// "methodResponses"),
// KindConflict "Method already exists for this resource" when the
// resource has the method (as AWS: nothing changes).
func (db *DB) PutMethod(ctx context.Context, apiID, resourceID string, m *plans.Method) error {
	m.Normalize()
	if err := m.Validate(); err != nil {
		return err
	}
	m.MethodIntegration = nil
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		path, err := resourcePath(ctx, tx, apiID, resourceID)
		if err != nil {
			return err
		}
		if err := plans.CheckPathParameters(path, m.RequestParameters, nil); err != nil {
			return err
		}
		if err := checkMethodAuthorizer(ctx, tx, apiID, m); err != nil {
			return err
		}
		return insertMethod(ctx, tx, apiID, resourceID, m)
	})
}

// methodColumns are the columns of a method row, in methodValues's order.
var methodColumns = []string{"api_id", "resource_id", "http_method", "authorization_type", "authorizer_id",
	"authorization_scopes", "api_key_required", "request_parameters", "method_responses"}

// methodValues is m's row (without its integration).
func methodValues(apiID, resourceID string, m *plans.Method) []any {
	var authorizer *string
	if m.AuthorizerID != "" {
		authorizer = &m.AuthorizerID
	}
	scopes := m.AuthorizationScopes
	if scopes == nil {
		scopes = []string{}
	}
	return []any{apiID, resourceID, m.HTTPMethod, m.AuthorizationType, authorizer, scopes, m.APIKeyRequired,
		emptyIfNil(m.RequestParameters), emptyIfNil(m.MethodResponses)}
}

// insertMethod inserts m (without its integration); an existing method is
// 409 by the methods_pkey constraint.
func insertMethod(ctx context.Context, tx pgx.Tx, apiID, resourceID string, m *plans.Method) error {
	_, err := tx.Exec(ctx, insertInto("methods", methodColumns), methodValues(apiID, resourceID, m)...)
	return err
}

// insertInto is "INSERT INTO table (cols) VALUES ($1, ...)".
func insertInto(table string, cols []string) string {
	params := make([]string, len(cols))
	for i := range cols {
		params[i] = "$" + strconv.Itoa(i+1)
	}
	return "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES (" + strings.Join(params, ", ") + ")"
}

// GetMethod returns a method with its integration (MethodIntegration nil
// when none). Errors: KindNotFound ("Invalid API identifier specified",
// "Invalid Resource identifier specified", "Invalid Method identifier
// specified").
func (db *DB) GetMethod(ctx context.Context, apiID, resourceID, httpMethod string) (*plans.Method, error) {
	var m *plans.Method
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		var err error
		m, err = getMethod(ctx, tx, apiID, resourceID, httpMethod, false)
		return err
	})
	return m, err
}

// UpdateMethod lets fn change a method's apiKeyRequired,
// authorizationType, authorizerId, authorizationScopes,
// requestParameters or methodResponses (HTTPMethod and
// the integration are kept), validates and stores it. A path parameter fn
// adds must name a {param} of the resource's path (one stored earlier is
// kept). Errors: KindNotFound, KindInvalid, or fn's error.
func (db *DB) UpdateMethod(ctx context.Context, apiID, resourceID, httpMethod string, fn func(*plans.Method) error) (*plans.Method, error) {
	var m *plans.Method
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		var err error
		if m, err = getMethod(ctx, tx, apiID, resourceID, httpMethod, true); err != nil {
			return err
		}
		in, before := m.MethodIntegration, maps.Clone(m.RequestParameters)
		if err := fn(m); err != nil {
			return err
		}
		m.HTTPMethod, m.MethodIntegration = httpMethod, in
		m.Normalize()
		if err := m.Validate(); err != nil {
			return err
		}
		path, err := resourcePath(ctx, tx, apiID, resourceID)
		if err != nil {
			return err
		}
		if err := plans.CheckPathParameters(path, m.RequestParameters, before); err != nil {
			return err
		}
		if err := checkMethodAuthorizer(ctx, tx, apiID, m); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE methods SET (authorization_type, authorizer_id, authorization_scopes, api_key_required,
				request_parameters, method_responses) = ($4, $5, $6, $7, $8, $9)
			WHERE api_id = $1 AND resource_id = $2 AND http_method = $3`, methodValues(apiID, resourceID, m)...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// DeleteMethod deletes a method and its integration. Errors: KindNotFound.
func (db *DB) DeleteMethod(ctx context.Context, apiID, resourceID, httpMethod string) error {
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		if _, err := getMethod(ctx, tx, apiID, resourceID, httpMethod, true); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM methods WHERE api_id = $1 AND resource_id = $2 AND http_method = $3`,
			apiID, resourceID, httpMethod)
		return err
	})
}
