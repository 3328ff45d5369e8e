package postgres

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/plans"
)

type deploymentRow struct {
	ID               string                           `db:"id"`
	Description      string                           `db:"description"`
	Resources        []plans.Resource                 `db:"resources"`
	GatewayResponses map[string]plans.GatewayResponse `db:"gateway_responses"`
	Authorizers      []plans.Authorizer               `db:"authorizers"`
	CreatedAt        time.Time                        `db:"created_at"`
}

func (r deploymentRow) deployment() plans.Deployment {
	return plans.Deployment{ID: r.ID, Description: r.Description, CreatedDate: epoch(r.CreatedAt), Resources: r.Resources,
		GatewayResponses: nilIfEmptyMap(r.GatewayResponses), Authorizers: r.Authorizers}
}

// CreateDeployment copies the API's current resources, methods and
// integrations (sorted by path), its gateway responses and authorizers into a new deployment (id of 6
// characters; ID and CreatedDate filled in d). When stageName is not empty
// it creates that stage (with stageDescription and variables) or points
// the existing stage at the new deployment (variables are merged into the
// stage's), and records a snapshot change naming the stage; a deployment
// no stage points to changes nothing the data plane sees and records no
// change. Errors: KindNotFound (API), KindInvalid when the API has no
// methods or a method has no integration ("No integration defined for
// method"), or naming a stage field.
func (db *DB) CreateDeployment(ctx context.Context, apiID string, d *plans.Deployment, stageName, stageDescription string, variables map[string]string) error {
	if err := plans.ValidateDescription("description", d.Description); err != nil {
		return err
	}
	if stageName != "" {
		if err := plans.ValidateStageName(stageName); err != nil {
			return err
		}
	}
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		if _, err := getAPI(ctx, tx, apiID, true); err != nil {
			return err
		}
		rs, err := deployableResources(ctx, tx, apiID)
		if err != nil {
			return err
		}
		grs, err := loadGatewayResponses(ctx, tx, apiID)
		if err != nil {
			return err
		}
		as, err := loadAuthorizers(ctx, tx, apiID)
		if err != nil {
			return err
		}
		d.ID, d.CreatedDate, d.Resources, d.GatewayResponses, d.Authorizers = plans.NewID(plans.ShortIDLen), epoch(now), rs, grs, as
		if _, err := tx.Exec(ctx, `INSERT INTO deployments (api_id, id, description, resources, gateway_responses, authorizers, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, apiID, d.ID, d.Description, rs, grs, as, now); err != nil {
			return err
		}
		if stageName == "" {
			return nil
		}
		if err := deployToStage(ctx, tx, now, apiID, d.ID, stageName, stageDescription, variables); err != nil {
			return err
		}
		return record(ctx, tx, now, &change{snapshot: true, stages: []string{stageRef(apiID, stageName)}})
	})
}

// deployableResources loads every resource of the API with its methods,
// sorted by path, and checks that there is at least one method and that
// every method has an integration.
func deployableResources(ctx context.Context, tx pgx.Tx, apiID string) ([]plans.Resource, error) {
	rows, _ := tx.Query(ctx, `SELECT `+resourceCols+` FROM resources WHERE api_id = $1 ORDER BY path`, apiID)
	rs, err := collectResources(ctx, tx, apiID, rows)
	if err != nil {
		return nil, err
	}
	methods := 0
	for _, r := range rs {
		for name, m := range r.ResourceMethods {
			if m.MethodIntegration == nil {
				return nil, plans.Invalid("resourceMethods", "%s (%s %s)", msgNoIntegration, name, r.Path)
			}
			methods++
		}
	}
	if methods == 0 {
		return nil, plans.Invalid("resourceMethods", "The REST API doesn't contain any methods")
	}
	return rs, nil
}

// deployToStage points stage name at deploymentID, creating the stage when
// it does not exist.
func deployToStage(ctx context.Context, tx pgx.Tx, now time.Time, apiID, deploymentID, name, description string, variables map[string]string) error {
	s, err := getStage(ctx, tx, apiID, name, true)
	if plans.ErrorKind(err) == plans.KindNotFound {
		s = &plans.Stage{StageName: name, DeploymentID: deploymentID, Description: description,
			Variables: variables, CreatedDate: epoch(now)}
		return insertStage(ctx, tx, now, apiID, s)
	}
	if err != nil {
		return err
	}
	s.DeploymentID = deploymentID
	if len(variables) > 0 && s.Variables == nil {
		s.Variables = map[string]string{}
	}
	for k, v := range variables {
		s.Variables[k] = v
	}
	return saveStage(ctx, tx, now, apiID, s, s.MethodSettings)
}

// GetDeployment returns a deployment with its copy of the resources.
// Errors: KindNotFound ("Invalid API identifier specified", "Invalid
// Deployment identifier specified").
func (db *DB) GetDeployment(ctx context.Context, apiID, deploymentID string) (*plans.Deployment, error) {
	var d plans.Deployment
	err := db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		if _, err := getAPI(ctx, tx, apiID, false); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `SELECT id, description, resources, gateway_responses, authorizers, created_at FROM deployments
			WHERE api_id = $1 AND id = $2`, apiID, deploymentID)
		r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[deploymentRow])
		d = r.deployment()
		return notFound(err, msgNoDeployment)
	})
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// ListDeployments returns one page of the API's deployments ordered by id,
// without their resource copies. Errors: KindNotFound, KindInvalid
// ("position").
func (db *DB) ListDeployments(ctx context.Context, apiID string, p plans.Page) ([]plans.Deployment, string, error) {
	after, limit, err := pageArgs(p)
	if err != nil {
		return nil, "", err
	}
	var out []plans.Deployment
	err = db.read(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		if _, err := getAPI(ctx, tx, apiID, false); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `SELECT id, description, '[]'::jsonb AS resources, '{}'::jsonb AS gateway_responses, '[]'::jsonb AS authorizers, created_at FROM deployments
			WHERE api_id = $1 AND id > $2 ORDER BY id LIMIT $3`, apiID, after, limit+1)
		rs, err := pgx.CollectRows(rows, pgx.RowToStructByName[deploymentRow])
		for _, r := range rs {
			d := r.deployment()
			d.Resources = nil
			out = append(out, d)
		}
		return err
	})
	if err != nil {
		return nil, "", err
	}
	out, next := cut(out, limit, func(d plans.Deployment) string { return d.ID })
	return out, next, nil
}

// DeleteDeployment deletes a deployment no stage points to. Errors:
// KindNotFound; KindInvalid ("deploymentId") naming the stages that point
// to it.
func (db *DB) DeleteDeployment(ctx context.Context, apiID, deploymentID string) error {
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, _ time.Time) error {
		if _, err := getAPI(ctx, tx, apiID, false); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `SELECT name FROM stages WHERE api_id = $1 AND deployment_id = $2 ORDER BY name`, apiID, deploymentID)
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		if len(names) > 0 {
			return plans.Invalid("deploymentId", "Active stages pointing to this deployment must be moved or deleted: %s",
				strings.Join(slices.Compact(names), ", "))
		}
		tag, err := tx.Exec(ctx, `DELETE FROM deployments WHERE api_id = $1 AND id = $2`, apiID, deploymentID)
		if err == nil && tag.RowsAffected() == 0 {
			return plans.NotFound(msgNoDeployment)
		}
		return deleting(err)
	})
}
