package main

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"

	"tollgate/cmd/echo/echoserver"
	"tollgate/internal/clocktest"
	"tollgate/internal/waittest"
)

const (
	testAccessKey = "AKIDTOLLGATETEST"
	testSecretKey = "tollgate-test-secret"
)

// stack is one admin node and two gateway nodes sharing one PostgreSQL
// database and one Redis key prefix, plus the echo upstream.
type stack struct {
	admin    *Main
	gateways [2]*Main
	echo     *echoserver.Server
	echoURL  string
	sdk      *apigateway.Client
	clock    *clocktest.Clock // every node's script clock; zero: Redis TIME
	// keyScanEvery is the admin's expiry notice scan interval (0: default).
	keyScanEvery time.Duration
}

// mustStack starts the stack; everything is closed at test cleanup.
func mustStack(t *testing.T) *stack {
	t.Helper()
	return mustStackWith(t, stackOptions{})
}

// call sends one GET through gateway node i.
func (s *stack) call(t *testing.T, i int, apiID, path, key string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+s.gateways[i].GatewayAddr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = apiID + ".execute-api.localhost"
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s via gateway %d: %v", path, i, err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	return res
}

// waitStatus calls until the status is want on both gateways, or fails
// after limit.
func (s *stack) waitStatus(t *testing.T, apiID, path, key string, want int, limit time.Duration) time.Duration {
	t.Helper()
	var a, b int
	took, ok := waittest.Poll(limit, func() bool {
		a, b = s.call(t, 0, apiID, path, key).StatusCode, s.call(t, 1, apiID, path, key).StatusCode
		return a == want && b == want
	})
	if !ok {
		t.Fatalf("%s: got %d and %d from the two gateways after %v, want %d", path, a, b, limit, want)
	}
	return took
}

type walkConfig struct {
	apiID, keyID, keyValue, planID string
}

// setupWalk creates, through the AWS SDK, an API with GET /items/{id}
// proxied to the echo upstream (API key required), stage prod, a usage plan
// with throttle 10/s burst 3 and quota 6 per DAY, an enabled key and the
// association.
func (s *stack) setupWalk(t *testing.T, ctx context.Context) walkConfig {
	t.Helper()
	return s.setupWalkThrottle(t, ctx, 10)
}

// setupWalkThrottle is setupWalk with the plan's rate limit given
// (requests per second; burst stays 3).
func (s *stack) setupWalkThrottle(t *testing.T, ctx context.Context, rate float64) walkConfig {
	t.Helper()
	c := s.sdk
	api, _, item := s.itemsAPI(t, ctx, "walk")
	_, err := c.PutMethod(ctx, &apigateway.PutMethodInput{RestApiId: api, ResourceId: item, HttpMethod: aws.String("GET"),
		AuthorizationType: aws.String("NONE"), ApiKeyRequired: true})
	must(t, "PutMethod", err)
	_, err = c.PutIntegration(ctx, &apigateway.PutIntegrationInput{RestApiId: api, ResourceId: item, HttpMethod: aws.String("GET"),
		Type: types.IntegrationTypeHttpProxy, IntegrationHttpMethod: aws.String("GET"), Uri: aws.String(s.echoURL + "/things/{id}")})
	must(t, "PutIntegration", err)
	_, err = c.CreateDeployment(ctx, &apigateway.CreateDeploymentInput{RestApiId: api, StageName: aws.String("prod")})
	must(t, "CreateDeployment", err)
	plan, err := c.CreateUsagePlan(ctx, &apigateway.CreateUsagePlanInput{
		Name:      aws.String("walk-plan"),
		Throttle:  &types.ThrottleSettings{RateLimit: rate, BurstLimit: 3},
		Quota:     &types.QuotaSettings{Limit: 6, Period: types.QuotaPeriodTypeDay},
		ApiStages: []types.ApiStage{{ApiId: api, Stage: aws.String("prod")}},
	})
	must(t, "CreateUsagePlan", err)
	key, err := c.CreateApiKey(ctx, &apigateway.CreateApiKeyInput{Name: aws.String("walker"), Enabled: true})
	must(t, "CreateApiKey", err)
	_, err = c.CreateUsagePlanKey(ctx, &apigateway.CreateUsagePlanKeyInput{UsagePlanId: plan.Id, KeyId: key.Id, KeyType: aws.String("API_KEY")})
	must(t, "CreateUsagePlanKey", err)
	return walkConfig{apiID: *api, keyID: *key.Id, keyValue: *key.Value, planID: *plan.Id}
}

