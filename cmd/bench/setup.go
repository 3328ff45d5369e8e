package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"
)

// Limits of the bench config: realistic in shape (every bucket of docs/behaviour.md
// 4.3 applies to the measured requests) but high enough that the main key
// is never refused during a run.
const (
	planRate, planBurst     = 1_000_000, 1_000_000
	stageRate, stageBurst   = 1_000_000, 500_000
	methodRate, methodBurst = 1_000_000, 500_000
	accountRate             = 1_000_000 // rate and burst of the account bucket
	quotaLimit              = 2_000_000_000
	stageName               = "bench"
)

// fixture is what setup created: the API, and the three keys with their
// plans (main: never refused; over: quota of 1 per day, used up; probe:
// toggled by the push latency measurement).
type fixture struct {
	apiID                 string
	mainKey, overKey      string
	probeKey, probePlanID string
	manyKeys              []string // manyKeyCount keys of one plan like main's
}

// manyKeyCount is the number of keys the many-keys path takes in turn:
// enough that a batch of decisions rarely holds one key twice, so per-key
// state is read and written once per request, as with many partners.
const manyKeyCount = 256

// setup creates the bench API through the admin API: GET /uncached and GET
// /cached (both key required, HTTP_PROXY to the echo upstream), stage
// "bench" with a stage-wide throttle, a method throttle on /uncached and
// caching on /cached, and three plans with one key each.
func setup(ctx context.Context, c *apigateway.Client, upstream string) (fixture, error) {
	var f fixture
	api, err := c.CreateRestApi(ctx, &apigateway.CreateRestApiInput{Name: aws.String("bench")})
	if err != nil {
		return f, fmt.Errorf("create rest api: %w", err)
	}
	f.apiID = aws.ToString(api.Id)
	res, err := c.GetResources(ctx, &apigateway.GetResourcesInput{RestApiId: api.Id})
	if err != nil {
		return f, fmt.Errorf("get resources: %w", err)
	}
	for _, p := range []string{"uncached", "cached"} {
		if err := addMethod(ctx, c, api.Id, res.Items[0].Id, p, upstream+"/"+p); err != nil {
			return f, err
		}
	}
	if _, err := c.CreateDeployment(ctx, &apigateway.CreateDeploymentInput{RestApiId: api.Id, StageName: aws.String(stageName)}); err != nil {
		return f, fmt.Errorf("create deployment: %w", err)
	}
	if _, err := c.UpdateStage(ctx, &apigateway.UpdateStageInput{RestApiId: api.Id, StageName: aws.String(stageName),
		PatchOperations: stagePatch()}); err != nil {
		return f, fmt.Errorf("update stage: %w", err)
	}
	return f, addPlans(ctx, c, &f)
}

// stagePatch enables the stage cache, sets the stage-wide throttle, a
// method throttle on GET /uncached and caching on GET /cached.
func stagePatch() []types.PatchOperation {
	op := func(path string, v any) types.PatchOperation {
		return types.PatchOperation{Op: types.OpReplace, Path: aws.String(path), Value: aws.String(fmt.Sprint(v))}
	}
	return []types.PatchOperation{
		op("/cacheClusterEnabled", true),
		op("/*/*/throttling/rateLimit", stageRate),
		op("/*/*/throttling/burstLimit", stageBurst),
		op("/~1uncached/GET/throttling/rateLimit", methodRate),
		op("/~1uncached/GET/throttling/burstLimit", methodBurst),
		op("/~1cached/GET/caching/enabled", true),
		op("/~1cached/GET/caching/ttlInSeconds", 3600),
	}
}

