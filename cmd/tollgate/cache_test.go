package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"
	"github.com/aws/smithy-go"

	"tollgate/internal/waittest"
)

// cacheWalk is the API of the cache walk: GET /items (key required,
// cacheKeyParameters q) proxied to the echo upstream, stage prod with the
// cache on, and a key on a generous plan.
type cacheWalk struct {
	apiID, key string
}

// setupCacheWalk creates the cache walk's API through the AWS SDK, as an
// operator following the README would.
func (s *stack) setupCacheWalk(t *testing.T, ctx context.Context) cacheWalk {
	t.Helper()
	c := s.sdk
	api, err := c.CreateRestApi(ctx, &apigateway.CreateRestApiInput{Name: aws.String("cached")})
	must(t, "CreateRestApi", err)
	res, err := c.GetResources(ctx, &apigateway.GetResourcesInput{RestApiId: api.Id})
	must(t, "GetResources", err)
	items, err := c.CreateResource(ctx, &apigateway.CreateResourceInput{RestApiId: api.Id, ParentId: res.Items[0].Id, PathPart: aws.String("items")})
	must(t, "CreateResource", err)
	_, err = c.PutMethod(ctx, &apigateway.PutMethodInput{RestApiId: api.Id, ResourceId: items.Id, HttpMethod: aws.String("GET"),
		AuthorizationType: aws.String("NONE"), ApiKeyRequired: true})
	must(t, "PutMethod", err)
	_, err = c.PutIntegration(ctx, &apigateway.PutIntegrationInput{RestApiId: api.Id, ResourceId: items.Id, HttpMethod: aws.String("GET"),
		Type: types.IntegrationTypeHttpProxy, IntegrationHttpMethod: aws.String("GET"), Uri: aws.String(s.echoURL + "/things"),
		CacheKeyParameters: []string{"method.request.querystring.q"}})
	must(t, "PutIntegration", err)
	_, err = c.CreateDeployment(ctx, &apigateway.CreateDeploymentInput{RestApiId: api.Id, StageName: aws.String("prod")})
	must(t, "CreateDeployment", err)
	_, err = c.UpdateStage(ctx, &apigateway.UpdateStageInput{RestApiId: api.Id, StageName: aws.String("prod"), PatchOperations: []types.PatchOperation{
		{Op: types.OpReplace, Path: aws.String("/cacheClusterEnabled"), Value: aws.String("true")},
		{Op: types.OpReplace, Path: aws.String("/cacheClusterSize"), Value: aws.String("0.5")},
		{Op: types.OpReplace, Path: aws.String("/*/*/caching/enabled"), Value: aws.String("true")},
		{Op: types.OpReplace, Path: aws.String("/*/*/caching/ttlInSeconds"), Value: aws.String("300")},
	}})
	must(t, "UpdateStage", err)
	plan, err := c.CreateUsagePlan(ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("cached-plan"),
		Throttle:  &types.ThrottleSettings{RateLimit: 1000, BurstLimit: 1000},
		ApiStages: []types.ApiStage{{ApiId: api.Id, Stage: aws.String("prod")}}})
	must(t, "CreateUsagePlan", err)
	key, err := c.CreateApiKey(ctx, &apigateway.CreateApiKeyInput{Name: aws.String("cached-key"), Enabled: true})
	must(t, "CreateApiKey", err)
	_, err = c.CreateUsagePlanKey(ctx, &apigateway.CreateUsagePlanKeyInput{UsagePlanId: plan.Id, KeyId: key.Id, KeyType: aws.String("API_KEY")})
	must(t, "CreateUsagePlanKey", err)
	return cacheWalk{apiID: *api.Id, key: *key.Value}
}

// cached is one answer of the cache walk: X-Cache and the upstream's hit
// number in the body.
type cached struct {
	status  int
	xcache  string
	hit     int64
	warning string
}

// get sends GET path through gateway node i and reads X-Cache and the echo
// upstream's hit number.
func (s *stack) get(t *testing.T, i int, w cacheWalk, path string) cached {
	t.Helper()
	return s.getWith(t, i, w, w.key, path, "")
}

// getWith is get with the API key key and a Cache-Control header (when
// not "").
func (s *stack) getWith(t *testing.T, i int, w cacheWalk, key, path, cacheControl string) cached {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+s.gateways[i].GatewayAddr+path, nil)
	must(t, "NewRequest", err)
	req.Host = w.apiID + ".execute-api.localhost"
	req.Header.Set("x-api-key", key)
	if cacheControl != "" {
		req.Header.Set("Cache-Control", cacheControl)
	}
	res, err := http.DefaultClient.Do(req)
	must(t, "GET "+path, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	must(t, "read body", err)
	var reply struct{ Hits int64 }
	_ = json.Unmarshal(body, &reply)
	return cached{status: res.StatusCode, xcache: res.Header.Get("X-Cache"), hit: reply.Hits, warning: res.Header.Get("Warning")}
}

