package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/plans"
)

const msgNoGatewayResponse = "Invalid Gateway Response specified"

type gatewayResponseRow struct {
	ResponseType       string            `db:"response_type"`
	StatusCode         string            `db:"status_code"`
	ResponseParameters map[string]string `db:"response_parameters"`
	ResponseTemplates  map[string]string `db:"response_templates"`
}

func (r gatewayResponseRow) response() plans.GatewayResponse {
	return plans.GatewayResponse{ResponseType: r.ResponseType, StatusCode: r.StatusCode,
		ResponseParameters: nilIfEmptyMap(r.ResponseParameters), ResponseTemplates: nilIfEmptyMap(r.ResponseTemplates)}
}

// loadGatewayResponses returns the responses put for an API, by type.
func loadGatewayResponses(ctx context.Context, tx pgx.Tx, apiID string) (map[string]plans.GatewayResponse, error) {
	rows, _ := tx.Query(ctx, `SELECT response_type, status_code, response_parameters, response_templates
		FROM gateway_responses WHERE api_id = $1`, apiID)
	rs, err := pgx.CollectRows(rows, pgx.RowToStructByName[gatewayResponseRow])
	out := make(map[string]plans.GatewayResponse, len(rs))
	for _, r := range rs {
		out[r.ResponseType] = r.response()
	}
	return out, err
}

// storeGatewayResponse inserts or replaces the response of gr's type.
func storeGatewayResponse(ctx context.Context, tx pgx.Tx, apiID string, gr *plans.GatewayResponse) error {
	_, err := tx.Exec(ctx, `INSERT INTO gateway_responses (api_id, response_type, status_code, response_parameters, response_templates)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (api_id, response_type) DO UPDATE SET status_code = excluded.status_code,
			response_parameters = excluded.response_parameters, response_templates = excluded.response_templates`,
		apiID, gr.ResponseType, gr.StatusCode, emptyIfNil(gr.ResponseParameters), emptyIfNil(gr.ResponseTemplates))
	return err
}

// PutGatewayResponse validates gr and stores it as the API's response of
// its type, replacing any. Like methods, it reaches traffic with the next
// deployment. Errors: KindNotFound (API), KindInvalid naming the field.
func (db *DB) PutGatewayResponse(ctx context.Context, apiID string, gr *plans.GatewayResponse) error {
	gr.DefaultResponse = false
	if err := gr.Validate(); err != nil {
		return err
	}
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		if _, err := getAPI(ctx, tx, apiID, true); err != nil {
			return err
		}
		return storeGatewayResponse(ctx, tx, apiID, gr)
	})
}

// GatewayResponses returns the responses put for an API, by type (types
// without one are absent). Errors: KindNotFound (API).
func (db *DB) GatewayResponses(ctx context.Context, apiID string) (map[string]plans.GatewayResponse, error) {
	var out map[string]plans.GatewayResponse
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		if _, err := getAPI(ctx, tx, apiID, false); err != nil {
			return err
		}
		var err error
		out, err = loadGatewayResponses(ctx, tx, apiID)
		return err
	})
	return out, err
}

// DeleteGatewayResponse deletes the API's response of responseType, so
// the type answers as by default again. Errors: KindNotFound (API;
// "Invalid Gateway Response specified" when none was put).
func (db *DB) DeleteGatewayResponse(ctx context.Context, apiID, responseType string) error {
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		if _, err := getAPI(ctx, tx, apiID, true); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM gateway_responses WHERE api_id = $1 AND response_type = $2`, apiID, responseType)
		if err == nil && tag.RowsAffected() == 0 {
			return plans.NotFound(msgNoGatewayResponse)
		}
		return err
	})
}

// UpdateGatewayResponse lets fn change the API's response of responseType
// (starting from an empty one when none was put, as AWS patches the
// default), validates and stores it, in one transaction. Errors:
// KindNotFound (API), KindInvalid naming the field, or fn's error.
func (db *DB) UpdateGatewayResponse(ctx context.Context, apiID, responseType string, fn func(*plans.GatewayResponse) error) (*plans.GatewayResponse, error) {
	var gr plans.GatewayResponse
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		if _, err := getAPI(ctx, tx, apiID, true); err != nil {
			return err
		}
		all, err := loadGatewayResponses(ctx, tx, apiID)
		if err != nil {
			return err
		}
		gr = all[responseType]
		if err := fn(&gr); err != nil {
			return err
		}
		gr.ResponseType, gr.DefaultResponse = responseType, false
		if err := gr.Validate(); err != nil {
			return err
		}
		return storeGatewayResponse(ctx, tx, apiID, &gr)
	})
	if err != nil {
		return nil, err
	}
	return &gr, nil
}
