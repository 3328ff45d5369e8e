package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"tollgate/plans"
)

// AWS's not-found messages, by resource.
const (
	msgNoAPI         = "Invalid API identifier specified"
	msgNoPlan        = "Invalid Usage Plan ID specified"
	msgNoKey         = "Invalid API Key identifier specified"
	msgNoStage       = "Invalid Stage identifier specified"
	msgNoResource    = "Invalid Resource identifier specified"
	msgNoMethod      = "Invalid Method identifier specified"
	msgNoIntegration = "No integration defined for method"
	msgNoDeployment  = "Invalid Deployment identifier specified"
)

// msgNameTooLong is the message of a name past a btree index row (54000).
const msgNameTooLong = "name is too long to index: use fewer or shorter (ASCII) characters"

// notFound turns pgx.ErrNoRows into a KindNotFound error with msg and
// returns other errors unchanged (translate handles them later).
func notFound(err error, msg string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return plans.NotFound("%s", msg)
	}
	return err
}

// conflicts names the unique constraints a caller can violate, with the
// message of the 409.
var conflicts = map[string]string{
	"resources_sibling_key":            "Another resource with the same parent already has this name",
	"stages_pkey":                      "Stage already exists",
	"api_keys_key_hash_key":            "API Key already exists",
	"usage_plan_keys_pkey":             "Usage Plan Key already exists",
	"key_stage_claims_pkey":            "An API key can be in only one usage plan per API stage",
	"resources_one_root":               "The API already has a root resource",
	"rest_apis_pkey":                   "Identifier collision, please retry",
	"usage_plans_pkey":                 "Identifier collision, please retry",
	"api_keys_pkey":                    "Identifier collision, please retry",
	"deployments_pkey":                 "Identifier collision, please retry",
	"resources_pkey":                   "Identifier collision, please retry",
	"config_changes_pkey":              "Concurrent configuration change, please retry",
	"usage_plan_stages_pkey":           "api stage is listed twice",
	"methods_pkey":                     "Method already exists for this resource",
	"rate_limit_rules_name_key":        "The stage already has a rate-limit rule of this name",
	"rate_limit_rules_pkey":            "Identifier collision, please retry",
	"domain_names_pkey":                "The domain name you provided already exists",
	"base_path_mappings_pkey":          "Base path already exists for this domain name",
	"admin_credentials_name_key":       "A credential of this name exists",
	"admin_credentials_access_key_key": "Identifier collision, please retry",
	"admin_credentials_token_hash_key": "Identifier collision, please retry",
	"admin_credentials_pkey":           "Identifier collision, please retry",
	"portal_accounts_email_key":        "An account with this email exists",
	"api_key_rotations_pkey":           "A rotation with this idempotency token is in progress, please retry",
	"authorizers_name_key":             "An authorizer of this name exists",
	"authorizers_pkey":                 "Identifier collision, please retry",
}

// reference is a foreign key a caller can break: the field it names, the
// message when the referenced row is missing (insert or update) and the
// message when the row is still referenced (delete).
type reference struct {
	field, missing, inUse string
}

var references = map[string]reference{
	"stages_deployment_fkey": {"deploymentId", msgNoDeployment,
		"Active stages pointing to this deployment must be moved or deleted"},
	"usage_plan_stages_stage_fkey": {"apiStages", "API Stage not found",
		"The stage is included in a usage plan; remove it from the plan first"},
	"base_path_mappings_stage_fkey": {"stage", "Invalid stage identifier specified",
		"The stage is mapped to a custom domain name; delete its base path mapping first"},
	"base_path_mappings_api_fkey": {"restApiId", "Invalid REST API identifier specified",
		"The API is mapped to a custom domain name; delete its base path mappings first"},
	"methods_authorizer_fkey": {"authorizerId", "Invalid authorizer ID specified",
		"A method uses the authorizer; change its authorizationType first"},
}

// deleteError marks an error of a DELETE statement (see deleting).
type deleteError struct{ error }

func (e deleteError) Unwrap() error { return e.error }

// deleting marks err as raised by a DELETE: a foreign key violation there
// means the row is still referenced, where an INSERT or UPDATE raising the
// same SQLSTATE means the referenced row is missing. Only the statement
// tells them apart; the server's message, which lc_messages translates,
// is never read.
func deleting(err error) error {
	if err == nil {
		return nil
	}
	return deleteError{err}
}

// translate maps a driver error to a *plans.Error, once, by SQLSTATE,
// constraint name and the kind of statement (deleting), never by the
// server's message text: *plans.Error passes through; pgx.ErrNoRows →
// KindNotFound; SQLSTATE 23505 → KindConflict; 23503 → KindInvalid naming
// the reference; 23514 and 22xxx → KindInvalid; connection failures,
// timeouts, cancellations and server shutdowns → KindUnavailable
// ("database unavailable"). Anything else is returned wrapped (an internal
// error).
func translate(err error) error {
	if err == nil {
		return nil
	}
	var pe *plans.Error
	if errors.As(err, &pe) {
		return pe
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return plans.NotFound("Not found")
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return translatePg(pg, errors.As(err, new(deleteError)), err)
	}
	if unavailable(err) {
		return plans.Unavailable(err, "database unavailable")
	}
	return fmt.Errorf("postgres: %w", err)
}

func translatePg(pg *pgconn.PgError, inDelete bool, err error) error {
	switch {
	case pg.Code == pgerrcode.UniqueViolation:
		msg, ok := conflicts[pg.ConstraintName]
		if !ok {
			msg = "Conflict"
		}
		return &plans.Error{Kind: plans.KindConflict, Message: msg, Err: err}
	case pg.Code == pgerrcode.ForeignKeyViolation:
		ref, ok := references[pg.ConstraintName]
		if !ok {
			ref = reference{pg.ConstraintName, "Invalid reference", "The resource is still referenced"}
		}
		msg := ref.missing
		if inDelete {
			msg = ref.inUse
		}
		return &plans.Error{Kind: plans.KindInvalid, Field: ref.field, Message: msg, Err: err}
	case pg.Code == pgerrcode.ProgramLimitExceeded:
		// A 1024-character name of 4-byte characters is past a btree index
		// row's 2704 bytes: bad input, not a server fault.
		return &plans.Error{Kind: plans.KindInvalid, Field: "name", Message: msgNameTooLong, Err: err}
	case pg.Code == pgerrcode.CheckViolation, pgerrcode.IsDataException(pg.Code):
		return &plans.Error{Kind: plans.KindInvalid, Field: pg.ConstraintName, Message: "Invalid value", Err: err}
	case pgerrcode.IsConnectionException(pg.Code), pgerrcode.IsInsufficientResources(pg.Code),
		pgerrcode.IsOperatorIntervention(pg.Code), retryableCode(pg.Code):
		return plans.Unavailable(err, "database unavailable")
	}
	return fmt.Errorf("postgres: %w", err)
}

func unavailable(err error) bool {
	var ne net.Error
	var ce *pgconn.ConnectError
	return pgconn.SafeToRetry(err) || pgconn.Timeout(err) || errors.As(err, &ne) ||
		errors.As(err, &ce) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Canceled) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, pgconn.ErrConnClosed) // a pooled connection the server or network dropped
}
