package admin

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/go-chi/chi/v5"

	"tollgate/plans"
)

// area is what a route reads or changes; roles are granted areas
// (docs/operations.md, "Admin credentials and roles").
type area string

const (
	areaAPIs        area = "apis"                  // REST APIs, resources, methods, authorizers, deployments, stages, rules, gateway responses, domain names
	areaPlans       area = "plans"                 // usage plans
	areaKeys        area = "keys"                  // API keys and their plan memberships
	areaUsage       area = "usage"                 // GetUsage, UpdateUsage, the usage ledger
	areaAccount     area = "account"               // the account throttle
	areaCredentials area = "credentials"           // admin credentials
	areaAudit       area = "audit"                 // the audit log
	areaConfig      area = "config"                // the whole configuration (config dump, plan, apply)
	areaByARN       area = "tags"                  // tag routes: the area of the resource the ARN names
	areaUnruled     area = "routes without a rule" // a route missing from routeRules: admin only
)

// rule is what the admin knows of one route: the operation, its area and
// whether it writes. Every route has one (TestEveryRouteHasARule); the
// wrapper (s.authorize) refuses, and s.audited records, from it alone.
type rule struct {
	Op        string // operation named in refusals and the audit log
	Area      area
	Write     bool   // changes something: refused to viewers, recorded in the audit log
	KeyValues bool   // answers API key values: refused to viewers, recorded even as a read
	Public    bool   // served without credentials (probes, metrics, the console's files)
	ImportOp  string // the operation when the query has mode= (an import: audit source import)
	Source    string // audit source of every call of the route ("" is api, or console)
	// Created is, for a route that creates something, the created
	// resource's path: {name} from the route's parameters, else from the
	// response's top-level field of that name ("/restapis/{id}").
	Created string
}

// read, write and the others build rules.
func read(op string, a area) rule  { return rule{Op: op, Area: a} }
func write(op string, a area) rule { return rule{Op: op, Area: a, Write: true} }
func create(op string, a area, created string) rule {
	return rule{Op: op, Area: a, Write: true, Created: created}
}
func public() rule { return rule{Public: true} }

