package plans

// ApiDefinition is a whole API as an OpenAPI document describes it: what
// ImportRestApi and PutRestApi store and GetExport writes. Resources hold
// every resource by path ("/" first, each parent before its children),
// with methods, integrations and responses; their ids are empty when the
// definition comes from a document. GatewayResponses are by type.
type ApiDefinition struct {
	Name             string
	Description      string
	ApiKeySource     string
	Resources        []Resource
	GatewayResponses map[string]GatewayResponse
}

// Modes of PutRestApi: overwrite replaces the API's resources, methods
// and gateway responses with the document's; merge adds the document's
// and replaces the methods and gateway responses it names, keeping the
// rest. Source: AWS API Gateway API reference, PutRestApi.
const (
	PutModeOverwrite = "overwrite"
	PutModeMerge     = "merge"
)
