// Package plans is tollgate's domain: the nouns of the Amazon API Gateway
// resource model that tollgate implements (RestApi, Resource, Method,
// Integration, Deployment, Stage, MethodSetting, UsagePlan, ApiKey, Throttle,
// Quota), their validation rules, the domain error type, and the Snapshot the
// gateway runs on.
//
// It imports only the standard library. Storage (plans/postgres), the admin
// HTTP API (admin), the push protocol (push) and the data plane (gateway) are
// adapters around it.
//
// JSON field names follow the AWS API Gateway REST management API
// (2015-07-09); timestamps marshal as epoch seconds, as AWS does.
package plans