// routeRules has one rule per route, by "METHOD pattern" as chi names it.
// A route added without a rule here is refused to every role but admin at
// run time and fails TestEveryRouteHasARule.
var routeRules = map[string]rule{
	"GET /healthz": public(),
	"GET /readyz":  public(),
	"GET /metrics": public(),
	"GET /console": public(),
	"* /console/*": public(), // every method: a file server

	"POST /restapis":                             {Op: "CreateRestApi", Area: areaAPIs, Write: true, ImportOp: "ImportRestApi", Created: "/restapis/{id}"},
	"GET /restapis":                              read("GetRestApis", areaAPIs),
	"GET /restapis/{restApiId}":                  read("GetRestApi", areaAPIs),
	"PATCH /restapis/{restApiId}":                write("UpdateRestApi", areaAPIs),
	"PUT /restapis/{restApiId}":                  {Op: "PutRestApi", Area: areaAPIs, Write: true, Source: plans.SourceImport},
	"DELETE /restapis/{restApiId}":               write("DeleteRestApi", areaAPIs),
	"GET " + stagePath + "/exports/{exportType}": read("GetExport", areaAPIs),

	"GET /restapis/{restApiId}/resources":                 read("GetResources", areaAPIs),
	"POST /restapis/{restApiId}/resources/{resourceId}":   create("CreateResource", areaAPIs, "/restapis/{restApiId}/resources/{id}"),
	"GET /restapis/{restApiId}/resources/{resourceId}":    read("GetResource", areaAPIs),
	"PATCH /restapis/{restApiId}/resources/{resourceId}":  write("UpdateResource", areaAPIs),
	"DELETE /restapis/{restApiId}/resources/{resourceId}": write("DeleteResource", areaAPIs),

	"PUT " + methodPath:                 write("PutMethod", areaAPIs),
	"GET " + methodPath:                 read("GetMethod", areaAPIs),
	"PATCH " + methodPath:               write("UpdateMethod", areaAPIs),
	"DELETE " + methodPath:              write("DeleteMethod", areaAPIs),
	"PUT " + integrationPath:            write("PutIntegration", areaAPIs),
	"GET " + integrationPath:            read("GetIntegration", areaAPIs),
	"PATCH " + integrationPath:          write("UpdateIntegration", areaAPIs),
	"DELETE " + integrationPath:         write("DeleteIntegration", areaAPIs),
	"PUT " + methodResponsePath:         write("PutMethodResponse", areaAPIs),
	"GET " + methodResponsePath:         read("GetMethodResponse", areaAPIs),
	"PATCH " + methodResponsePath:       write("UpdateMethodResponse", areaAPIs),
	"DELETE " + methodResponsePath:      write("DeleteMethodResponse", areaAPIs),
	"PUT " + integrationResponsePath:    write("PutIntegrationResponse", areaAPIs),
	"GET " + integrationResponsePath:    read("GetIntegrationResponse", areaAPIs),
	"PATCH " + integrationResponsePath:  write("UpdateIntegrationResponse", areaAPIs),
	"DELETE " + integrationResponsePath: write("DeleteIntegrationResponse", areaAPIs),

	"POST /restapis/{restApiId}/authorizers": create("CreateAuthorizer", areaAPIs, "/restapis/{restApiId}/authorizers/{id}"),
	"GET /restapis/{restApiId}/authorizers":  read("GetAuthorizers", areaAPIs),
	"GET " + authorizerPath:                  read("GetAuthorizer", areaAPIs),
	"PATCH " + authorizerPath:                write("UpdateAuthorizer", areaAPIs),
	"DELETE " + authorizerPath:               write("DeleteAuthorizer", areaAPIs),

	"GET /restapis/{restApiId}/gatewayresponses": read("GetGatewayResponses", areaAPIs),
	"PUT " + gatewayResponsePath:                 write("PutGatewayResponse", areaAPIs),
	"GET " + gatewayResponsePath:                 read("GetGatewayResponse", areaAPIs),
	"PATCH " + gatewayResponsePath:               write("UpdateGatewayResponse", areaAPIs),
	"DELETE " + gatewayResponsePath:              write("DeleteGatewayResponse", areaAPIs),

	"POST /restapis/{restApiId}/deployments":                  create("CreateDeployment", areaAPIs, "/restapis/{restApiId}/deployments/{id}"),
	"GET /restapis/{restApiId}/deployments":                   read("GetDeployments", areaAPIs),
	"GET /restapis/{restApiId}/deployments/{deploymentId}":    read("GetDeployment", areaAPIs),
	"DELETE /restapis/{restApiId}/deployments/{deploymentId}": write("DeleteDeployment", areaAPIs),

	"POST /restapis/{restApiId}/stages":   create("CreateStage", areaAPIs, "/restapis/{restApiId}/stages/{stageName}"),
	"GET /restapis/{restApiId}/stages":    read("GetStages", areaAPIs),
	"GET " + stagePath:                    read("GetStage", areaAPIs),
	"PATCH " + stagePath:                  write("UpdateStage", areaAPIs),
	"DELETE " + stagePath:                 write("DeleteStage", areaAPIs),
	"DELETE " + stagePath + "/cache/data": write("FlushStageCache", areaAPIs),

	"POST " + rulesPath:                 create("CreateRateLimitRule", areaAPIs, rulesPath+"/{id}"),
	"GET " + rulesPath:                  read("GetRateLimitRules", areaAPIs),
	"GET " + rulesPath + "/{ruleId}":    read("GetRateLimitRule", areaAPIs),
	"PATCH " + rulesPath + "/{ruleId}":  write("UpdateRateLimitRule", areaAPIs),
	"DELETE " + rulesPath + "/{ruleId}": write("DeleteRateLimitRule", areaAPIs),

	"POST /usageplans":                 create("CreateUsagePlan", areaPlans, "/usageplans/{id}"),
	"GET /usageplans":                  read("GetUsagePlans", areaPlans),
	"GET /usageplans/{usagePlanId}":    read("GetUsagePlan", areaPlans),
	"PATCH /usageplans/{usagePlanId}":  write("UpdateUsagePlan", areaPlans),
	"DELETE /usageplans/{usagePlanId}": write("DeleteUsagePlan", areaPlans),

	"POST /usageplans/{usagePlanId}/keys":           create("CreateUsagePlanKey", areaKeys, "/usageplans/{usagePlanId}/keys/{id}"),
	"GET /usageplans/{usagePlanId}/keys":            read("GetUsagePlanKeys", areaKeys),
	"GET /usageplans/{usagePlanId}/keys/{keyId}":    read("GetUsagePlanKey", areaKeys),
	"DELETE /usageplans/{usagePlanId}/keys/{keyId}": write("DeleteUsagePlanKey", areaKeys),

	"POST /apikeys":                   {Op: "CreateApiKey", Area: areaKeys, Write: true, ImportOp: "ImportApiKeys", Created: "/apikeys/{id}"},
	"GET /apikeys":                    read("GetApiKeys", areaKeys),
	"GET /apikeys/{apiKey}":           read("GetApiKey", areaKeys),
	"PATCH /apikeys/{apiKey}":         write("UpdateApiKey", areaKeys),
	"DELETE /apikeys/{apiKey}":        write("DeleteApiKey", areaKeys),
	"POST /portal/invites":            write("CreatePortalInvite", areaKeys),
	"GET /portal/invites":             read("GetPortalInvites", areaKeys),
	"DELETE /portal/invites/{email}":  write("DeletePortalInvites", areaKeys),
	"GET /portal/accounts":            read("GetPortalAccounts", areaKeys),
	"DELETE /portal/accounts/{email}": write("DeletePortalAccount", areaKeys),
	"* /portal":                       public(), // the developer portal's pages: its own accounts
	"* /portal/*":                     public(),

	"POST /apikeys/{apiKey}/rotate": {Op: "RotateApiKey", Area: areaKeys, Write: true, KeyValues: true,
		Source: plans.SourceRotation},

	"POST /domainnames":                     create("CreateDomainName", areaAPIs, "/domainnames/{domainName}"),
	"GET /domainnames":                      read("GetDomainNames", areaAPIs),
	"GET " + domainPath:                     read("GetDomainName", areaAPIs),
	"PATCH " + domainPath:                   write("UpdateDomainName", areaAPIs),
	"DELETE " + domainPath:                  write("DeleteDomainName", areaAPIs),
	"POST " + mappingPath:                   create("CreateBasePathMapping", areaAPIs, mappingPath+"/{basePath}"),
	"GET " + mappingPath:                    read("GetBasePathMappings", areaAPIs),
	"GET " + mappingPath + "/{basePath}":    read("GetBasePathMapping", areaAPIs),
	"PATCH " + mappingPath + "/{basePath}":  write("UpdateBasePathMapping", areaAPIs),
	"DELETE " + mappingPath + "/{basePath}": write("DeleteBasePathMapping", areaAPIs),

	"GET /usageplans/{usagePlanId}/usage":                        read("GetUsage", areaUsage),
	"GET /usageplans/{usagePlanId}/customers/{customerId}/usage": read("GetCustomerUsage", areaUsage),
	"GET /alerts": read("GetAlerts", areaUsage),
	"PATCH /usageplans/{usagePlanId}/keys/{keyId}/usage": write("UpdateUsage", areaUsage),
	"GET /usageplans/{usagePlanId}/usage/export":         read("ExportUsage", areaUsage),
	"GET /usage/records":                                 read("GetUsageRecords", areaUsage),

	"GET /account":   read("GetAccount", areaAccount),
	"PATCH /account": write("UpdateAccount", areaAccount),

	"PUT /tags/*":    write("TagResource", areaByARN),
	"POST /tags/*":   write("TagResource", areaByARN),
	"GET /tags/*":    read("GetTags", areaByARN),
	"DELETE /tags/*": write("UntagResource", areaByARN),

	"GET /config":        read("GetConfig", areaConfig),
	"POST /config/plan":  read("PlanConfig", areaConfig),
	"POST /config/apply": {Op: "ApplyConfig", Area: areaConfig, Write: true, Source: plans.SourceConfig},
	"GET /audit":         read("GetAudit", areaAudit),
	"GET /audit/export":  read("ExportAudit", areaAudit),

	"POST /credentials":                       create("CreateCredential", areaCredentials, "/credentials/{id}"),
	"GET /credentials":                        read("GetCredentials", areaCredentials),
	"GET /credentials/{credentialId}":         read("GetCredential", areaCredentials),
	"POST /credentials/{credentialId}/rotate": write("RotateCredential", areaCredentials),
	"DELETE /credentials/{credentialId}":      write("DeleteCredential", areaCredentials),
}