// itemsAPI creates, through the SDK, an API named name with the resources
// /items and /items/{id}, and returns the ids of the API, its root and
// /items/{id}.
func (s *stack) itemsAPI(t *testing.T, ctx context.Context, name string) (api, root, item *string) {
	t.Helper()
	c := s.sdk
	a, err := c.CreateRestApi(ctx, &apigateway.CreateRestApiInput{Name: aws.String(name)})
	must(t, "CreateRestApi", err)
	res, err := c.GetResources(ctx, &apigateway.GetResourcesInput{RestApiId: a.Id})
	must(t, "GetResources", err)
	items, err := c.CreateResource(ctx, &apigateway.CreateResourceInput{RestApiId: a.Id, ParentId: res.Items[0].Id, PathPart: aws.String("items")})
	must(t, "CreateResource items", err)
	it, err := c.CreateResource(ctx, &apigateway.CreateResourceInput{RestApiId: a.Id, ParentId: items.Id, PathPart: aws.String("{id}")})
	must(t, "CreateResource {id}", err)
	return a.Id, res.Items[0].Id, it.Id
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestEndToEnd walks the main job across two gateway nodes sharing one
// Redis: 200 proxied → burst exhausted (429 Too Many Requests, Retry-After)
// → quota exhausted (429 Limit Exceeded, X-RateLimit-Remaining 0) → key
// disabled through UpdateApiKey refused with 403 within 1 s on both nodes →
// unknown and missing keys 403.
func TestEndToEnd(t *testing.T) {
	s := mustStack(t)
	ctx := context.Background()
	// Rate 0.001/s: nothing refills during the burst phase, however slow
	// the machine.
	w := s.setupWalkThrottle(t, ctx, 0.001)

	// The config reaches both gateways: the first 200 also proves proxying.
	var first int
	if _, ok := waittest.Poll(2*time.Second, func() bool {
		first = s.call(t, 0, w.apiID, "/prod/items/1", w.keyValue).StatusCode
		return first == http.StatusOK
	}); !ok {
		t.Fatalf("first call: got %d after 2s, want 200", first)
	}
	if got := s.echo.Hits(); got != 1 {
		t.Fatalf("upstream hits after the first 200: got %d, want 1", got)
	}
	// Quota: 6 per day; 1 used. Burst 3: 1 used, so two more then 429.
	for i, want := range []int{200, 200, 429} {
		res := s.call(t, (i+1)%2, w.apiID, "/prod/items/"+strconv.Itoa(i+2), w.keyValue)
		if res.StatusCode != want {
			t.Fatalf("burst request %d: got %d, want %d", i+2, res.StatusCode, want)
		}
		if want == 429 {
			assertHeader(t, res, "x-amzn-ErrorType", "TooManyRequestsException")
			// One token at 0.001/s takes 1000 s (a little less has passed).
			if ra, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || ra < 990 || ra > 1000 {
				t.Errorf("Retry-After: got %q, want about 1000", res.Header.Get("Retry-After"))
			}
			assertHeader(t, res, "X-RateLimit-Remaining", "3") // the quota, uncharged by the refusal
		}
	}
	if got := s.echo.Hits(); got != 3 {
		t.Fatalf("upstream hits after the burst: got %d, want 3", got)
	}
	// Raise the throttle (existing tokens stay: none), then spend the rest
	// of the quota: remaining 2, 1, 0. Throttled calls while the change
	// propagates cost no quota.
	_, err := s.sdk.UpdateUsagePlan(ctx, &apigateway.UpdateUsagePlanInput{UsagePlanId: aws.String(w.planID),
		PatchOperations: []types.PatchOperation{
			{Op: types.OpReplace, Path: aws.String("/throttle/rateLimit"), Value: aws.String("1000")},
			{Op: types.OpReplace, Path: aws.String("/throttle/burstLimit"), Value: aws.String("1000")},
		}})
	must(t, "UpdateUsagePlan", err)
	for i, want := range []string{"2", "1", "0"} {
		res := s.call(t, i%2, w.apiID, "/prod/items/q", w.keyValue)
		if i == 0 { // the raised throttle may take a moment to reach the node
			waittest.Poll(2*time.Second, func() bool {
				if res.StatusCode != 429 {
					return true
				}
				assertHeader(t, res, "X-RateLimit-Remaining", "3")
				res = s.call(t, i%2, w.apiID, "/prod/items/q", w.keyValue)
				return false
			})
		}
		if res.StatusCode != 200 {
			t.Fatalf("quota request %d: got %d, want 200", i+1, res.StatusCode)
		}
		assertHeader(t, res, "X-RateLimit-Limit", "6")
		assertHeader(t, res, "X-RateLimit-Remaining", want)
	}
	for i := range 2 {
		res := s.call(t, i, w.apiID, "/prod/items/over", w.keyValue)
		if res.StatusCode != 429 {
			t.Fatalf("over quota via gateway %d: got %d, want 429", i, res.StatusCode)
		}
		assertHeader(t, res, "x-amzn-ErrorType", "LimitExceededException")
		assertHeader(t, res, "X-RateLimit-Remaining", "0")
		if res.Header.Get("Retry-After") == "" {
			t.Errorf("over quota: no Retry-After")
		}
	}
	if got := s.echo.Hits(); got != 6 {
		t.Fatalf("upstream hits at the end of the quota: got %d, want 6", got)
	}

	// Disable the key: both gateways refuse it within 1 s.
	_, err = s.sdk.UpdateApiKey(ctx, &apigateway.UpdateApiKeyInput{ApiKey: aws.String(w.keyID),
		PatchOperations: []types.PatchOperation{{Op: types.OpReplace, Path: aws.String("/enabled"), Value: aws.String("false")}}})
	must(t, "UpdateApiKey", err)
	took := s.waitStatus(t, w.apiID, "/prod/items/1", w.keyValue, http.StatusForbidden, time.Second)
	t.Logf("disabled key refused on both gateways %v after UpdateApiKey returned", took)

	for name, key := range map[string]string{"unknown": "NoSuchKeyNoSuchKeyNoSuchKey01", "missing": "", "malformed": "short"} {
		for i := range 2 {
			res := s.call(t, i, w.apiID, "/prod/items/1", key)
			if res.StatusCode != http.StatusForbidden {
				t.Errorf("%s key via gateway %d: got %d, want 403", name, i, res.StatusCode)
			}
			assertHeader(t, res, "x-amzn-ErrorType", "ForbiddenException")
		}
	}
	if got := s.echo.Hits(); got != 6 {
		t.Errorf("upstream hits after refusals: got %d, want 6", got)
	}
}

// TestConcurrentQuotaAcrossGateways: many goroutines over both gateways
// admit exactly the quota.
func TestConcurrentQuotaAcrossGateways(t *testing.T) {
	s := mustStack(t)
	ctx := context.Background()
	w := s.setupWalk(t, ctx)
	_, err := s.sdk.UpdateUsagePlan(ctx, &apigateway.UpdateUsagePlanInput{UsagePlanId: aws.String(w.planID),
		PatchOperations: []types.PatchOperation{
			{Op: types.OpReplace, Path: aws.String("/throttle/rateLimit"), Value: aws.String("10000")},
			{Op: types.OpReplace, Path: aws.String("/throttle/burstLimit"), Value: aws.String("5000")},
			{Op: types.OpReplace, Path: aws.String("/quota/limit"), Value: aws.String("50")},
		}})
	must(t, "UpdateUsagePlan", err)
	// Wait until both nodes have the new plan: Limit header 50.
	var a, b string
	if _, ok := waittest.Poll(2*time.Second, func() bool {
		a = s.call(t, 0, w.apiID, "/prod/items/warm", w.keyValue).Header.Get("X-RateLimit-Limit")
		b = s.call(t, 1, w.apiID, "/prod/items/warm", w.keyValue).Header.Get("X-RateLimit-Limit")
		return a == "50" && b == "50"
	}); !ok {
		t.Fatalf("new quota not enforced within 2s: limits %q and %q", a, b)
	}
	before := s.echo.Hits()
	var mu sync.Mutex
	ok := 0
	var wg sync.WaitGroup
	for g := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				if s.call(t, g%2, w.apiID, "/prod/items/c", w.keyValue).StatusCode == 200 {
					mu.Lock()
					ok++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	// Warm-up calls used some of the 50; the rest must be admitted exactly.
	used := int(before)
	if want := 50 - used; ok != want {
		t.Errorf("admitted %d of 200 concurrent requests, want exactly %d (quota 50, %d used before)", ok, want, used)
	}
	if got := s.echo.Hits(); int(got) != 50 {
		t.Errorf("upstream hits: got %d, want 50", got)
	}
}

func assertHeader(t *testing.T, res *http.Response, name, want string) {
	t.Helper()
	if got := res.Header.Get(name); got != want {
		t.Errorf("%s %s: header %s = %q, want %q", res.Request.Method, res.Request.URL.Path, name, got, want)
	}
}

// TestShutdownDrainsInFlight: Close (what SIGTERM triggers) lets a request
// already being proxied finish with its upstream's answer, then the node
// stops accepting connections.
func TestShutdownDrainsInFlight(t *testing.T) {
	s := mustStack(t)
	w := s.setupWalk(t, context.Background())
	s.waitStatus(t, w.apiID, "/prod/items/warm", w.keyValue, http.StatusOK, 2*time.Second)

	done := make(chan int, 1)
	before := s.echo.Hits()
	go func() {
		res := s.call(t, 0, w.apiID, "/prod/items/slow?delay=400ms", w.keyValue)
		done <- res.StatusCode
	}()
	waittest.Until(t, "the request at the upstream", 5*time.Second, func() bool { return s.echo.Hits() > before })
	closed := make(chan error, 1)
	go func() { closed <- s.gateways[0].Close() }()
	select {
	case code := <-done:
		if code != http.StatusOK {
			t.Fatalf("in-flight request during shutdown: got %d, want 200", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("in-flight request did not finish during shutdown")
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := http.Get("http://" + s.gateways[0].GatewayAddr + "/healthz"); err == nil {
		t.Fatal("gateway still accepts connections after Close")
	}
}
