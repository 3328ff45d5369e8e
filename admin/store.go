package admin

import (
	"context"

	"tollgate/plans"
)

// Page selects one page of a list (see plans.Page). It lives in plans so
// that the store adapter need not import admin.
type Page = plans.Page

// Store is what the admin API needs from the source of truth
// (plans/postgres.DB): one small interface per resource.
//
// Every method runs in one transaction. Errors are *plans.Error of kind
// KindInvalid (400, naming the field), KindNotFound, KindConflict or
// KindUnavailable (database down); anything else is a bug. A write that
// changes what the data plane sees validates the resulting config in its
// transaction and records a plans.Change. Update methods load the record,
// let fn change it (fn returns a *plans.Error for a bad patch), validate
// and store it. List methods return one page, ordered by id, and the
// position of the next ("" when no more remain).
type Store interface {
	RestApiStore
	ResourceStore
	MethodStore
	AuthorizerStore
	IntegrationStore
	GatewayResponseStore
	DeploymentStore
	StageStore
	UsagePlanStore
	AlertStore
	ApiKeyStore
	UsagePlanKeyStore
	AccountStore
	RuleStore
	DomainStore
}

// RestApiStore keeps REST APIs.
type RestApiStore interface {
	CreateRestApi(ctx context.Context, api *plans.RestApi) error // fills ID, CreatedDate; creates the root resource
	GetRestApi(ctx context.Context, id string) (*plans.RestApi, error)
	ListRestApis(ctx context.Context, p Page) ([]plans.RestApi, string, error)
	UpdateRestApi(ctx context.Context, id string, fn func(*plans.RestApi) error) (*plans.RestApi, error)
	DeleteRestApi(ctx context.Context, id string) error // 400 while a plan covers one of its stages
	ApiImporter
}

// ResourceStore keeps an API's resources (its paths).
type ResourceStore interface {
	ListResources(ctx context.Context, apiID string, p Page) ([]plans.Resource, string, error) // with resourceMethods
	GetResource(ctx context.Context, apiID, resourceID string) (*plans.Resource, error)
	CreateResource(ctx context.Context, apiID, parentID, pathPart string) (*plans.Resource, error) // 409 on a sibling with the same pathPart
	UpdateResource(ctx context.Context, apiID, resourceID string, fn func(*plans.Resource) error) (*plans.Resource, error)
	DeleteResource(ctx context.Context, apiID, resourceID string) error // with its subtree; the root is 400
}

// AuthorizerStore keeps an API's authorizers: CreateAuthorizer fills the
// ID; DeleteAuthorizer is 409 while a method uses the authorizer.
type AuthorizerStore interface {
	CreateAuthorizer(ctx context.Context, apiID string, a *plans.Authorizer) error
	GetAuthorizer(ctx context.Context, apiID, id string) (*plans.Authorizer, error)
	Authorizers(ctx context.Context, apiID string) ([]plans.Authorizer, error)
	UpdateAuthorizer(ctx context.Context, apiID, id string, fn func(*plans.Authorizer) error) (*plans.Authorizer, error)
	DeleteAuthorizer(ctx context.Context, apiID, id string) error
}

// MethodStore keeps a resource's methods. PutMethod and UpdateMethod are
// 400 for an authorizerId that is not one of the API's, of the matching
// type.
type MethodStore interface {
	PutMethod(ctx context.Context, apiID, resourceID string, m *plans.Method) error // 409 when the method exists
	GetMethod(ctx context.Context, apiID, resourceID, httpMethod string) (*plans.Method, error)
	UpdateMethod(ctx context.Context, apiID, resourceID, httpMethod string, fn func(*plans.Method) error) (*plans.Method, error)
	DeleteMethod(ctx context.Context, apiID, resourceID, httpMethod string) error
}

// IntegrationStore keeps a method's integration.
type IntegrationStore interface {
	PutIntegration(ctx context.Context, apiID, resourceID, httpMethod string, in *plans.Integration) error
	GetIntegration(ctx context.Context, apiID, resourceID, httpMethod string) (*plans.Integration, error)
	UpdateIntegration(ctx context.Context, apiID, resourceID, httpMethod string, fn func(*plans.Integration) error) (*plans.Integration, error)
	DeleteIntegration(ctx context.Context, apiID, resourceID, httpMethod string) error
}

// GatewayResponseStore keeps an API's gateway responses, by type. They
// reach traffic with the next deployment.
type GatewayResponseStore interface {
	PutGatewayResponse(ctx context.Context, apiID string, gr *plans.GatewayResponse) error // replaces any of its type
	GatewayResponses(ctx context.Context, apiID string) (map[string]plans.GatewayResponse, error)
	DeleteGatewayResponse(ctx context.Context, apiID, responseType string) error // 404 when none was put
	// UpdateGatewayResponse patches one, from an empty one when none was put.
	UpdateGatewayResponse(ctx context.Context, apiID, responseType string, fn func(*plans.GatewayResponse) error) (*plans.GatewayResponse, error)
}