// may reports whether role may read (or, with write, change) area.
// Key values are never shown to viewers (mayReadKeyValues).
func may(role plans.Role, a area, write bool) bool {
	switch role {
	case plans.RoleAdmin:
		return true
	case plans.RoleOperator:
		return a != areaCredentials && a != areaUnruled && !(write && a == areaAccount)
	case plans.RoleKeys:
		return a == areaKeys || (!write && a == areaPlans)
	case plans.RoleViewer:
		return !write && a != areaCredentials && a != areaUnruled
	}
	return false
}

// mayReadKeyValues reports whether role may see API key values.
func mayReadKeyValues(role plans.Role) bool { return role != plans.RoleViewer }

// paramPattern matches a route parameter ("{restApiId}").
var paramPattern = regexp.MustCompile(`\{[^}]+\}`)

// ruleKey is a route's key in routeRules.
func ruleKey(method, pattern string) string { return method + " " + pattern }

// missingRuleHelp tells whoever added a route what to add.
func missingRuleHelp(method, pattern string) string {
	return fmt.Sprintf("route %s %s has no rule in routeRules (admin/roles.go): add "+
		"%q: read(\"<Operation>\", <area>) for a read, or write(\"<Operation>\", <area>) / "+
		"create(\"<Operation>\", <area>, \"<created path>\") for a change, with the area it reads or changes "+
		"(areaAPIs, areaPlans, areaKeys, areaUsage, areaAccount, areaCredentials, areaAudit, areaConfig); "+
		"then add its expectation for every role in TestEveryRouteAgainstEveryRole (admin/roles_test.go)",
		method, pattern, ruleKey(method, pattern))
}

