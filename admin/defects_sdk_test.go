package admin_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"
)

func TestPutMethodOnAnExistingMethodIsAConflict(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	apiID, petsID := e.api("pets", "")
	_, err := e.c.PutMethod(e.ctx, &apigateway.PutMethodInput{RestApiId: &apiID, ResourceId: &petsID,
		HttpMethod: aws.String("GET"), AuthorizationType: aws.String("NONE"), ApiKeyRequired: false})
	if ae := wantCode(t, err, "ConflictException"); ae.ErrorMessage() != "Method already exists for this resource" {
		t.Errorf("message: got %q, want AWS's", ae.ErrorMessage())
	}
	m := call(e.c.GetMethod(e.ctx, &apigateway.GetMethodInput{RestApiId: &apiID, ResourceId: &petsID, HttpMethod: aws.String("GET")})).must(t)
	if !aws.ToBool(m.ApiKeyRequired) || m.MethodIntegration == nil {
		t.Errorf("after the refused PutMethod: apiKeyRequired %v, integration %v; want both kept", aws.ToBool(m.ApiKeyRequired), m.MethodIntegration)
	}
}

func TestSettingsNamingNoMethodAreRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	apiID, _ := e.api("pets", "prod")
	for _, path := range []string{"/~1nope/GET", "/~1pets~1..~1..~1x/GET", "/~1pets/POST"} {
		_, err := e.c.UpdateStage(e.ctx, &apigateway.UpdateStageInput{RestApiId: &apiID, StageName: aws.String("prod"),
			PatchOperations: []types.PatchOperation{op(types.OpReplace, path+"/throttling/rateLimit", "5")}})
		wantBadRequest(t, err, path)
	}
	call(e.c.UpdateStage(e.ctx, &apigateway.UpdateStageInput{RestApiId: &apiID, StageName: aws.String("prod"),
		PatchOperations: []types.PatchOperation{op(types.OpReplace, "/~1pets/GET/throttling/rateLimit", "5")}})).must(t)

	plan := call(e.c.CreateUsagePlan(e.ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("gold"),
		ApiStages: []types.ApiStage{{ApiId: &apiID, Stage: aws.String("prod")}}})).must(t)
	_, err := e.c.UpdateUsagePlan(e.ctx, &apigateway.UpdateUsagePlanInput{UsagePlanId: plan.Id, PatchOperations: []types.PatchOperation{
		op(types.OpReplace, "/apiStages/"+apiID+":prod/throttle/~1nope/GET/rateLimit", "5")}})
	wantBadRequest(t, err, "/apiStages/"+apiID+":prod/throttle/~1nope/GET")
	_, err = e.c.CreateUsagePlan(e.ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("typo"),
		ApiStages: []types.ApiStage{{ApiId: &apiID, Stage: aws.String("prod"), Throttle: map[string]types.ThrottleSettings{
			"/pets/DELETE": {RateLimit: 1, BurstLimit: 1}}}}})
	wantBadRequest(t, err, "~1pets/DELETE")
}

func TestALoneRateLimitPatchTakesADefaultBurst(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	apiID, _ := e.api("pets", "prod")
	open := call(e.c.CreateUsagePlan(e.ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("open"),
		ApiStages: []types.ApiStage{{ApiId: &apiID, Stage: aws.String("prod")}}})).must(t)
	got := call(e.c.UpdateUsagePlan(e.ctx, &apigateway.UpdateUsagePlanInput{UsagePlanId: open.Id, PatchOperations: []types.PatchOperation{
		op(types.OpReplace, "/apiStages/"+apiID+":prod/throttle//pets/GET/rateLimit", "2.5")}})).must(t)
	if th := got.ApiStages[0].Throttle["/pets/GET"]; th.RateLimit != 2.5 || th.BurstLimit != 3 {
		t.Errorf("plan without a throttle: got %+v, want rate 2.5 and burst 3 (one second's worth)", th)
	}
	e.c.DeleteUsagePlan(e.ctx, &apigateway.DeleteUsagePlanInput{UsagePlanId: open.Id})
	throttled := call(e.c.CreateUsagePlan(e.ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("throttled"),
		Throttle:  &types.ThrottleSettings{RateLimit: 10, BurstLimit: 20},
		ApiStages: []types.ApiStage{{ApiId: &apiID, Stage: aws.String("prod")}}})).must(t)
	got = call(e.c.UpdateUsagePlan(e.ctx, &apigateway.UpdateUsagePlanInput{UsagePlanId: throttled.Id, PatchOperations: []types.PatchOperation{
		op(types.OpReplace, "/apiStages/"+apiID+":prod/throttle/~1pets/GET/rateLimit", "1")}})).must(t)
	if th := got.ApiStages[0].Throttle["/pets/GET"]; th.RateLimit != 1 || th.BurstLimit != 20 {
		t.Errorf("plan with a throttle: got %+v, want rate 1 and the plan's burst 20", th)
	}
}

func TestStageVariablesHaveAWSLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	apiID, _ := e.api("pets", "prod")
	for name, value := range map[string]string{
		"huge":   strings.Repeat("a", 100000),
		"spaces": "a b",
		"long":   strings.Repeat("a", 513),
	} {
		_, err := e.c.UpdateStage(e.ctx, &apigateway.UpdateStageInput{RestApiId: &apiID, StageName: aws.String("prod"),
			PatchOperations: []types.PatchOperation{op(types.OpReplace, "/variables/"+name, value)}})
		wantBadRequest(t, err, "variables."+name)
	}
	call(e.c.UpdateStage(e.ctx, &apigateway.UpdateStageInput{RestApiId: &apiID, StageName: aws.String("prod"),
		PatchOperations: []types.PatchOperation{op(types.OpReplace, "/variables/upstream", "https://api.example.com:8443/v1?x=1&y=2,3#f")}})).must(t)
	_, err := e.c.CreateDeployment(e.ctx, &apigateway.CreateDeploymentInput{RestApiId: &apiID, StageName: aws.String("dev"),
		Variables: map[string]string{"x": strings.Repeat("b", 600)}})
	wantBadRequest(t, err, "variables.x")
}
