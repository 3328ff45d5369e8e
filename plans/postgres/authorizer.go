package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/plans"
)

const msgNoAuthorizer = "Invalid authorizer identifier specified"

type authorizerRow struct {
	ID                           string   `db:"id"`
	Name                         string   `db:"name"`
	Type                         string   `db:"type"`
	ProviderARNs                 []string `db:"provider_arns"`
	AuthType                     string   `db:"auth_type"`
	AuthorizerURI                string   `db:"authorizer_uri"`
	AuthorizerCredentials        string   `db:"authorizer_credentials"`
	IdentitySource               string   `db:"identity_source"`
	IdentityValidationExpression string   `db:"identity_validation_expression"`
	ResultTTLSeconds             int32    `db:"result_ttl_seconds"`
}

const authorizerCols = `id, name, type, provider_arns, auth_type, authorizer_uri, authorizer_credentials,
	identity_source, identity_validation_expression, result_ttl_seconds`

func (r authorizerRow) authorizer() plans.Authorizer {
	ttl := r.ResultTTLSeconds
	a := plans.Authorizer{ID: r.ID, Name: r.Name, Type: r.Type, ProviderARNs: r.ProviderARNs, AuthType: r.AuthType,
		AuthorizerURI: r.AuthorizerURI, AuthorizerCredentials: r.AuthorizerCredentials, IdentitySource: r.IdentitySource,
		IdentityValidationExpression: r.IdentityValidationExpression, AuthorizerResultTTLInSeconds: &ttl}
	a.Normalize()
	return a
}

// authorizerValues is a's row after apiID and id, in authorizerCols's
// order (a normalised).
func authorizerValues(a *plans.Authorizer) []any {
	arns := a.ProviderARNs
	if arns == nil {
		arns = []string{}
	}
	return []any{a.Name, a.Type, arns, a.AuthType, a.AuthorizerURI, a.AuthorizerCredentials,
		a.IdentitySource, a.IdentityValidationExpression, *a.AuthorizerResultTTLInSeconds}
}

// loadAuthorizers returns the API's authorizers, by name.
func loadAuthorizers(ctx context.Context, tx pgx.Tx, apiID string) ([]plans.Authorizer, error) {
	rows, _ := tx.Query(ctx, `SELECT `+authorizerCols+` FROM authorizers WHERE api_id = $1 ORDER BY name`, apiID)
	rs, err := pgx.CollectRows(rows, pgx.RowToStructByName[authorizerRow])
	out := make([]plans.Authorizer, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.authorizer())
	}
	return out, err
}

// getAuthorizer loads one authorizer of an API; a missing API is reported
// before a missing authorizer.
func getAuthorizer(ctx context.Context, tx pgx.Tx, apiID, id string, forUpdate bool) (plans.Authorizer, error) {
	if _, err := getAPI(ctx, tx, apiID, false); err != nil {
		return plans.Authorizer{}, err
	}
	q := `SELECT ` + authorizerCols + ` FROM authorizers WHERE api_id = $1 AND id = $2`
	if forUpdate {
		q += ` FOR UPDATE`
	}
	rows, _ := tx.Query(ctx, q, apiID, id)
	r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[authorizerRow])
	if err != nil {
		return plans.Authorizer{}, notFound(err, msgNoAuthorizer)
	}
	return r.authorizer(), nil
}

