// Package openapi converts between OpenAPI documents (OpenAPI 3.0 and
// Swagger 2.0, JSON or YAML) with Amazon API Gateway's extensions and
// tollgate's API model (plans.ApiDefinition). It backs ImportRestApi,
// PutRestApi and GetExport; parsing and validation are kin-openapi's.
//
// Import reads, from the document:
//   - info.title and info.description: the API's name and description;
//   - every path and its operations (GET, PUT, POST, DELETE, OPTIONS, HEAD,
//     PATCH, and ANY as x-amazon-apigateway-any-method): the resource tree,
//     with intermediate resources created for paths that only have children;
//   - parameters (in path, query, header): the method's requestParameters;
//   - responses with numeric codes: method responses (headers become
//     method.response.header.* parameters, content schemas that refer to
//     #/components/schemas/X become responseModels);
//   - a security requirement naming an apiKey scheme sent in the x-api-key
//     header: apiKeyRequired;
//   - x-amazon-apigateway-integration: type (http_proxy, mock), uri,
//     httpMethod, passthroughBehavior, requestParameters, requestTemplates,
//     cacheKeyParameters, cacheNamespace, timeoutInMillis, connectionType and
//     responses;
//   - x-amazon-apigateway-api-key-source and
//     x-amazon-apigateway-gateway-responses;
//   - x-tollgate-rate-limit-rules, tollgate's own: the API's rate-limit
//     rules by stage name, each in the admin API's JSON shape
//     (docs/rules.md). Export writes it, with the exported stage's rules,
//     when it writes the API Gateway extensions.
//
// Every other x-amazon-apigateway-* extension, integration field or
// integration type, and a gateway response type tollgate does not produce,
// is skipped with a warning (ImportRestApi's failonwarnings turns warnings
// into a 400). An operation secured by anything but an x-api-key apiKey
// scheme (a Cognito or Lambda authorizer, IAM, OAuth) is an error rather
// than a warning: importing it without its authorizer would open it. An
// error names its location in the document, e.g.
// "paths./pets.get.x-amazon-apigateway-integration.uri".
//
// Export writes the inverse, so that Import(Export(def)) gives def again
// (up to the normalisation Import applies to any document: every path
// parameter of a resource's path is declared as a required
// method.request.path.* parameter, as OpenAPI requires).
package openapi