// DeploymentStore keeps an API's deployments.
type DeploymentStore interface {
	// CreateDeployment copies the API's current resources into a new
	// deployment and, when stageName is not empty, creates that stage or
	// repoints it. A method without an integration is 400, as AWS.
	CreateDeployment(ctx context.Context, apiID string, d *plans.Deployment, stageName, stageDescription string, variables map[string]string) error
	GetDeployment(ctx context.Context, apiID, deploymentID string) (*plans.Deployment, error)
	ListDeployments(ctx context.Context, apiID string, p Page) ([]plans.Deployment, string, error)
	DeleteDeployment(ctx context.Context, apiID, deploymentID string) error // 400 while a stage points to it
}

// StageStore keeps an API's stages.
type StageStore interface {
	CreateStage(ctx context.Context, apiID string, s *plans.Stage) error // 409 on a duplicate name; the deployment must exist
	GetStage(ctx context.Context, apiID, name string) (*plans.Stage, error)
	ListStages(ctx context.Context, apiID string) ([]plans.Stage, error) // AWS returns stages as {"item": [...]} without paging
	UpdateStage(ctx context.Context, apiID, name string, fn func(*plans.Stage) error) (*plans.Stage, error)
	DeleteStage(ctx context.Context, apiID, name string) error // 400 while a plan covers it
}

// UsagePlanStore keeps usage plans.
type UsagePlanStore interface {
	CreateUsagePlan(ctx context.Context, p *plans.UsagePlan) error // api stages must exist (400 naming apiStages)
	GetUsagePlan(ctx context.Context, id string) (*plans.UsagePlan, error)
	ListUsagePlans(ctx context.Context, keyID string, p Page) ([]plans.UsagePlan, string, error) // keyID "" for all
	UpdateUsagePlan(ctx context.Context, id string, fn func(*plans.UsagePlan) error) (*plans.UsagePlan, error)
	DeleteUsagePlan(ctx context.Context, id string) error
}

// AlertStore keeps the quota alert thresholds crossed (GET /alerts).
type AlertStore interface {
	// Alerts lists them newest first, with their webhooks' state.
	Alerts(ctx context.Context, q plans.AlertQuery) ([]plans.QuotaAlert, string, error)
}

// ApiKeyStore keeps API keys: the SHA-256 (or HMAC) hash of a value,
// never the value.
type ApiKeyStore interface {
	CreateApiKey(ctx context.Context, k *plans.ApiKey, hash string) error // fills ID and dates; 409 when the hash exists
	GetApiKey(ctx context.Context, id string) (*plans.ApiKey, error)
	ListApiKeys(ctx context.Context, nameQuery, customerID string, p Page) ([]plans.ApiKey, string, error) // nameQuery is a prefix
	UpdateApiKey(ctx context.Context, id string, fn func(*plans.ApiKey) error) (*plans.ApiKey, error)
	DeleteApiKey(ctx context.Context, id string) error
	// RotateApiKey gives a key a new value (rot.NewHash), keeping the
	// previous one working for rot.Overlap; a rot.TokenHash seen on the
	// key within plans.RotationReplayWindow changes nothing and returns
	// that rotation (Replayed).
	RotateApiKey(ctx context.Context, rot plans.KeyRotation) (plans.KeyRotation, error)
	// KeyCalendars returns the own quota calendar of each of ids that has
	// one (plans.KeyCalendar): the periods usage reads count the key in.
	KeyCalendars(ctx context.Context, ids []string) (map[string]plans.KeyCalendar, error)
	KeyImporter
}

// UsagePlanKeyStore keeps which keys are in which plans.
type UsagePlanKeyStore interface {
	// CreateUsagePlanKey is 409 when the key is in the plan already, or in
	// another plan covering one of the same (api, stage) pairs.
	CreateUsagePlanKey(ctx context.Context, planID, keyID string) (*plans.UsagePlanKey, error)
	GetUsagePlanKey(ctx context.Context, planID, keyID string) (*plans.UsagePlanKey, error)
	ListUsagePlanKeys(ctx context.Context, planID, nameQuery string, p Page) ([]plans.UsagePlanKey, string, error)
	DeleteUsagePlanKey(ctx context.Context, planID, keyID string) error
}

// AccountStore keeps the account's settings (its throttle).
type AccountStore interface {
	GetAccount(ctx context.Context) (*plans.Account, error)
	UpdateAccount(ctx context.Context, fn func(*plans.Account) error) (*plans.Account, error)
}
