package admin

import (
	"context"

	"tollgate/plans"
)

// Page selects one page of a list (see plans.Page). It lives in plans so
// that the store adapter need not import admin.
type Page = plans.Page

// Store is what the admin API needs from the source of truth (implemented
// by plans/postgres). Every method runs in one transaction. Errors are
// *plans.Error of kind KindInvalid (400, naming the field), KindNotFound,
// KindConflict or KindUnavailable (database down); anything else is a bug.
//
// Every write that changes what the data plane sees validates the resulting
// config inside its transaction, increments the config version and records
// a plans.Change for it (see Changes). Update methods load the current
// record, call fn to modify it (fn returns a *plans.Error for bad
// patches), validate the result and store it.
//
// List methods return one page and the position of the next ("" when no
// more remain), ordered by id.
type Store interface {
	CreateRestApi(ctx context.Context, api *plans.RestApi) error // fills ID, CreatedDate; creates the root resource
	GetRestApi(ctx context.Context, id string) (*plans.RestApi, error)
	ListRestApis(ctx context.Context, p Page) ([]plans.RestApi, string, error)
	UpdateRestApi(ctx context.Context, id string, fn func(*plans.RestApi) error) (*plans.RestApi, error)
	DeleteRestApi(ctx context.Context, id string) error // 400 while a plan covers one of its stages
	ApiImporter

	ListResources(ctx context.Context, apiID string, p Page) ([]plans.Resource, string, error) // with resourceMethods
	GetResource(ctx context.Context, apiID, resourceID string) (*plans.Resource, error)
	CreateResource(ctx context.Context, apiID, parentID, pathPart string) (*plans.Resource, error) // 409 on a sibling with the same pathPart
	UpdateResource(ctx context.Context, apiID, resourceID string, fn func(*plans.Resource) error) (*plans.Resource, error)
	DeleteResource(ctx context.Context, apiID, resourceID string) error // with its subtree; the root is 400

	PutMethod(ctx context.Context, apiID, resourceID string, m *plans.Method) error // 409 when the method exists
	GetMethod(ctx context.Context, apiID, resourceID, httpMethod string) (*plans.Method, error)
	UpdateMethod(ctx context.Context, apiID, resourceID, httpMethod string, fn func(*plans.Method) error) (*plans.Method, error)
	DeleteMethod(ctx context.Context, apiID, resourceID, httpMethod string) error

	PutIntegration(ctx context.Context, apiID, resourceID, httpMethod string, in *plans.Integration) error
	GetIntegration(ctx context.Context, apiID, resourceID, httpMethod string) (*plans.Integration, error)
	UpdateIntegration(ctx context.Context, apiID, resourceID, httpMethod string, fn func(*plans.Integration) error) (*plans.Integration, error)
	DeleteIntegration(ctx context.Context, apiID, resourceID, httpMethod string) error

	// PutGatewayResponse stores the API's response of gr.ResponseType,
	// replacing any; GatewayResponses returns those put, by type;
	// DeleteGatewayResponse is 404 when none was put; UpdateGatewayResponse
	// patches one (from an empty one when none was put). They reach
	// traffic with the next deployment.
	PutGatewayResponse(ctx context.Context, apiID string, gr *plans.GatewayResponse) error
	GatewayResponses(ctx context.Context, apiID string) (map[string]plans.GatewayResponse, error)
	DeleteGatewayResponse(ctx context.Context, apiID, responseType string) error
	UpdateGatewayResponse(ctx context.Context, apiID, responseType string, fn func(*plans.GatewayResponse) error) (*plans.GatewayResponse, error)

	// CreateDeployment copies the API's current resources into a new
	// deployment; when stageName is not empty it creates that stage
	// (with stageDescription and variables) or repoints it. A method
	// without an integration is 400, as AWS ("No integration defined for method").
	CreateDeployment(ctx context.Context, apiID string, d *plans.Deployment, stageName, stageDescription string, variables map[string]string) error
	GetDeployment(ctx context.Context, apiID, deploymentID string) (*plans.Deployment, error)
	ListDeployments(ctx context.Context, apiID string, p Page) ([]plans.Deployment, string, error)
	DeleteDeployment(ctx context.Context, apiID, deploymentID string) error // 400 while a stage points to it

	CreateStage(ctx context.Context, apiID string, s *plans.Stage) error // 409 on a duplicate name; the deployment must exist
	GetStage(ctx context.Context, apiID, name string) (*plans.Stage, error)
	ListStages(ctx context.Context, apiID string) ([]plans.Stage, error) // AWS returns stages as {"item": [...]} without paging
	UpdateStage(ctx context.Context, apiID, name string, fn func(*plans.Stage) error) (*plans.Stage, error)
	DeleteStage(ctx context.Context, apiID, name string) error // 400 while a plan covers it

	CreateUsagePlan(ctx context.Context, p *plans.UsagePlan) error // api stages must exist (400 naming apiStages)
	GetUsagePlan(ctx context.Context, id string) (*plans.UsagePlan, error)
	ListUsagePlans(ctx context.Context, keyID string, p Page) ([]plans.UsagePlan, string, error) // keyID "" for all
	// Alerts lists the quota alert thresholds crossed, newest first, with
	// their webhooks' state (GET /alerts).
	Alerts(ctx context.Context, q plans.AlertQuery) ([]plans.QuotaAlert, string, error)
	UpdateUsagePlan(ctx context.Context, id string, fn func(*plans.UsagePlan) error) (*plans.UsagePlan, error)
	DeleteUsagePlan(ctx context.Context, id string) error

	// CreateApiKey stores k (ID, dates filled) with the SHA-256 (or HMAC)
	// hash of its value; the value itself is never stored. 409 when the
	// hash exists.
	CreateApiKey(ctx context.Context, k *plans.ApiKey, hash string) error
	GetApiKey(ctx context.Context, id string) (*plans.ApiKey, error)
	ListApiKeys(ctx context.Context, nameQuery, customerID string, p Page) ([]plans.ApiKey, string, error) // nameQuery is a prefix
	UpdateApiKey(ctx context.Context, id string, fn func(*plans.ApiKey) error) (*plans.ApiKey, error)
	DeleteApiKey(ctx context.Context, id string) error
	// RotateApiKey gives a key a new value (rot.NewHash), keeping the
	// previous one working for rot.Overlap; with a rot.TokenHash seen on
	// the key within plans.RotationReplayWindow it changes nothing and
	// returns that rotation (Replayed).
	RotateApiKey(ctx context.Context, rot plans.KeyRotation) (plans.KeyRotation, error)
	KeyImporter

	// CreateUsagePlanKey associates a key with a plan; 409 when the key is
	// in the plan already or in another plan covering one of the same
	// (api, stage) pairs (a database constraint, also on UpdateUsagePlan's
	// add /apiStages).
	CreateUsagePlanKey(ctx context.Context, planID, keyID string) (*plans.UsagePlanKey, error)
	GetUsagePlanKey(ctx context.Context, planID, keyID string) (*plans.UsagePlanKey, error)
	ListUsagePlanKeys(ctx context.Context, planID, nameQuery string, p Page) ([]plans.UsagePlanKey, string, error)
	DeleteUsagePlanKey(ctx context.Context, planID, keyID string) error

	GetAccount(ctx context.Context) (*plans.Account, error)
	UpdateAccount(ctx context.Context, fn func(*plans.Account) error) (*plans.Account, error)

	RuleStore
	DomainStore
}
