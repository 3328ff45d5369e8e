package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/apigateway"

	"tollgate/internal/hammertest"
	"tollgate/plans"
)

// adminJSON sends method path with body (JSON, or nil) to the admin API
// with the stack's bearer token and decodes a 2xx answer into out (when
// not nil); any other status fails the test.
func (s *stack) adminJSON(t *testing.T, method, path string, body any, out any) {
	t.Helper()
	s.adminJSONAs(t, testAdminToken, method, path, body, out)
}

// adminJSONAs is adminJSON with the bearer token given.
func (s *stack) adminJSONAs(t *testing.T, token, method, path string, body any, out any) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		must(t, "encode", err)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+s.admin.AdminAddr+path, r)
	must(t, "new request", err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	must(t, method+" "+path, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, b)
	}
	if out != nil {
		must(t, "decode "+path, json.Unmarshal(b, out))
	}
}

// mustRule creates a rate-limit rule on api's stage prod and returns it
// (with its id).
func (s *stack) mustRule(t *testing.T, apiID string, r map[string]any) plans.RateLimitRule {
	t.Helper()
	var out plans.RateLimitRule
	s.adminJSON(t, "POST", "/restapis/"+apiID+"/stages/prod/ratelimitrules", r, &out)
	return out
}

// sendFrom makes one request through gateway node i from client address
// ip (X-Forwarded-For, trusted by the stack) and returns its status.
func (s *stack) sendFrom(t *testing.T, i int, method, apiID, path, ip string, hdr ...string) int {
	t.Helper()
	h := http.Header{"X-Forwarded-For": {ip}}
	for j := 0; j+1 < len(hdr); j += 2 {
		h.Set(hdr[j], hdr[j+1])
	}
	return s.send(t, i, method, apiID, path, h).StatusCode
}

// Rate-limit rules through the whole stack: created with the admin API,
// live on both gateway nodes within the push bound, a per-IP rule
// protects a public method exactly over both nodes, and a rule switched
// to shadow mode only reports (its counters kept).
func TestRulesArePushedLiveAndExactOverTwoNodes(t *testing.T) {
	t.Parallel()
	logs := &logBuffer{}
	s := mustStackWith(t, stackOptions{adminToken: testAdminToken, trustedProxies: []string{"127.0.0.0/8"}, logs: logs})
	api := s.mustCaseAPI(t)
	s.sync(t)
	for i := range 4 { // nothing limits the public method yet
		if st := s.sendFrom(t, i%2, "OPTIONS", api.id, "/prod/items", "203.0.113.1"); st != 200 {
			t.Fatalf("before the rule: %d", st)
		}
	}
	rule := s.mustRule(t, api.id, map[string]any{"name": "per-ip", "resourcePath": "/items", "httpMethod": "OPTIONS",
		"keyBy": []string{"ip"}, "algorithm": "FIXED_WINDOW", "limit": 3, "windowSeconds": 3600})
	t.Logf("rule live on both nodes %v after its 201", s.sync(t))

	admitted := 0
	for i := range 10 {
		if s.sendFrom(t, i%2, "OPTIONS", api.id, "/prod/items", "203.0.113.1") == 200 {
			admitted++
		}
	}
	if admitted != 3 {
		t.Errorf("10 requests of one address over both nodes: %d admitted, want exactly 3", admitted)
	}
	if st := s.sendFrom(t, 1, "OPTIONS", api.id, "/prod/items", "203.0.113.2"); st != 200 {
		t.Errorf("another address: %d, want 200", st)
	}

	// shadow mode: the refused address goes on, the would-be refusal is
	// logged; back to enforce, the counts made meanwhile still hold
	s.adminJSON(t, "PATCH", "/restapis/"+api.id+"/stages/prod/ratelimitrules/"+rule.ID,
		map[string]any{"patchOperations": []map[string]string{{"op": "replace", "path": "/mode", "value": "SHADOW"}}}, nil)
	s.sync(t)
	for i := range 4 {
		if st := s.sendFrom(t, i%2, "OPTIONS", api.id, "/prod/items", "203.0.113.1"); st != 200 {
			t.Errorf("shadow request %d: %d, want 200", i+1, st)
		}
	}
	if n := strings.Count(logs.String(), "shadow limit would refuse"); n != 4 {
		t.Errorf("%d would-be refusals logged, want 4", n)
	}
	s.adminJSON(t, "PATCH", "/restapis/"+api.id+"/stages/prod/ratelimitrules/"+rule.ID,
		map[string]any{"patchOperations": []map[string]string{{"op": "replace", "path": "/mode", "value": "ENFORCE"}, {"op": "replace", "path": "/limit", "value": "4"}}}, nil)
	s.sync(t)
	if st := s.sendFrom(t, 0, "OPTIONS", api.id, "/prod/items", "203.0.113.2"); st != 200 {
		t.Errorf("the other address's 2nd of 4: %d", st)
	}
	if st := s.sendFrom(t, 0, "OPTIONS", api.id, "/prod/items", "203.0.113.1"); st != 200 {
		t.Errorf("the first address's 4th of 4: %d (its count was kept across the edits)", st)
	}
	if st := s.sendFrom(t, 1, "OPTIONS", api.id, "/prod/items", "203.0.113.1"); st != 429 {
		t.Errorf("the first address's 5th of 4: %d, want 429", st)
	}

	// deleting the rule frees the method within the push bound
	s.adminJSON(t, "DELETE", "/restapis/"+api.id+"/stages/prod/ratelimitrules/"+rule.ID, nil, nil)
	s.sync(t)
	if st := s.sendFrom(t, 1, "OPTIONS", api.id, "/prod/items", "203.0.113.1"); st != 200 {
		t.Errorf("after DELETE: %d, want 200", st)
	}
}

