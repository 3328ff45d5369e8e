package plans

import (
	"slices"
	"strings"
)

// ApiDefinition is a whole API as an OpenAPI document describes it: what
// ImportRestApi and PutRestApi store and GetExport writes. Resources hold
// every resource by path ("/" first, each parent before its children),
// with methods, integrations and responses; their ids are empty when the
// definition comes from a document. GatewayResponses are by type.
//
// Authorizers are the API's authorizers, sorted by name; a method names
// its authorizer by that name in AuthorizerID (the store gives ids).
//
// RateLimitRules are rate-limit rules by stage name (the tollgate
// extension RulesExtension); nil leaves every stored rule as it is.
type ApiDefinition struct {
	Name             string
	Description      string
	ApiKeySource     string
	Resources        []Resource
	GatewayResponses map[string]GatewayResponse
	Authorizers      []Authorizer
	RateLimitRules   map[string][]RateLimitRule
}

// RulesExtension is the OpenAPI extension, at the document's root, that
// carries an API's rate-limit rules by stage name:
// {"prod": [{"name": ..., "algorithm": ..., ...}]} (docs/rules.md).
const RulesExtension = "x-tollgate-rate-limit-rules"

// Modes of PutRestApi: overwrite replaces the API's resources, methods
// and gateway responses with the document's; merge adds the document's
// and replaces the methods and gateway responses it names, keeping the
// rest. Source: AWS API Gateway API reference, PutRestApi.
const (
	PutModeOverwrite = "overwrite"
	PutModeMerge     = "merge"
)

// StageDefinition is the definition a stage serves, as exports write it:
// api's name, description and key source with deployment d's resources
// (sorted by path), gateway responses and authorizers; no rate-limit
// rules.
func StageDefinition(api *RestApi, d *Deployment) *ApiDefinition {
	return Definition(api, d.Resources, d.GatewayResponses, d.Authorizers)
}

// Definition is the definition of api with the resources, gateway
// responses and authorizers given as the store holds them: resources
// sorted by path, authorizers by name, methods naming their authorizer.
func Definition(api *RestApi, rs []Resource, grs map[string]GatewayResponse, as []Authorizer) *ApiDefinition {
	rs = NameAuthorizers(rs, as)
	slices.SortFunc(rs, func(a, b Resource) int { return strings.Compare(a.Path, b.Path) })
	as = slices.Clone(as)
	SortAuthorizers(as)
	return &ApiDefinition{Name: api.Name, Description: api.Description, ApiKeySource: api.ApiKeySource,
		Resources: rs, GatewayResponses: grs, Authorizers: as}
}
