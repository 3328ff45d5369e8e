package admin_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"

	"tollgate/plans"
)

// TestAWSCorsSetup runs the calls AWS's console makes to enable CORS: a
// MOCK OPTIONS method with its method and integration responses, and
// Access-Control-Allow-Origin on DEFAULT_4XX.
func TestAWSCorsSetup(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	apiID, petsID := e.api("pets", "")
	id, res := aws.String(apiID), aws.String(petsID)
	opt := aws.String("OPTIONS")
	call(e.c.PutMethod(e.ctx, &apigateway.PutMethodInput{RestApiId: id, ResourceId: res, HttpMethod: opt, AuthorizationType: aws.String("NONE")})).must(t)
	call(e.c.PutIntegration(e.ctx, &apigateway.PutIntegrationInput{RestApiId: id, ResourceId: res, HttpMethod: opt, Type: types.IntegrationTypeMock,
		RequestTemplates: map[string]string{"application/json": `{"statusCode": 200}`}})).must(t)
	call(e.c.PutMethodResponse(e.ctx, &apigateway.PutMethodResponseInput{RestApiId: id, ResourceId: res, HttpMethod: opt, StatusCode: aws.String("200"),
		ResponseParameters: map[string]bool{"method.response.header.Access-Control-Allow-Origin": false}})).must(t)
	ir := call(e.c.PutIntegrationResponse(e.ctx, &apigateway.PutIntegrationResponseInput{RestApiId: id, ResourceId: res, HttpMethod: opt, StatusCode: aws.String("200"),
		ResponseParameters: map[string]string{"method.response.header.Access-Control-Allow-Origin": "'*'"},
		ResponseTemplates:  map[string]string{"application/json": ""}})).must(t)
	if aws.ToString(ir.StatusCode) != "200" || ir.ResponseParameters["method.response.header.Access-Control-Allow-Origin"] != "'*'" {
		t.Fatalf("PutIntegrationResponse: got %+v", ir)
	}
	m := call(e.c.GetMethod(e.ctx, &apigateway.GetMethodInput{RestApiId: id, ResourceId: res, HttpMethod: opt})).must(t)
	if m.MethodResponses["200"].ResponseParameters == nil || m.MethodIntegration.IntegrationResponses["200"].ResponseParameters == nil ||
		m.MethodIntegration.RequestTemplates["application/json"] == "" {
		t.Fatalf("GetMethod: got %+v, want its method response, integration response and request template", m)
	}
	gr := call(e.c.PutGatewayResponse(e.ctx, &apigateway.PutGatewayResponseInput{RestApiId: id, ResponseType: types.GatewayResponseTypeDefault4xx,
		ResponseParameters: map[string]string{"gatewayresponse.header.Access-Control-Allow-Origin": "'*'"}})).must(t)
	if gr.DefaultResponse || gr.ResponseType != types.GatewayResponseTypeDefault4xx {
		t.Fatalf("PutGatewayResponse: got %+v", gr)
	}
	all := call(e.c.GetGatewayResponses(e.ctx, &apigateway.GetGatewayResponsesInput{RestApiId: id})).must(t)
	put := 0
	for _, g := range all.Items {
		if !g.DefaultResponse {
			put++
		}
	}
	if len(all.Items) != len(plans.GatewayResponseTypes) || put != 1 {
		t.Errorf("GetGatewayResponses: got %d items, %d put; want 12 and 1", len(all.Items), put)
	}
	_, err := e.c.PutGatewayResponse(e.ctx, &apigateway.PutGatewayResponseInput{RestApiId: id, ResponseType: types.GatewayResponseTypeWafFiltered})
	wantBadRequest(t, err, "responseType")
	_, err = e.c.PutGatewayResponse(e.ctx, &apigateway.PutGatewayResponseInput{RestApiId: id, ResponseType: types.GatewayResponseTypeThrottled,
		ResponseParameters: map[string]string{"gatewayresponse.header.X": "context.requestId"}})
	wantBadRequest(t, err, "responseParameters")

	call(e.c.DeleteIntegrationResponse(e.ctx, &apigateway.DeleteIntegrationResponseInput{RestApiId: id, ResourceId: res, HttpMethod: opt, StatusCode: aws.String("200")})).must(t)
	_, err = e.c.GetIntegrationResponse(e.ctx, &apigateway.GetIntegrationResponseInput{RestApiId: id, ResourceId: res, HttpMethod: opt, StatusCode: aws.String("200")})
	wantCode(t, err, "NotFoundException")
	call(e.c.DeleteMethodResponse(e.ctx, &apigateway.DeleteMethodResponseInput{RestApiId: id, ResourceId: res, HttpMethod: opt, StatusCode: aws.String("200")})).must(t)
	_, err = e.c.DeleteMethodResponse(e.ctx, &apigateway.DeleteMethodResponseInput{RestApiId: id, ResourceId: res, HttpMethod: opt, StatusCode: aws.String("200")})
	wantCode(t, err, "NotFoundException")
	call(e.c.DeleteGatewayResponse(e.ctx, &apigateway.DeleteGatewayResponseInput{RestApiId: id, ResponseType: types.GatewayResponseTypeDefault4xx})).must(t)
	g := call(e.c.GetGatewayResponse(e.ctx, &apigateway.GetGatewayResponseInput{RestApiId: id, ResponseType: types.GatewayResponseTypeDefault4xx})).must(t)
	if !g.DefaultResponse {
		t.Errorf("after delete: got %+v, want the default response", g)
	}
}

func TestUpdateResponsesByPatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	apiID, petsID := e.api("pets", "")
	id, res, get := aws.String(apiID), aws.String(petsID), aws.String("GET")
	call(e.c.PutMethodResponse(e.ctx, &apigateway.PutMethodResponseInput{RestApiId: id, ResourceId: res, HttpMethod: get, StatusCode: aws.String("200")})).must(t)
	mr := call(e.c.UpdateMethodResponse(e.ctx, &apigateway.UpdateMethodResponseInput{RestApiId: id, ResourceId: res, HttpMethod: get, StatusCode: aws.String("200"),
		PatchOperations: []types.PatchOperation{
			op(types.OpAdd, "/responseParameters/method.response.header.Access-Control-Allow-Origin", "true"),
			op(types.OpAdd, "/responseModels/application~1json", "Empty"),
		}})).must(t)
	if !mr.ResponseParameters["method.response.header.Access-Control-Allow-Origin"] || mr.ResponseModels["application/json"] != "Empty" {
		t.Errorf("UpdateMethodResponse: got %+v", mr)
	}
	call(e.c.PutIntegrationResponse(e.ctx, &apigateway.PutIntegrationResponseInput{RestApiId: id, ResourceId: res, HttpMethod: get, StatusCode: aws.String("200")})).must(t)
	ir := call(e.c.UpdateIntegrationResponse(e.ctx, &apigateway.UpdateIntegrationResponseInput{RestApiId: id, ResourceId: res, HttpMethod: get, StatusCode: aws.String("200"),
		PatchOperations: []types.PatchOperation{
			op(types.OpAdd, "/responseParameters/method.response.header.Access-Control-Allow-Origin", "'*'"),
			op(types.OpReplace, "/responseTemplates/application~1json", `{"ok":true}`),
			op(types.OpReplace, "/selectionPattern", "2\\d\\d"),
		}})).must(t)
	if ir.ResponseParameters["method.response.header.Access-Control-Allow-Origin"] != "'*'" || ir.ResponseTemplates["application/json"] != `{"ok":true}` || aws.ToString(ir.SelectionPattern) != `2\d\d` {
		t.Errorf("UpdateIntegrationResponse: got %+v", ir)
	}
	_, err := e.c.UpdateIntegrationResponse(e.ctx, &apigateway.UpdateIntegrationResponseInput{RestApiId: id, ResourceId: res, HttpMethod: get, StatusCode: aws.String("200"),
		PatchOperations: []types.PatchOperation{op(types.OpReplace, "/selectionPattern", "(")}})
	wantBadRequest(t, err, "selectionPattern")
	_, err = e.c.UpdateMethodResponse(e.ctx, &apigateway.UpdateMethodResponseInput{RestApiId: id, ResourceId: res, HttpMethod: get, StatusCode: aws.String("404"),
		PatchOperations: []types.PatchOperation{op(types.OpAdd, "/responseModels/application~1json", "Empty")}})
	wantCode(t, err, "NotFoundException")
	gr := call(e.c.UpdateGatewayResponse(e.ctx, &apigateway.UpdateGatewayResponseInput{RestApiId: id, ResponseType: types.GatewayResponseTypeQuotaExceeded,
		PatchOperations: []types.PatchOperation{
			op(types.OpReplace, "/statusCode", "403"),
			op(types.OpAdd, "/responseParameters/gatewayresponse.header.Access-Control-Allow-Origin", "'*'"),
		}})).must(t)
	if aws.ToString(gr.StatusCode) != "403" || gr.DefaultResponse || gr.ResponseParameters["gatewayresponse.header.Access-Control-Allow-Origin"] != "'*'" {
		t.Errorf("UpdateGatewayResponse of a default type: got %+v", gr)
	}
}