// insertAuthorizer stores a (normalised and valid) with a new id.
func insertAuthorizer(ctx context.Context, tx pgx.Tx, apiID string, a *plans.Authorizer) error {
	a.ID = plans.NewID(plans.ShortIDLen)
	_, err := tx.Exec(ctx, `INSERT INTO authorizers (api_id, `+authorizerCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`, append([]any{apiID, a.ID}, authorizerValues(a)...)...)
	return err
}

// saveAuthorizer stores a (normalised and valid) over the row of its id.
func saveAuthorizer(ctx context.Context, tx pgx.Tx, apiID string, a *plans.Authorizer) error {
	_, err := tx.Exec(ctx, `UPDATE authorizers SET (`+authorizerCols[len("id, "):]+`) =
		($3, $4, $5, $6, $7, $8, $9, $10, $11) WHERE api_id = $1 AND id = $2`, append([]any{apiID, a.ID}, authorizerValues(a)...)...)
	return err
}

// CreateAuthorizer validates a and stores it as an authorizer of the API
// (CreateAuthorizer; ID filled in). It changes no traffic: a method uses it
// through the next deployment. Errors: KindNotFound (API), KindInvalid
// naming the field, KindConflict when the API has an authorizer of that
// name.
func (db *DB) CreateAuthorizer(ctx context.Context, apiID string, a *plans.Authorizer) error {
	a.Normalize()
	if err := a.Validate(); err != nil {
		return err
	}
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		if _, err := getAPI(ctx, tx, apiID, true); err != nil {
			return err
		}
		return insertAuthorizer(ctx, tx, apiID, a)
	})
}

// GetAuthorizer returns one authorizer. Errors: KindNotFound (API,
// authorizer).
func (db *DB) GetAuthorizer(ctx context.Context, apiID, id string) (*plans.Authorizer, error) {
	var a plans.Authorizer
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		var err error
		a, err = getAuthorizer(ctx, tx, apiID, id, false)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &a, nil
}

// Authorizers returns the API's authorizers by name (GetAuthorizers; an
// API has few). Errors: KindNotFound (API).
func (db *DB) Authorizers(ctx context.Context, apiID string) ([]plans.Authorizer, error) {
	var out []plans.Authorizer
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		if _, err := getAPI(ctx, tx, apiID, false); err != nil {
			return err
		}
		var err error
		out, err = loadAuthorizers(ctx, tx, apiID)
		return err
	})
	return out, err
}

// UpdateAuthorizer lets fn change an authorizer (its id is kept),
// validates and stores it. Its type may not change between a Lambda
// authorizer and a user pool while a method uses it. Errors:
// KindNotFound, KindInvalid, KindConflict (name), or fn's error.
func (db *DB) UpdateAuthorizer(ctx context.Context, apiID, id string, fn func(*plans.Authorizer) error) (*plans.Authorizer, error) {
	var a plans.Authorizer
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		var err error
		if a, err = getAuthorizer(ctx, tx, apiID, id, true); err != nil {
			return err
		}
		if err := fn(&a); err != nil {
			return err
		}
		a.ID = id
		a.Normalize()
		if err := a.Validate(); err != nil {
			return err
		}
		var other string
		err = tx.QueryRow(ctx, `SELECT authorization_type FROM methods WHERE api_id = $1 AND authorizer_id = $2
			AND authorization_type <> $3 LIMIT 1`, apiID, id, a.MethodAuthorization()).Scan(&other)
		if err == nil {
			return plans.Invalid("type", "type %s cannot secure the %s methods that use this authorizer", a.Type, other)
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		return saveAuthorizer(ctx, tx, apiID, &a)
	})
	if err != nil {
		return nil, err
	}
	return &a, nil
}

// DeleteAuthorizer deletes an authorizer no method uses. Errors:
// KindNotFound, KindConflict naming a method that uses it (as AWS).
func (db *DB) DeleteAuthorizer(ctx context.Context, apiID, id string) error {
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		a, err := getAuthorizer(ctx, tx, apiID, id, true)
		if err != nil {
			return err
		}
		var verb, path string
		err = tx.QueryRow(ctx, `SELECT m.http_method, r.path FROM methods m JOIN resources r ON r.api_id = m.api_id AND r.id = m.resource_id
			WHERE m.api_id = $1 AND m.authorizer_id = $2 ORDER BY r.path, m.http_method LIMIT 1`, apiID, id).Scan(&verb, &path)
		if err == nil {
			return &plans.Error{Kind: plans.KindConflict, Field: "authorizerId",
				Message: fmt.Sprintf("Cannot delete authorizer '%s', is referenced in method: %s%s", a.Name, verb, path)}
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM authorizers WHERE api_id = $1 AND id = $2`, apiID, id)
		return deleting(err)
	})
}

// checkMethodAuthorizer requires the authorizer m names (by id) to be one
// of the API's, of the type m's authorizationType needs.
func checkMethodAuthorizer(ctx context.Context, tx pgx.Tx, apiID string, m *plans.Method) error {
	if m.AuthorizerID == "" {
		return nil
	}
	rows, _ := tx.Query(ctx, `SELECT `+authorizerCols+` FROM authorizers WHERE api_id = $1 AND id = $2`, apiID, m.AuthorizerID)
	r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[authorizerRow])
	if errors.Is(err, pgx.ErrNoRows) {
		return plans.CheckMethodAuthorizer(m, nil)
	}
	if err != nil {
		return err
	}
	a := r.authorizer()
	return plans.CheckMethodAuthorizer(m, &a)
}

// storeAuthorizers writes a definition's authorizers into the API (mode
// overwrite deletes the others; the caller has deleted every method
// first) and returns every authorizer the API then has, by name, for the
// definition's methods, which name theirs (definitionRows.addMethods). An
// authorizer keeps its id when one of its name exists.
func storeAuthorizers(ctx context.Context, tx pgx.Tx, apiID string, def *plans.ApiDefinition, mode string) (map[string]*plans.Authorizer, error) {
	have, err := loadAuthorizers(ctx, tx, apiID)
	if err != nil {
		return nil, err
	}
	ids := map[string]string{}
	for _, a := range have {
		ids[a.Name] = a.ID
	}
	keep := []string{}
	for i := range def.Authorizers {
		a := def.Authorizers[i]
		a.Normalize()
		if err := a.Validate(); err != nil {
			return nil, plans.Invalid("securitySchemes."+a.Name, "securitySchemes.%s: %s", a.Name, plans.ErrorMessage(err))
		}
		if id, ok := ids[a.Name]; ok {
			a.ID = id
			if err := saveAuthorizer(ctx, tx, apiID, &a); err != nil {
				return nil, err
			}
		} else if err := insertAuthorizer(ctx, tx, apiID, &a); err != nil {
			return nil, err
		}
		ids[a.Name] = a.ID
		keep = append(keep, a.ID)
	}
	if mode == plans.PutModeOverwrite {
		if _, err := tx.Exec(ctx, `DELETE FROM authorizers WHERE api_id = $1 AND NOT (id = ANY($2))`, apiID, keep); err != nil {
			return nil, deleting(err)
		}
	}
	all, err := loadAuthorizers(ctx, tx, apiID)
	byName := make(map[string]*plans.Authorizer, len(all))
	for i := range all {
		byName[all[i].Name] = &all[i]
	}
	return byName, err
}
