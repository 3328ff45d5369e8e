package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	"tollgate/internal/faultnet"
	"tollgate/internal/waittest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"
	"github.com/redis/go-redis/v9"

	"tollgate/keyspace"
)

// TestFaultStreamTrimmedPastNode cuts one gateway off Redis (a TCP proxy
// in front of its connection only) while the admin lowers a quota and
// disables a key the node has cached, and the change stream is trimmed past
// that node's position (only a later, unrelated entry remains). When the
// node is reconnected it must reload everything: the disabled key is
// refused (no remaining entry names it) and the latest quota applies. A
// node started after all of it enforces the latest config too.
func TestFaultStreamTrimmedPastNode(t *testing.T) {
	t.Parallel()
	s := mustStack(t)
	proxy := faultnet.MustProxy(t, redisAddr(t, s.admin.Config.RedisURL))
	cfg := s.gateways[1].Config
	cfg.RedisURL = "redis://" + proxy.Addr() + "/0"
	_ = s.gateways[1].Close()
	s.gateways[1] = s.startMain(t, cfg, "gateway", nil)
	api := s.mustCaseAPI(t)
	p := s.mustPlan(t, api.id, planSpec{Throttle: throttle(10000, 10000), Quota: quota(100, types.QuotaPeriodTypeDay, 0)})
	_, key := s.mustKey(t, p)
	goneID, gone := s.mustKey(t, p)
	s.sync(t)
	s.expectSeq(t, api.id, key, []seq{{200, "99", "100"}, {200, "98", "100"}})
	s.expectSeq(t, api.id, gone, []seq{{200, "99", "100"}, {200, "98", "100"}}) // cached on both nodes

	proxy.Cut()
	for _, limit := range []string{"50", "40", "30"} {
		s.mustPatchPlan(t, p, "/quota/limit", limit)
	}
	ctx := context.Background()
	_, err := s.sdk.UpdateApiKey(ctx, &apigateway.UpdateApiKeyInput{ApiKey: &goneID,
		PatchOperations: []types.PatchOperation{{Op: types.OpReplace, Path: aws.String("/enabled"), Value: aws.String("false")}}})
	must(t, "UpdateApiKey", err)
	if err := s.admin.rdb.XTrimMaxLen(ctx, keyspace.Space{Prefix: s.admin.Config.RedisPrefix}.Stream(), 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.mustKey(t, "") // an unrelated entry after the trimmed ones
	proxy.Restore()

	var res *http.Response
	took, ok := waittest.Poll(3*time.Second, func() bool {
		res = s.call(t, 1, api.id, "/prod/items", key)
		return res.StatusCode == 200 && res.Header.Get("X-RateLimit-Limit") == "30"
	})
	if !ok {
		t.Fatalf("reconnected node: got %d with limit %q 3s after Redis returned, want 200 with 30", res.StatusCode, res.Header.Get("X-RateLimit-Limit"))
	}
	t.Logf("reconnected node enforces the latest config %v after Redis returned", took)
	if res := s.call(t, 1, api.id, "/prod/items", gone); res.StatusCode != 403 {
		t.Errorf("reconnected node, key disabled while it was cut off: got %d, want 403", res.StatusCode)
	}
	s.restartGateway(t, 0) // a node started late
	s.sync(t)
	for i := range 2 {
		if res := s.call(t, i, api.id, "/prod/items", key); res.Header.Get("X-RateLimit-Limit") != "30" {
			t.Errorf("gateway %d: X-RateLimit-Limit %q, want 30", i, res.Header.Get("X-RateLimit-Limit"))
		}
	}
}

// redisAddr returns the host:port of a redis:// URL.
func redisAddr(t *testing.T, raw string) string {
	t.Helper()
	opt, err := redis.ParseURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	return opt.Addr
}