// waitCached calls node i until the answer is a 200 with an X-Cache (the
// stage settings reached the node), and returns it.
func (s *stack) waitCached(t *testing.T, i int, w cacheWalk, path string) cached {
	t.Helper()
	var got cached
	waittest.Poll(5*time.Second, func() bool {
		got = s.get(t, i, w, path)
		return got.status == http.StatusOK && got.xcache != ""
	})
	return got
}

// waitHit calls node i until it answers from the cache (the previous
// fill, written after its response was sent, has landed) or 2 s passed.
func (s *stack) waitHit(t *testing.T, i int, w cacheWalk, path string) cached {
	t.Helper()
	var got cached
	waittest.Poll(2*time.Second, func() bool {
		got = s.get(t, i, w, path)
		return got.xcache == "Hit"
	})
	return got
}

// TestCacheEndToEnd walks the README's response cache as a new user:
// the second call of a cached method is a hit on either node with the
// upstream's hit count unchanged; FlushStageCache through the SDK (202)
// makes the next call a miss on each node; an out-of-range TTL is 400.
func TestCacheEndToEnd(t *testing.T) {
	s := mustStack(t)
	ctx := context.Background()
	w := s.setupCacheWalk(t, ctx)
	for i := range s.gateways {
		if got := s.waitCached(t, i, w, "/prod/items?q=warm"+string(rune('0'+i))); got.xcache != "Miss" {
			t.Fatalf("node %d: first call: got %+v, want a 200 Miss", i+1, got)
		}
	}
	first := s.get(t, 0, w, "/prod/items?q=a")
	hits := s.echo.Hits()
	second := s.waitHit(t, 0, w, "/prod/items?q=a")
	if first.xcache != "Miss" || second.xcache != "Hit" || second.hit != first.hit {
		t.Errorf("two calls: got %+v then %+v, want a Miss then a Hit of the same upstream answer", first, second)
	}
	if other := s.get(t, 1, w, "/prod/items?q=a"); other.xcache != "Hit" || other.hit != first.hit {
		t.Errorf("node 2: got %+v, want a Hit of upstream answer %d", other, first.hit)
	}
	if got := s.echo.Hits(); got != hits {
		t.Errorf("upstream hits after the hits: got %d, want %d", got, hits)
	}
	for i := range s.gateways {
		_, err := s.sdk.FlushStageCache(ctx, &apigateway.FlushStageCacheInput{RestApiId: aws.String(w.apiID), StageName: aws.String("prod")})
		must(t, "FlushStageCache", err)
		if got := s.get(t, i, w, "/prod/items?q=a"); got.xcache != "Miss" || got.hit <= first.hit {
			t.Errorf("node %d after a flush: got %+v, want a Miss with a new upstream answer", i+1, got)
		}
	}
	_, err := s.sdk.UpdateStage(ctx, &apigateway.UpdateStageInput{RestApiId: aws.String(w.apiID), StageName: aws.String("prod"),
		PatchOperations: []types.PatchOperation{{Op: types.OpReplace, Path: aws.String("/*/*/caching/ttlInSeconds"), Value: aws.String("3601")}}})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "BadRequestException" {
		t.Errorf("ttl 3601: got %v, want BadRequestException", err)
	}
}

// TestCacheInvalidateTag: a key created with the tag
// tollgate:invalidate-cache=true refreshes an entry with
// "Cache-Control: max-age=0"; an untagged key is served the entry with a
// Warning (the default strategy) and reaches no upstream.
func TestCacheInvalidateTag(t *testing.T) {
	s := mustStack(t)
	ctx := context.Background()
	w := s.setupCacheWalk(t, ctx)
	plans, err := s.sdk.GetUsagePlans(ctx, &apigateway.GetUsagePlansInput{})
	must(t, "GetUsagePlans", err)
	key, err := s.sdk.CreateApiKey(ctx, &apigateway.CreateApiKeyInput{Name: aws.String("ops"), Enabled: true,
		Tags: map[string]string{"tollgate:invalidate-cache": "true"}})
	must(t, "CreateApiKey", err)
	_, err = s.sdk.CreateUsagePlanKey(ctx, &apigateway.CreateUsagePlanKeyInput{UsagePlanId: plans.Items[0].Id, KeyId: key.Id, KeyType: aws.String("API_KEY")})
	must(t, "CreateUsagePlanKey", err)
	s.waitCached(t, 0, w, "/prod/items?q=a")
	filled := s.waitHit(t, 0, w, "/prod/items?q=a")
	untagged := s.getWith(t, 0, w, w.key, "/prod/items?q=a", "max-age=0")
	if untagged.xcache != "Hit" || untagged.hit != filled.hit || untagged.warning == "" {
		t.Errorf("untagged max-age=0: got %+v, want a Hit of answer %d with a Warning", untagged, filled.hit)
	}
	ops := cacheWalk{apiID: w.apiID, key: *key.Value}
	var tagged cached
	waittest.Poll(5*time.Second, func() bool { // until the association reached the node
		tagged = s.getWith(t, 1, ops, ops.key, "/prod/items?q=a", "max-age=0")
		return tagged.status == http.StatusOK
	})
	if tagged.xcache != "Refresh" || tagged.hit <= filled.hit {
		t.Errorf("tagged max-age=0: got %+v, want a Refresh with a new upstream answer", tagged)
	}
	// The refreshed entry is written after the Refresh response is sent,
	// so the other node may serve the old entry for a moment.
	var after cached
	waittest.Poll(2*time.Second, func() bool {
		after = s.waitHit(t, 0, w, "/prod/items?q=a")
		return after.hit == tagged.hit
	})
	if after.xcache != "Hit" || after.hit != tagged.hit {
		t.Errorf("after the refresh: got %+v, want a Hit of answer %d", after, tagged.hit)
	}
}

