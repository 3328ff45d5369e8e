package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
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
	settledKey            string // a key of the settled-cost plan
	probeKey, probePlanID string
	manyKeys              []string // manyKeyCount keys of one plan like main's
	manyPlanID            string
	moreKeys              []string // moreKeyCount keys of the same plan, imported in one file
}

// manyKeyCount is the number of keys the many-keys path takes in turn:
// enough that a batch of decisions rarely holds one key twice, so per-key
// state is read and written once per request, as with many partners.
const manyKeyCount = 256

// moreKeyCount is the number of keys of the 10,000-keys path: more than a
// node's recent decisions hold, so almost every request's key state is
// cold on the node.
const moreKeyCount = 10_000

// Settings of the rule and cache-miss paths.
const (
	ruleName = "per-key" // the TOKEN_BUCKET rule on GET /ruled, keyed by API key
	missTTL  = 1         // seconds: GET /miss caches for 1 s, keyed by query parameter n
)

// setup creates the bench API through the admin API: GET /uncached, GET
// /cached, GET /ruled and GET /miss (all key required, HTTP_PROXY to the
// echo upstream), stage "bench" with a stage-wide throttle, a method
// throttle on /uncached, caching on /cached and /miss (keyed by the query
// parameter n, so a request with a new n is a miss) and a TOKEN_BUCKET rule
// on /ruled (through the bearer token admin; the SDK has no rules), four
// plans with one key each (one of them charging a settled cost) and the
// many-keys plan.
func setup(ctx context.Context, c *apigateway.Client, admin, token, upstream string) (fixture, error) {
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
	for _, p := range []string{"uncached", "cached", "ruled", "miss"} {
		var keyParams []string
		if p == "miss" {
			keyParams = []string{"method.request.querystring.n"}
		}
		if err := addMethod(ctx, c, api.Id, res.Items[0].Id, p, upstream+"/"+p, keyParams); err != nil {
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
	if err := addRule(ctx, admin, token, f.apiID); err != nil {
		return f, err
	}
	return f, addPlans(ctx, c, &f)
}

// addRule creates the TOKEN_BUCKET rule of GET /ruled, one bucket per API
// key, as high as the plan's so it never refuses in a run.
func addRule(ctx context.Context, admin, token, apiID string) error {
	body, err := json.Marshal(map[string]any{"name": ruleName, "resourcePath": "/ruled", "httpMethod": "GET",
		"keyBy": []string{"apiKey"}, "algorithm": "TOKEN_BUCKET", "rateLimit": planRate, "burstLimit": planBurst})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		"http://"+admin+"/restapis/"+apiID+"/stages/"+stageName+"/ratelimitrules", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("create rate-limit rule: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		return fmt.Errorf("create rate-limit rule: %s", res.Status)
	}
	return nil
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
		op("/~1miss/GET/caching/enabled", true),
		op("/~1miss/GET/caching/ttlInSeconds", missTTL),
	}
}

// addPlans creates the main, over-limit, probe and settled-cost plans and
// their keys. The settled plan charges each request what its response's
// Content-Length says (tollgate:cost=header:Content-Length: a header every
// answer of the upstream has), reserving 1 unit, and has no throttle (it
// counts bytes, not requests): its requests cost the settle's round trip.
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
		{"settled", nil, &types.QuotaSettings{Limit: quotaLimit, Period: types.QuotaPeriodTypeMonth}, &f.settledKey, nil},
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
		if p.name == "settled" {
			if _, err := c.TagResource(ctx, &apigateway.TagResourceInput{
				ResourceArn: aws.String("arn:aws:apigateway:us-east-1::/usageplans/" + aws.ToString(plan.Id)),
				Tags:        map[string]string{"tollgate:cost": "header:Content-Length"}}); err != nil {
				return fmt.Errorf("tag usage plan %s: %w", p.name, err)
			}
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
	f.manyPlanID = aws.ToString(plan.Id)
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
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return importMoreKeys(ctx, c, f)
}

// importMoreKeys imports moreKeyCount keys on the many-keys plan in one
// ImportApiKeys file (values of 40 random letters and digits, as AWS's).
func importMoreKeys(ctx context.Context, c *apigateway.Client, f *fixture) error {
	var b strings.Builder
	b.WriteString("Name,Key,Enabled,UsagePlanIds\n")
	f.moreKeys = make([]string, moreKeyCount)
	for i := range f.moreKeys {
		f.moreKeys[i] = randomValue(40)
		fmt.Fprintf(&b, "more%d,%s,true,%s\n", i, f.moreKeys[i], f.manyPlanID)
	}
	out, err := c.ImportApiKeys(ctx, &apigateway.ImportApiKeysInput{Body: []byte(b.String()), Format: types.ApiKeysFormatCsv,
		FailOnWarnings: true})
	if err != nil {
		return fmt.Errorf("import %d keys: %w", moreKeyCount, err)
	}
	if len(out.Ids) != moreKeyCount {
		return fmt.Errorf("import %d keys: %d imported", moreKeyCount, len(out.Ids))
	}
	return nil
}

// randomValue returns n random letters and digits.
func randomValue(n int) string {
	const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = digits[int(b[i])%len(digits)]
	}
	return string(b)
}

// addMethod creates pathPart under parent with GET (API key required)
// proxied to uri, its cache keyed by keyParams.
func addMethod(ctx context.Context, c *apigateway.Client, apiID, parent *string, pathPart, uri string, keyParams []string) error {
	r, err := c.CreateResource(ctx, &apigateway.CreateResourceInput{RestApiId: apiID, ParentId: parent, PathPart: aws.String(pathPart)})
	if err != nil {
		return fmt.Errorf("create resource %s: %w", pathPart, err)
	}
	if _, err := c.PutMethod(ctx, &apigateway.PutMethodInput{RestApiId: apiID, ResourceId: r.Id, HttpMethod: aws.String("GET"),
		AuthorizationType: aws.String("NONE"), ApiKeyRequired: true}); err != nil {
		return fmt.Errorf("put method GET %s: %w", pathPart, err)
	}
	if _, err := c.PutIntegration(ctx, &apigateway.PutIntegrationInput{RestApiId: apiID, ResourceId: r.Id, HttpMethod: aws.String("GET"),
		Type: types.IntegrationTypeHttpProxy, IntegrationHttpMethod: aws.String("GET"), Uri: aws.String(uri),
		CacheKeyParameters: keyParams}); err != nil {
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
