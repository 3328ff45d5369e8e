package admin_test

import (
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"
)

func TestDeploymentsAndStages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	apiID, _ := e.api("pets", "")
	id := aws.String(apiID)
	d := call(e.c.CreateDeployment(e.ctx, &apigateway.CreateDeploymentInput{RestApiId: id, Description: aws.String("first"),
		StageName: aws.String("prod"), StageDescription: aws.String("live"), Variables: map[string]string{"backend": "b1"}})).must(t)
	if len(*d.Id) != 6 || *d.Description != "first" || d.CreatedDate == nil || d.CreatedDate.IsZero() {
		t.Fatalf("got deployment %+v, want a 6-character id, description first and a date", d)
	}
	prod := call(e.c.GetStage(e.ctx, &apigateway.GetStageInput{RestApiId: id, StageName: aws.String("prod")})).must(t)
	if *prod.DeploymentId != *d.Id || *prod.Description != "live" || prod.Variables["backend"] != "b1" || prod.CacheClusterStatus != types.CacheClusterStatusNotAvailable {
		t.Fatalf("got stage %+v, want deployment %s, description live, variable backend=b1, cache NOT_AVAILABLE", prod, *d.Id)
	}
	dev := call(e.c.CreateStage(e.ctx, &apigateway.CreateStageInput{RestApiId: id, StageName: aws.String("dev"), DeploymentId: d.Id, CacheClusterEnabled: true})).must(t)
	if !dev.CacheClusterEnabled || dev.CacheClusterSize != "0.5" || dev.CacheClusterStatus != types.CacheClusterStatusAvailable {
		t.Fatalf("got cache %v %q %q, want enabled 0.5 AVAILABLE", dev.CacheClusterEnabled, dev.CacheClusterSize, dev.CacheClusterStatus)
	}
	_, err := e.c.CreateStage(e.ctx, &apigateway.CreateStageInput{RestApiId: id, StageName: aws.String("dev"), DeploymentId: d.Id})
	wantCode(t, err, "ConflictException")
	_, err = e.c.CreateStage(e.ctx, &apigateway.CreateStageInput{RestApiId: id, StageName: aws.String("bad name"), DeploymentId: d.Id})
	wantBadRequest(t, err, "stageName")

	stages := call(e.c.GetStages(e.ctx, &apigateway.GetStagesInput{RestApiId: id})).must(t)
	if len(stages.Item) != 2 {
		t.Fatalf("got %d stages, want 2", len(stages.Item))
	}
	deps := call(e.c.GetDeployments(e.ctx, &apigateway.GetDeploymentsInput{RestApiId: id})).must(t)
	if len(deps.Items) != 1 || *deps.Items[0].Id != *d.Id {
		t.Fatalf("got deployments %+v, want just %s", deps.Items, *d.Id)
	}
	_, err = e.c.DeleteDeployment(e.ctx, &apigateway.DeleteDeploymentInput{RestApiId: id, DeploymentId: d.Id})
	wantCode(t, err, "BadRequestException")

	upd := call(e.c.UpdateStage(e.ctx, &apigateway.UpdateStageInput{RestApiId: id, StageName: aws.String("prod"), PatchOperations: []types.PatchOperation{
		op(types.OpReplace, "/*/*/throttling/rateLimit", "100"),
		op(types.OpReplace, "/*/*/throttling/burstLimit", "50"),
		op(types.OpReplace, "/*/*/caching/enabled", "true"),
		op(types.OpReplace, "/~1pets/GET/throttling/rateLimit", "2.5"),
		op(types.OpReplace, "/~1pets/GET/caching/ttlInSeconds", "30"),
		op(types.OpReplace, "/variables/backend", "b2"),
		op(types.OpReplace, "/description", "still live"),
	}})).must(t)
	all, pets := upd.MethodSettings["*/*"], upd.MethodSettings["~1pets/GET"]
	if all.ThrottlingRateLimit != 100 || all.ThrottlingBurstLimit != 50 || !all.CachingEnabled {
		t.Fatalf("got */* %+v, want rate 100 burst 50 caching on", all)
	}
	if pets.ThrottlingRateLimit != 2.5 || pets.ThrottlingBurstLimit != -1 || pets.CacheTtlInSeconds != 30 || !pets.CachingEnabled || !pets.RequireAuthorizationForCacheControl {
		t.Fatalf("got ~1pets/GET %+v, want rate 2.5, burst -1, ttl 30, caching copied on, authorization required", pets)
	}
	if upd.Variables["backend"] != "b2" || *upd.Description != "still live" {
		t.Fatalf("got variables %v description %q, want backend=b2, still live", upd.Variables, *upd.Description)
	}
	for _, tc := range []struct{ path, value, field string }{
		{"/*/*/throttling/burstLimit", "1.5", "burstLimit"},
		{"/*/*/caching/ttlInSeconds", "3601", "cacheTtlInSeconds"},
		{"/~1pets/GET/throttling/rateLimit", "-3", "throttlingRateLimit"},
		{"/*/*/caching/size", "1", "/*/*/caching/size"},
		{"/cacheClusterSize", "2", "cacheClusterSize"},
	} {
		_, err = e.c.UpdateStage(e.ctx, &apigateway.UpdateStageInput{RestApiId: id, StageName: aws.String("prod"), PatchOperations: []types.PatchOperation{op(types.OpReplace, tc.path, tc.value)}})
		wantBadRequest(t, err, tc.field)
	}

	call(e.c.UpdateStage(e.ctx, &apigateway.UpdateStageInput{RestApiId: id, StageName: aws.String("dev"), PatchOperations: []types.PatchOperation{
		op(types.OpReplace, "/cacheClusterSize", "6.1"),
	}})).must(t)
	call(e.c.FlushStageCache(e.ctx, &apigateway.FlushStageCacheInput{RestApiId: id, StageName: aws.String("prod")})).must(t)
	if got, want := e.pub.flushed(), []string{apiID + ":dev", apiID + ":prod"}; !slices.Equal(got, want) {
		t.Fatalf("got flushes %v, want %v (resize, then flush)", got, want)
	}
	_, err = e.c.FlushStageCache(e.ctx, &apigateway.FlushStageCacheInput{RestApiId: id, StageName: aws.String("nope")})
	wantCode(t, err, "NotFoundException")

	_, err = e.c.UpdateStage(e.ctx, &apigateway.UpdateStageInput{RestApiId: id, StageName: aws.String("prod"), PatchOperations: []types.PatchOperation{
		op(types.OpReplace, "/deploymentId", "zzzzzz"),
	}})
	wantBadRequest(t, err, "deploymentId")

	// cache settings in CreateDeployment apply to the stage it deploys to.
	call(e.c.CreateDeployment(e.ctx, &apigateway.CreateDeploymentInput{RestApiId: id, StageName: aws.String("cached"),
		CacheClusterEnabled: aws.Bool(true), CacheClusterSize: types.CacheClusterSizeSize1Point6Gb})).must(t)
	cached := call(e.c.GetStage(e.ctx, &apigateway.GetStageInput{RestApiId: id, StageName: aws.String("cached")})).must(t)
	if !cached.CacheClusterEnabled || cached.CacheClusterSize != types.CacheClusterSizeSize1Point6Gb {
		t.Fatalf("got cache %v %q, want enabled 1.6", cached.CacheClusterEnabled, cached.CacheClusterSize)
	}
	call(e.c.DeleteStage(e.ctx, &apigateway.DeleteStageInput{RestApiId: id, StageName: aws.String("cached")})).must(t)
	call(e.c.DeleteStage(e.ctx, &apigateway.DeleteStageInput{RestApiId: id, StageName: aws.String("dev")})).must(t)
	call(e.c.DeleteStage(e.ctx, &apigateway.DeleteStageInput{RestApiId: id, StageName: aws.String("prod")})).must(t)
	for _, dep := range call(e.c.GetDeployments(e.ctx, &apigateway.GetDeploymentsInput{RestApiId: id})).must(t).Items {
		call(e.c.DeleteDeployment(e.ctx, &apigateway.DeleteDeploymentInput{RestApiId: id, DeploymentId: dep.Id})).must(t)
	}
	_, err = e.c.GetDeployment(e.ctx, &apigateway.GetDeploymentInput{RestApiId: id, DeploymentId: d.Id})
	wantCode(t, err, "NotFoundException")
}
