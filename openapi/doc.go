// Package openapi converts between OpenAPI documents (OpenAPI 3.0 and
// Swagger 2.0, JSON or YAML) with Amazon API Gateway's extensions and
// tollgate's API model (plans.ApiDefinition). It backs ImportRestApi,
// PutRestApi and GetExport; parsing and reference resolution are
// kin-openapi's.
//
// Import takes what API Gateway's import takes: OpenAPI's own validation
// rules, stricter than API Gateway's, are not applied. It reads, from the
// document:
//   - info.title and info.description: the API's name and description;
//   - every path and its operations (GET, PUT, POST, DELETE, OPTIONS, HEAD,
//     PATCH, and ANY as x-amazon-apigateway-any-method): the resource tree,
//     with intermediate resources created for paths that only have children,
//     and the base path placed as ImportOptions.BasePath says;
//   - parameters (in path, query, header): the method's requestParameters;
//   - responses with numeric codes (none at all is fine): method responses
//     (headers become method.response.header.* parameters, content schemas
//     that refer to #/components/schemas/X become responseModels);
//   - an operation's security requirement naming an apiKey scheme sent in
//     the x-api-key header: apiKeyRequired (the document's own security is
//     ignored, as API Gateway ignores it, with a warning);
//   - security schemes with x-amazon-apigateway-authorizer: the API's
//     authorizers, by scheme name; an operation naming one, or a scheme
//     whose x-amazon-apigateway-authtype is awsSigv4, gets authorizationType
//     CUSTOM, COGNITO_USER_POOLS or AWS_IAM and is closed (tollgate cannot
//     run authorizers), with a warning naming it;
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
// What tollgate cannot honour is skipped with a warning naming its
// location, and the warnings come in document order: every other
// x-amazon-apigateway-* extension, integration field or integration type,
// a gateway response type tollgate does not produce, a mapping or header
// it cannot evaluate or set, a path parameter the path does not have
// (ImportRestApi's failonwarnings turns warnings into a 400). Refused
// with a 400 naming the location, e.g.
// "paths./pets.get.x-amazon-apigateway-integration.uri": a document that
// does not parse or whose references do not resolve, resources API
// Gateway refuses too, values no integration can have, a chain of more
// than MaxRefChain components that are only a $ref, and an operation
// secured by a scheme that is neither an x-api-key apiKey scheme nor an
// API Gateway authorizer or awsSigv4 (plain OAuth 2, HTTP basic):
// importing it without it would open it.
//
// Export writes the inverse, so that Import(Export(def)) gives def again
// (up to the normalisation Import applies to any document: every path
// parameter of a resource's path is declared as a required
// method.request.path.* parameter, as OpenAPI requires).
package openapi