// ruleOf returns the rule of a route: "METHOD pattern", else "* pattern".
func ruleOf(method, pattern string) (rule, bool) {
	if ru, ok := routeRules[ruleKey(method, pattern)]; ok {
		return ru, true
	}
	ru, ok := routeRules[ruleKey("*", pattern)]
	return ru, ok
}

// routeOf finds the rule of the route r will be served by, and the
// route's parameters; ok is false when no route matches (the router
// answers 400 unsupported).
func (s *Server) routeOf(r *http.Request) (pattern string, ru rule, params *chi.Context, ok bool) {
	path := r.URL.RawPath
	if path == "" {
		path = r.URL.Path
	}
	params = chi.NewRouteContext()
	pattern = s.mux.Find(params, r.Method, path)
	if pattern == "" {
		return "", rule{}, nil, false
	}
	ru, found := ruleOf(r.Method, pattern)
	if !found {
		s.log.Error("admin: " + missingRuleHelp(r.Method, pattern))
		// Fail closed: an unknown route is an admin-only change.
		ru = rule{Op: r.Method + " " + pattern, Area: areaUnruled, Write: true}
	}
	return pattern, ru, params, true
}

// areaOfARN is the area of the resource a tag route's ARN names (the
// tag handlers refuse other ARNs with 400).
func areaOfARN(arn string) area {
	seg := splitPath(arnPath(arn))
	switch {
	case len(seg) > 0 && seg[0] == "apikeys":
		return areaKeys
	case len(seg) > 0 && seg[0] == "usageplans":
		return areaPlans
	}
	return areaAPIs
}

// arnPath returns the resource path of an ARN (percent-encoded or not):
// "/restapis/a1" of "arn:aws:apigateway:us-east-1::/restapis/a1".
func arnPath(raw string) string {
	_, path, _ := splitARN(raw)
	return path
}

// splitARN returns the region ("" when the ARN has none) and the resource
// path of an ARN, percent-encoded or not; ok is false for no ARN.
func splitARN(raw string) (region, path string, ok bool) {
	arn := raw
	if u, err := url.PathUnescape(raw); err == nil {
		arn = u
	}
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 {
		return "", "", false
	}
	return parts[3], parts[5], true
}