// TestCacheResizeFlushes: changing cacheClusterSize flushes the stage, as
// AWS; the size is reported back.
func TestCacheResizeFlushes(t *testing.T) {
	s := mustStack(t)
	ctx := context.Background()
	w := s.setupCacheWalk(t, ctx)
	s.waitCached(t, 0, w, "/prod/items?q=a")
	before := s.waitHit(t, 0, w, "/prod/items?q=a")
	st, err := s.sdk.UpdateStage(ctx, &apigateway.UpdateStageInput{RestApiId: aws.String(w.apiID), StageName: aws.String("prod"),
		PatchOperations: []types.PatchOperation{{Op: types.OpReplace, Path: aws.String("/cacheClusterSize"), Value: aws.String("1.6")}}})
	must(t, "UpdateStage cacheClusterSize", err)
	if st.CacheClusterSize != types.CacheClusterSizeSize1Point6Gb {
		t.Errorf("cacheClusterSize: got %q, want 1.6", st.CacheClusterSize)
	}
	if got := s.get(t, 1, w, "/prod/items?q=a"); got.xcache != "Miss" || got.hit <= before.hit {
		t.Errorf("after a resize: got %+v, want a Miss with a new upstream answer", got)
	}
}

// TestCacheInvalidateTagByTagResource: tagging a key that exists with
// tollgate:invalidate-cache=true through TagResource reaches both gateway
// nodes with the key's republished record (its max-age=0 requests start
// refreshing), and UntagResource takes the grant back.
func TestCacheInvalidateTagByTagResource(t *testing.T) {
	s := mustStack(t)
	ctx := context.Background()
	w := s.setupCacheWalk(t, ctx)
	keys, err := s.sdk.GetApiKeys(ctx, &apigateway.GetApiKeysInput{})
	must(t, "GetApiKeys", err)
	arn := aws.String("arn:aws:apigateway:us-east-1::/apikeys/" + *keys.Items[0].Id)
	s.waitCached(t, 0, w, "/prod/items?q=t")
	s.waitHit(t, 0, w, "/prod/items?q=t")
	// waitFor asks node i with the walk's key and max-age=0 until X-Cache is want.
	waitFor := func(i int, want string) cached {
		var got cached
		waittest.Poll(5*time.Second, func() bool {
			got = s.getWith(t, i, w, w.key, "/prod/items?q=t", "max-age=0")
			return got.xcache == want
		})
		return got
	}
	if got := s.getWith(t, 1, w, w.key, "/prod/items?q=t", "max-age=0"); got.xcache != "Hit" || got.warning == "" {
		t.Fatalf("before the tag: got %+v, want a Hit with a Warning", got)
	}
	_, err = s.sdk.TagResource(ctx, &apigateway.TagResourceInput{ResourceArn: arn, Tags: map[string]string{"tollgate:invalidate-cache": "true"}})
	must(t, "TagResource", err)
	for i := range 2 {
		if got := waitFor(i, "Refresh"); got.xcache != "Refresh" {
			t.Errorf("node %d after TagResource: got %+v, want a Refresh", i, got)
		}
	}
	_, err = s.sdk.UntagResource(ctx, &apigateway.UntagResourceInput{ResourceArn: arn, TagKeys: []string{"tollgate:invalidate-cache"}})
	must(t, "UntagResource", err)
	if got := waitFor(0, "Hit"); got.xcache != "Hit" {
		t.Errorf("after UntagResource: got %+v, want a Hit again", got)
	}
}