func TestResponsesCannotMapTheGatewaysOwnHeaders(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	apiID, petsID := e.api("pets", "")
	id, res, get := aws.String(apiID), aws.String(petsID), aws.String("GET")
	_, err := e.c.PutGatewayResponse(e.ctx, &apigateway.PutGatewayResponseInput{RestApiId: id, ResponseType: types.GatewayResponseTypeThrottled,
		ResponseParameters: map[string]string{"gatewayresponse.header.Retry-After": "'999'"}})
	wantBadRequest(t, err, "gatewayresponse.header.Retry-After")
	_, err = e.c.UpdateGatewayResponse(e.ctx, &apigateway.UpdateGatewayResponseInput{RestApiId: id, ResponseType: types.GatewayResponseTypeDefault4xx,
		PatchOperations: []types.PatchOperation{op(types.OpAdd, "/responseParameters/gatewayresponse.header.X-Amzn-ErrorType", "'Mine'")}})
	wantBadRequest(t, err, "gatewayresponse.header.X-Amzn-ErrorType")
	_, err = e.c.PutIntegrationResponse(e.ctx, &apigateway.PutIntegrationResponseInput{RestApiId: id, ResourceId: res, HttpMethod: get, StatusCode: aws.String("200"),
		ResponseParameters: map[string]string{"method.response.header.x-ratelimit-remaining": "'999'"}})
	wantBadRequest(t, err, "method.response.header.x-ratelimit-remaining")
	call(e.c.PutIntegrationResponse(e.ctx, &apigateway.PutIntegrationResponseInput{RestApiId: id, ResourceId: res, HttpMethod: get, StatusCode: aws.String("200")})).must(t)
	_, err = e.c.UpdateIntegrationResponse(e.ctx, &apigateway.UpdateIntegrationResponseInput{RestApiId: id, ResourceId: res, HttpMethod: get, StatusCode: aws.String("200"),
		PatchOperations: []types.PatchOperation{op(types.OpReplace, "/responseParameters/method.response.header.Transfer-Encoding", "'chunked'")}})
	wantBadRequest(t, err, "method.response.header.Transfer-Encoding")
	if gr := call(e.c.GetGatewayResponse(e.ctx, &apigateway.GetGatewayResponseInput{RestApiId: id, ResponseType: types.GatewayResponseTypeDefault4xx})).must(t); !gr.DefaultResponse {
		t.Errorf("after refused writes: got %+v, want the default DEFAULT_4XX", gr)
	}
	if ir := call(e.c.GetIntegrationResponse(e.ctx, &apigateway.GetIntegrationResponseInput{RestApiId: id, ResourceId: res, HttpMethod: get, StatusCode: aws.String("200")})).must(t); len(ir.ResponseParameters) != 0 {
		t.Errorf("after refused writes: got %+v, want no response parameters", ir)
	}
}
