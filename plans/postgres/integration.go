package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/plans"
)

// PutIntegration validates in (filling its defaults) and stores it as the
// method's integration, replacing any together with its integration
// responses (as AWS). Errors: KindNotFound (API,
// resource, method), KindInvalid naming the field (e.g. "type" for HTTP,
// AWS or AWS_PROXY).
func (db *DB) PutIntegration(ctx context.Context, apiID, resourceID, httpMethod string, in *plans.Integration) error {
	in.Normalize()
	if err := in.Validate(); err != nil {
		return err
	}
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		if _, err := getMethod(ctx, tx, apiID, resourceID, httpMethod, true); err != nil {
			return err
		}
		return storeIntegration(ctx, tx, apiID, resourceID, httpMethod, in)
	})
}

// integrationColumns are the columns of an integration row, in
// integrationValues's order.
var integrationColumns = []string{"api_id", "resource_id", "http_method", "type", "integration_method", "uri", "timeout_ms",
	"cache_key_parameters", "cache_namespace", "request_parameters", "passthrough_behavior", "connection_type",
	"integration_responses", "request_templates"}

// integrationValues is in's row, the integration of one method.
func integrationValues(apiID, resourceID, httpMethod string, in *plans.Integration) []any {
	return []any{apiID, resourceID, httpMethod, in.Type, in.HTTPMethod, in.URI, in.TimeoutInMillis, in.CacheKeyParameters,
		in.CacheNamespace, emptyIfNil(in.RequestParameters), in.PassthroughBehavior, in.ConnectionType,
		emptyIfNil(in.IntegrationResponses), emptyIfNil(in.RequestTemplates)}
}

// storeIntegration inserts or replaces a method's integration.
func storeIntegration(ctx context.Context, tx pgx.Tx, apiID, resourceID, httpMethod string, in *plans.Integration) error {
	set := make([]string, 0, len(integrationColumns))
	for _, c := range integrationColumns[3:] {
		set = append(set, c+" = excluded."+c)
	}
	_, err := tx.Exec(ctx, insertInto("integrations", integrationColumns)+` ON CONFLICT (api_id, resource_id, http_method) DO UPDATE SET `+
		strings.Join(set, ", "), integrationValues(apiID, resourceID, httpMethod, in)...)
	return err
}

// getIntegration loads a method's integration. Errors: KindNotFound (API,
// resource, method; "No integration defined for method").
func getIntegration(ctx context.Context, tx pgx.Tx, apiID, resourceID, httpMethod string, forUpdate bool) (*plans.Integration, error) {
	m, err := getMethod(ctx, tx, apiID, resourceID, httpMethod, forUpdate)
	if err != nil {
		return nil, err
	}
	if m.MethodIntegration == nil {
		return nil, plans.NotFound(msgNoIntegration)
	}
	return m.MethodIntegration, nil
}

// GetIntegration returns a method's integration. Errors: KindNotFound
// ("No integration defined for method" when the method has none).
func (db *DB) GetIntegration(ctx context.Context, apiID, resourceID, httpMethod string) (*plans.Integration, error) {
	var in *plans.Integration
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		var err error
		in, err = getIntegration(ctx, tx, apiID, resourceID, httpMethod, false)
		return err
	})
	return in, err
}

// UpdateIntegration lets fn modify a method's integration, validates and
// stores the result. Errors: KindNotFound, KindInvalid, or fn's error.
func (db *DB) UpdateIntegration(ctx context.Context, apiID, resourceID, httpMethod string, fn func(*plans.Integration) error) (*plans.Integration, error) {
	var in *plans.Integration
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		var err error
		if in, err = getIntegration(ctx, tx, apiID, resourceID, httpMethod, true); err != nil {
			return err
		}
		if err := fn(in); err != nil {
			return err
		}
		in.Normalize()
		if err := in.Validate(); err != nil {
			return err
		}
		return storeIntegration(ctx, tx, apiID, resourceID, httpMethod, in)
	})
	if err != nil {
		return nil, err
	}
	return in, nil
}

// DeleteIntegration removes a method's integration. Errors: KindNotFound.
func (db *DB) DeleteIntegration(ctx context.Context, apiID, resourceID, httpMethod string) error {
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		if _, err := getIntegration(ctx, tx, apiID, resourceID, httpMethod, true); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM integrations WHERE api_id = $1 AND resource_id = $2 AND http_method = $3`,
			apiID, resourceID, httpMethod)
		return err
	})
}
