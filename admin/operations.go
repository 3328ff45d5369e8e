package admin

import "strings"

// This table was extracted from the AWS SDK for Go v2 service/apigateway
// (v1.40.2) serializers.go: every operation of the API Gateway REST
// management API (2015-07-09) with its method and path. It names the
// operation in the 400 answered for operations outside tollgate's subset.
// Re-extract it when the SDK gains operations.

// awsOperation is one AWS operation: HTTP method, path pattern and name.
type awsOperation struct {
	Method, Path, Name string
}

// awsOperations lists the API's operations (query-string variants such as
// ImportRestApi are recognised by their handlers instead).
var awsOperations = []awsOperation{
	{"POST", "/apikeys", "CreateApiKey"},
	{"POST", "/restapis/{restApiId}/authorizers", "CreateAuthorizer"},
	{"POST", "/domainnames/{domainName}/basepathmappings", "CreateBasePathMapping"},
	{"POST", "/restapis/{restApiId}/deployments", "CreateDeployment"},
	{"POST", "/restapis/{restApiId}/documentation/parts", "CreateDocumentationPart"},
	{"POST", "/restapis/{restApiId}/documentation/versions", "CreateDocumentationVersion"},
	{"POST", "/domainnames", "CreateDomainName"},
	{"POST", "/domainnameaccessassociations", "CreateDomainNameAccessAssociation"},
	{"POST", "/restapis/{restApiId}/models", "CreateModel"},
	{"POST", "/restapis/{restApiId}/requestvalidators", "CreateRequestValidator"},
	{"POST", "/restapis/{restApiId}/resources/{parentId}", "CreateResource"},
	{"POST", "/restapis", "CreateRestApi"},
	{"POST", "/restapis/{restApiId}/stages", "CreateStage"},
	{"POST", "/usageplans", "CreateUsagePlan"},
	{"POST", "/usageplans/{usagePlanId}/keys", "CreateUsagePlanKey"},
	{"POST", "/vpclinks", "CreateVpcLink"},
	{"DELETE", "/apikeys/{apiKey}", "DeleteApiKey"},
	{"DELETE", "/restapis/{restApiId}/authorizers/{authorizerId}", "DeleteAuthorizer"},
	{"DELETE", "/domainnames/{domainName}/basepathmappings/{basePath}", "DeleteBasePathMapping"},
	{"DELETE", "/clientcertificates/{clientCertificateId}", "DeleteClientCertificate"},
	{"DELETE", "/restapis/{restApiId}/deployments/{deploymentId}", "DeleteDeployment"},
	{"DELETE", "/restapis/{restApiId}/documentation/parts/{documentationPartId}", "DeleteDocumentationPart"},
	{"DELETE", "/restapis/{restApiId}/documentation/versions/{documentationVersion}", "DeleteDocumentationVersion"},
	{"DELETE", "/domainnames/{domainName}", "DeleteDomainName"},
	{"DELETE", "/domainnameaccessassociations/{domainNameAccessAssociationArn}", "DeleteDomainNameAccessAssociation"},
	{"DELETE", "/restapis/{restApiId}/gatewayresponses/{responseType}", "DeleteGatewayResponse"},
	{"DELETE", "/restapis/{restApiId}/resources/{resourceId}/methods/{httpMethod}/integration", "DeleteIntegration"},
	{"DELETE", "/restapis/{restApiId}/resources/{resourceId}/methods/{httpMethod}/integration/responses/{statusCode}", "DeleteIntegrationResponse"},
	{"DELETE", "/restapis/{restApiId}/resources/{resourceId}/methods/{httpMethod}", "DeleteMethod"},
	{"DELETE", "/restapis/{restApiId}/resources/{resourceId}/methods/{httpMethod}/responses/{statusCode}", "DeleteMethodResponse"},
	{"DELETE", "/restapis/{restApiId}/models/{modelName}", "DeleteModel"},
	{"DELETE", "/restapis/{restApiId}/requestvalidators/{requestValidatorId}", "DeleteRequestValidator"},
	{"DELETE", "/restapis/{restApiId}/resources/{resourceId}", "DeleteResource"},
	{"DELETE", "/restapis/{restApiId}", "DeleteRestApi"},
	{"DELETE", "/restapis/{restApiId}/stages/{stageName}", "DeleteStage"},
	{"DELETE", "/usageplans/{usagePlanId}", "DeleteUsagePlan"},
	{"DELETE", "/usageplans/{usagePlanId}/keys/{keyId}", "DeleteUsagePlanKey"},
	{"DELETE", "/vpclinks/{vpcLinkId}", "DeleteVpcLink"},
	{"DELETE", "/restapis/{restApiId}/stages/{stageName}/cache/authorizers", "FlushStageAuthorizersCache"},
	{"DELETE", "/restapis/{restApiId}/stages/{stageName}/cache/data", "FlushStageCache"},
	{"POST", "/clientcertificates", "GenerateClientCertificate"},
	{"GET", "/account", "GetAccount"},
	{"GET", "/apikeys/{apiKey}", "GetApiKey"},
	{"GET", "/apikeys", "GetApiKeys"},
	{"GET", "/restapis/{restApiId}/authorizers/{authorizerId}", "GetAuthorizer"},
	{"GET", "/restapis/{restApiId}/authorizers", "GetAuthorizers"},
	{"GET", "/domainnames/{domainName}/basepathmappings/{basePath}", "GetBasePathMapping"},
	{"GET", "/domainnames/{domainName}/basepathmappings", "GetBasePathMappings"},
	{"GET", "/clientcertificates/{clientCertificateId}", "GetClientCertificate"},
	{"GET", "/clientcertificates", "GetClientCertificates"},
	{"GET", "/restapis/{restApiId}/deployments/{deploymentId}", "GetDeployment"},
	{"GET", "/restapis/{restApiId}/deployments", "GetDeployments"},
	{"GET", "/restapis/{restApiId}/documentation/parts/{documentationPartId}", "GetDocumentationPart"},
	{"GET", "/restapis/{restApiId}/documentation/parts", "GetDocumentationParts"},
	{"GET", "/restapis/{restApiId}/documentation/versions/{documentationVersion}", "GetDocumentationVersion"},
	{"GET", "/restapis/{restApiId}/documentation/versions", "GetDocumentationVersions"},
	{"GET", "/domainnames/{domainName}", "GetDomainName"},
	{"GET", "/domainnameaccessassociations", "GetDomainNameAccessAssociations"},
	{"GET", "/domainnames", "GetDomainNames"},
	{"GET", "/restapis/{restApiId}/stages/{stageName}/exports/{exportType}", "GetExport"},
	{"GET", "/restapis/{restApiId}/gatewayresponses/{responseType}", "GetGatewayResponse"},
	{"GET", "/restapis/{restApiId}/gatewayresponses", "GetGatewayResponses"},
	{"GET", "/restapis/{restApiId}/resources/{resourceId}/methods/{httpMethod}/integration", "GetIntegration"},
	{"GET", "/restapis/{restApiId}/resources/{resourceId}/methods/{httpMethod}/integration/responses/{statusCode}", "GetIntegrationResponse"},
	{"GET", "/restapis/{restApiId}/resources/{resourceId}/methods/{httpMethod}", "GetMethod"},
	{"GET", "/restapis/{restApiId}/resources/{resourceId}/methods/{httpMethod}/responses/{statusCode}", "GetMethodResponse"},
	{"GET", "/restapis/{restApiId}/models/{modelName}", "GetModel"},
	{"GET", "/restapis/{restApiId}/models", "GetModels"},
	{"GET", "/restapis/{restApiId}/models/{modelName}/default_template", "GetModelTemplate"},
	{"GET", "/restapis/{restApiId}/requestvalidators/{requestValidatorId}", "GetRequestValidator"},
	{"GET", "/restapis/{restApiId}/requestvalidators", "GetRequestValidators"},
	{"GET", "/restapis/{restApiId}/resources/{resourceId}", "GetResource"},
	{"GET", "/restapis/{restApiId}/resources", "GetResources"},
	{"GET", "/restapis/{restApiId}", "GetRestApi"},
	{"GET", "/restapis", "GetRestApis"},
	{"GET", "/restapis/{restApiId}/stages/{stageName}/sdks/{sdkType}", "GetSdk"},
	{"GET", "/sdktypes/{id}", "GetSdkType"},
	{"GET", "/sdktypes", "GetSdkTypes"},
	{"GET", "/restapis/{restApiId}/stages/{stageName}", "GetStage"},
	{"GET", "/restapis/{restApiId}/stages", "GetStages"},
	{"GET", "/tags/{resourceArn}", "GetTags"},
	{"GET", "/usageplans/{usagePlanId}/usage", "GetUsage"},
	{"GET", "/usageplans/{usagePlanId}", "GetUsagePlan"},
	{"GET", "/usageplans/{usagePlanId}/keys/{keyId}", "GetUsagePlanKey"},
	{"GET", "/usageplans/{usagePlanId}/keys", "GetUsagePlanKeys"},
	{"GET", "/usageplans", "GetUsagePlans"},
	{"GET", "/vpclinks/{vpcLinkId}", "GetVpcLink"},
	{"GET", "/vpclinks", "GetVpcLinks"},
	{"PUT", "/restapis/{restApiId}/documentation/parts", "ImportDocumentationParts"},
	{"PUT", "/restapis/{restApiId}/gatewayresponses/{responseType}", "PutGatewayResponse"},
	{"PUT", "/restapis/{restApiId}/resources/{resourceId}/methods/{httpMethod}/integration", "PutIntegration"},
	{"PUT", "/restapis/{restApiId}/resources/{resourceId}/methods/{httpMethod}/integration/responses/{statusCode}", "PutIntegrationResponse"},
	{"PUT", "/restapis/{restApiId}/resources/{resourceId}/methods/{httpMethod}", "PutMethod"},
	{"PUT", "/restapis/{restApiId}/resources/{resourceId}/methods/{httpMethod}/responses/{statusCode}", "PutMethodResponse"},
	{"PUT", "/restapis/{restApiId}", "PutRestApi"},
	{"POST", "/rejectdomainnameaccessassociations", "RejectDomainNameAccessAssociation"},
	{"PUT", "/tags/{resourceArn}", "TagResource"},
	{"POST", "/restapis/{restApiId}/authorizers/{authorizerId}", "TestInvokeAuthorizer"},
	{"POST", "/restapis/{restApiId}/resources/{resourceId}/methods/{httpMethod}", "TestInvokeMethod"},
	{"DELETE", "/tags/{resourceArn}", "UntagResource"},
	{"PATCH", "/account", "UpdateAccount"},
	{"PATCH", "/apikeys/{apiKey}", "UpdateApiKey"},
	{"PATCH", "/restapis/{restApiId}/authorizers/{authorizerId}", "UpdateAuthorizer"},
	{"PATCH", "/domainnames/{domainName}/basepathmappings/{basePath}", "UpdateBasePathMapping"},
	{"PATCH", "/clientcertificates/{clientCertificateId}", "UpdateClientCertificate"},
	{"PATCH", "/restapis/{restApiId}/deployments/{deploymentId}", "UpdateDeployment"},
	{"PATCH", "/restapis/{restApiId}/documentation/parts/{documentationPartId}", "UpdateDocumentationPart"},
	{"PATCH", "/restapis/{restApiId}/documentation/versions/{documentationVersion}", "UpdateDocumentationVersion"},
	{"PATCH", "/domainnames/{domainName}", "UpdateDomainName"},
	{"PATCH", "/restapis/{restApiId}/gatewayresponses/{responseType}", "UpdateGatewayResponse"},
	{"PATCH", "/restapis/{restApiId}/resources/{resourceId}/methods/{httpMethod}/integration", "UpdateIntegration"},
	{"PATCH", "/restapis/{restApiId}/resources/{resourceId}/methods/{httpMethod}/integration/responses/{statusCode}", "UpdateIntegrationResponse"},
	{"PATCH", "/restapis/{restApiId}/resources/{resourceId}/methods/{httpMethod}", "UpdateMethod"},
	{"PATCH", "/restapis/{restApiId}/resources/{resourceId}/methods/{httpMethod}/responses/{statusCode}", "UpdateMethodResponse"},
	{"PATCH", "/restapis/{restApiId}/models/{modelName}", "UpdateModel"},
	{"PATCH", "/restapis/{restApiId}/requestvalidators/{requestValidatorId}", "UpdateRequestValidator"},
	{"PATCH", "/restapis/{restApiId}/resources/{resourceId}", "UpdateResource"},
	{"PATCH", "/restapis/{restApiId}", "UpdateRestApi"},
	{"PATCH", "/restapis/{restApiId}/stages/{stageName}", "UpdateStage"},
	{"PATCH", "/usageplans/{usagePlanId}/keys/{keyId}/usage", "UpdateUsage"},
	{"PATCH", "/usageplans/{usagePlanId}", "UpdateUsagePlan"},
	{"PATCH", "/vpclinks/{vpcLinkId}", "UpdateVpcLink"},
}

// operationName returns the AWS operation that method and path invoke, or
// "" when none matches. Literal segments beat {labels}; a path label
// ({resourceArn}) spans exactly one segment of the escaped path.
func operationName(method, path string) string {
	segs := splitPath(path)
	best, bestScore := "", -1
	for _, op := range awsOperations {
		if op.Method != method {
			continue
		}
		if score, ok := matchSegments(splitPath(op.Path), segs); ok && score > bestScore {
			best, bestScore = op.Name, score
		}
	}
	return best
}

// splitPath splits "/a/b" into ["a", "b"] ("/" into []).
func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// matchSegments matches path segments against a pattern's and counts the
// literal segments that matched.
func matchSegments(pattern, segs []string) (int, bool) {
	if len(pattern) != len(segs) {
		return 0, false
	}
	score := 0
	for i, p := range pattern {
		switch {
		case strings.HasPrefix(p, "{"):
		case p == segs[i]:
			score++
		default:
			return 0, false
		}
	}
	return score, true
}