// addPlans creates the main, over-limit and probe plans and their keys.
func addPlans(ctx context.Context, c *apigateway.Client, f *fixture) error {
	stage := []types.ApiStage{{ApiId: aws.String(f.apiID), Stage: aws.String(stageName)}}
	plans := []struct {
		name     string
		throttle *types.ThrottleSettings
		quota    *types.QuotaSettings
		key      *string
		plan     *string
	}{
		{"main", &types.ThrottleSettings{RateLimit: planRate, BurstLimit: planBurst},
			&types.QuotaSettings{Limit: quotaLimit, Period: types.QuotaPeriodTypeMonth}, &f.mainKey, nil},
		{"over", &types.ThrottleSettings{RateLimit: planRate, BurstLimit: planBurst},
			&types.QuotaSettings{Limit: 1, Period: types.QuotaPeriodTypeDay}, &f.overKey, nil},
		{"probe", &types.ThrottleSettings{RateLimit: planRate, BurstLimit: planBurst}, nil, &f.probeKey, &f.probePlanID},
	}
	for _, p := range plans {
		plan, err := c.CreateUsagePlan(ctx, &apigateway.CreateUsagePlanInput{Name: aws.String(p.name),
			Throttle: p.throttle, Quota: p.quota, ApiStages: stage})
		if err != nil {
			return fmt.Errorf("create usage plan %s: %w", p.name, err)
		}
		key, err := c.CreateApiKey(ctx, &apigateway.CreateApiKeyInput{Name: aws.String(p.name), Enabled: true})
		if err != nil {
			return fmt.Errorf("create api key %s: %w", p.name, err)
		}
		if _, err := c.CreateUsagePlanKey(ctx, &apigateway.CreateUsagePlanKeyInput{UsagePlanId: plan.Id, KeyId: key.Id,
			KeyType: aws.String("API_KEY")}); err != nil {
			return fmt.Errorf("create usage plan key %s: %w", p.name, err)
		}
		*p.key = aws.ToString(key.Value)
		if p.plan != nil {
			*p.plan = aws.ToString(plan.Id)
		}
	}
	return addManyKeys(ctx, c, stage, f)
}

// addManyKeys creates the "many" plan (main's limits) and manyKeyCount
// keys on it, eight requests at a time.
func addManyKeys(ctx context.Context, c *apigateway.Client, stage []types.ApiStage, f *fixture) error {
	plan, err := c.CreateUsagePlan(ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("many"),
		Throttle: &types.ThrottleSettings{RateLimit: planRate, BurstLimit: planBurst},
		Quota:    &types.QuotaSettings{Limit: quotaLimit, Period: types.QuotaPeriodTypeMonth}, ApiStages: stage})
	if err != nil {
		return fmt.Errorf("create usage plan many: %w", err)
	}
	f.manyKeys = make([]string, manyKeyCount)
	errs := make([]error, manyKeyCount)
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range manyKeyCount {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			key, err := c.CreateApiKey(ctx, &apigateway.CreateApiKeyInput{Name: aws.String("many" + strconv.Itoa(i)), Enabled: true})
			if err == nil {
				f.manyKeys[i] = aws.ToString(key.Value)
				_, err = c.CreateUsagePlanKey(ctx, &apigateway.CreateUsagePlanKeyInput{UsagePlanId: plan.Id, KeyId: key.Id,
					KeyType: aws.String("API_KEY")})
			}
			if err != nil {
				errs[i] = fmt.Errorf("many-keys key %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// addMethod creates pathPart under parent with GET (API key required)
// proxied to uri.
func addMethod(ctx context.Context, c *apigateway.Client, apiID, parent *string, pathPart, uri string) error {
	r, err := c.CreateResource(ctx, &apigateway.CreateResourceInput{RestApiId: apiID, ParentId: parent, PathPart: aws.String(pathPart)})
	if err != nil {
		return fmt.Errorf("create resource %s: %w", pathPart, err)
	}
	if _, err := c.PutMethod(ctx, &apigateway.PutMethodInput{RestApiId: apiID, ResourceId: r.Id, HttpMethod: aws.String("GET"),
		AuthorizationType: aws.String("NONE"), ApiKeyRequired: true}); err != nil {
		return fmt.Errorf("put method GET %s: %w", pathPart, err)
	}
	if _, err := c.PutIntegration(ctx, &apigateway.PutIntegrationInput{RestApiId: apiID, ResourceId: r.Id, HttpMethod: aws.String("GET"),
		Type: types.IntegrationTypeHttpProxy, IntegrationHttpMethod: aws.String("GET"), Uri: aws.String(uri)}); err != nil {
		return fmt.Errorf("put integration GET %s: %w", pathPart, err)
	}
	return nil
}

// setPlanThrottle replaces the plan throttle (rate 0 and burst 0 refuse
// every request).
func setPlanThrottle(ctx context.Context, c *apigateway.Client, planID string, rate float64, burst int32) error {
	_, err := c.UpdateUsagePlan(ctx, &apigateway.UpdateUsagePlanInput{UsagePlanId: aws.String(planID),
		PatchOperations: []types.PatchOperation{
			{Op: types.OpReplace, Path: aws.String("/throttle/rateLimit"), Value: aws.String(strconv.FormatFloat(rate, 'f', -1, 64))},
			{Op: types.OpReplace, Path: aws.String("/throttle/burstLimit"), Value: aws.String(strconv.Itoa(int(burst)))},
		}})
	return err
}
