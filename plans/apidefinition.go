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
// RateLimitRules are rate-limit rules by stage name (the tollgate
// extension RulesExtension); nil leaves every stored rule as it is.
type ApiDefinition struct {
	Name             string
	Description      string
	ApiKeySource     string
	Resources        []Resource
	GatewayResponses map[string]GatewayResponse
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
// (sorted by path) and gateway responses; no rate-limit rules.
func StageDefinition(api *RestApi, d *Deployment) *ApiDefinition {
	rs := slices.Clone(d.Resources)
	slices.SortFunc(rs, func(a, b Resource) int { return strings.Compare(a.Path, b.Path) })
	return &ApiDefinition{Name: api.Name, Description: api.Description, ApiKeySource: api.ApiKeySource,
		Resources: rs, GatewayResponses: d.GatewayResponses}
}