// Concurrent requests of one API key over both nodes against a
// sliding-window rule are admitted exactly up to its limit, all or
// nothing with the plan: the plan's quota counts only what was admitted;
// on one Redis and on Redis Cluster.
func TestSlidingWindowRuleExactUnderConcurrencyOverTwoNodes(t *testing.T) {
	t.Parallel()
	eachRedis(t, func(t *testing.T, cluster bool) {
		slidingExact(t, mustStackWith(t, stackOptions{adminToken: testAdminToken, cluster: cluster}))
	})
}

func slidingExact(t *testing.T, s *stack) {
	api := s.mustCaseAPI(t)
	plan := s.mustPlan(t, api.id, planSpec{Throttle: throttle(10000, 10000), Quota: quota(1000, "DAY", 0)})
	_, key := s.mustKey(t, plan)
	s.mustRule(t, api.id, map[string]any{"name": "per-key", "keyBy": []string{"apiKey"}, "algorithm": "SLIDING_WINDOW", "limit": 20, "windowSeconds": 3600})
	s.sync(t)
	ok := hammertest.Count(8, 8, func(w, _ int) bool { return s.call(t, w%2, api.id, "/prod/items", key).StatusCode == 200 })
	if ok != 20 {
		t.Errorf("64 concurrent requests over both nodes: %d admitted, want exactly 20", ok)
	}
	// the next is refused by the rule and shows the quota as 20 admitted
	// requests left it: the 44 refused took none of it
	res := s.call(t, 0, api.id, "/prod/items", key)
	if res.StatusCode != 429 || res.Header.Get("X-RateLimit-Remaining") != "980" {
		t.Errorf("after the burst: %d with quota remaining %q, want 429 and 980", res.StatusCode, res.Header.Get("X-RateLimit-Remaining"))
	}
}

// A usage plan tagged tollgate:mode=shadow with the AWS SDK only reports
// once the tag is pushed: nothing refused, would-be refusals logged with
// the plan's level; tagged enforce again, it limits from fresh counters.
func TestShadowPlanTaggedWithTheSDK(t *testing.T) {
	t.Parallel()
	logs := &logBuffer{}
	s := mustStackWith(t, stackOptions{logs: logs})
	api := s.mustCaseAPI(t)
	plan := s.mustPlan(t, api.id, planSpec{Throttle: throttle(0.001, 2)})
	_, key := s.mustKey(t, plan)
	arn := "arn:aws:apigateway:us-east-1::/usageplans/" + plan
	tag := func(mode string) {
		_, err := s.sdk.TagResource(context.Background(), &apigateway.TagResourceInput{ResourceArn: &arn, Tags: map[string]string{"tollgate:mode": mode}})
		must(t, "TagResource "+mode, err)
		s.sync(t)
	}
	tag("shadow")
	for i := range 5 {
		if st := s.call(t, i%2, api.id, "/prod/items", key).StatusCode; st != 200 {
			t.Errorf("shadow plan, request %d: %d", i+1, st)
		}
	}
	if n := strings.Count(logs.String(), "limit=plan"); n != 3 {
		t.Errorf("%d would-be plan refusals logged, want 3 (burst 2 of 5)", n)
	}
	tag("enforce")
	s.expectSeq(t, api.id, key, []seq{{200, "1", "2"}, {200, "0", "2"}, {429, "0", "2"}})
}
