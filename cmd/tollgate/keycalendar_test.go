package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"

	"tollgate/internal/redistest"
	"tollgate/plans"
)

// A key tagged with the AWS CLI's tag-resource to the 15th in Tokyo, on a
// plan of the 1st in UTC, through both real gateways and a Redis whose
// clock is stepped to March 2027: a tag that does not fit the plan's
// period is a 400 naming it; the key's quota runs out before its edge,
// the partner endpoint says it resets on the key's day (not the plan's),
// and on Redis's clock the key is admitted again just after its edge.
func TestKeyTaggedWithItsOwnAnchorResetsOnItsDayThroughTheGateways(t *testing.T) {
	t.Parallel()
	clock := redistest.NewSteppedClock(t, 0)
	r := mustRedisServerWith(t, clock.Env(t))
	s := mustStackWith(t, stackOptions{redisURL: r.url()})
	ctx := context.Background()
	api := s.mustCaseAPI(t)
	plan, err := s.sdk.CreateUsagePlan(ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("utc"), Throttle: throttle(1000, 1000),
		Quota:     quota(3, types.QuotaPeriodTypeMonth, 0),
		ApiStages: []types.ApiStage{{ApiId: &api.id, Stage: aws.String("prod")}},
		Tags:      map[string]string{plans.QuotaAnchorTag: "1"}})
	must(t, "CreateUsagePlan", err)
	keyID, key := s.mustKey(t, *plan.Id)
	arn := aws.String("arn:aws:apigateway:us-east-1::/apikeys/" + keyID)
	_, err = s.sdk.TagResource(ctx, &apigateway.TagResourceInput{ResourceArn: arn, Tags: map[string]string{plans.QuotaAnchorTag: "MON"}})
	if err == nil || !strings.Contains(err.Error(), plans.QuotaAnchorTag) || !strings.Contains(err.Error(), "400") {
		t.Fatalf("a weekday anchor on a key of a MONTH plan: %v, want 400 naming %s", err, plans.QuotaAnchorTag)
	}
	_, err = s.sdk.TagResource(ctx, &apigateway.TagResourceInput{ResourceArn: arn, Tags: map[string]string{
		plans.QuotaAnchorTag: "15", plans.QuotaTimeZoneTag: "Asia/Tokyo"}})
	must(t, "TagResource", err)
	s.sync(t)

	edge := time.Date(2027, 3, 14, 15, 0, 0, 0, time.UTC) // the 15th of March in Tokyo
	next := time.Date(2027, 4, 14, 15, 0, 0, 0, time.UTC)
	clock.At(t, edge.Add(-30*time.Second))
	s.expectSeq(t, api.id, key, []seq{{200, "2", "3"}, {200, "1", "3"}, {200, "0", "3"}, {429, "0", "3"}})
	if q := s.partnerQuota(t, 1, api.id, key); q.Used != 3 || q.ResetAt != edge.Format(time.RFC3339) {
		t.Fatalf("partner usage %+v, want 3 used until the key's edge %s (not the plan's 1st of April)", q, edge)
	}
	clock.At(t, edge.Add(2*time.Second))
	took := s.waitStatus(t, api.id, "/prod/items", key, 200, 10*time.Second)
	if q := s.partnerQuota(t, 0, api.id, key); q.ResetAt != next.Format(time.RFC3339) || q.Used > 2 {
		t.Fatalf("partner usage after the key's edge %+v, want the period until %s", q, next)
	}
	t.Logf("admitted in the key's next period %v after the limiter's clock was set 2 s past its edge", took)
}

// partnerQuotaView is the quota of the partner usage endpoint's answer.
type partnerQuotaView struct {
	Used    int
	ResetAt string
}

// partnerQuota reads the quota of the partner usage endpoint via gateway
// i: the units used and when its period resets.
func (s *stack) partnerQuota(t *testing.T, i int, apiID, key string) partnerQuotaView {
	t.Helper()
	var u struct {
		Quota partnerQuotaView `json:"quota"`
	}
	must(t, "partner usage", json.Unmarshal(s.partnerUsage(t, i, apiID, key), &u))
	return u.Quota
}
