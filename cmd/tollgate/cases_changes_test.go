package main

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"

	"tollgate/internal/waittest"
)

// TestLoweredQuotaClampsRemaining: lowering a quota below the used count clamps
// Remaining to 0 at once (429, never negative, never the old remaining);
// raising it again counts from the real usage, the refused call not
// included. Sibling: lowering a burst clamps the plan bucket.
func TestLoweredQuotaClampsRemaining(t *testing.T) {
	t.Parallel()
	s := mustStack(t)
	api := s.mustCaseAPI(t)
	p := s.mustPlan(t, api.id, planSpec{Throttle: throttle(10000, 10000), Quota: quota(5000000, types.QuotaPeriodTypeMonth, 0)})
	keyID, key := s.mustKey(t, p)
	s.sync(t)
	if ok, _ := s.countOK(t, api.id, key, 35); ok != 35 {
		t.Fatalf("first 35 requests: %d admitted, want 35", ok)
	}
	s.mustPatchPlan(t, p, "/quota/limit", "10")
	s.sync(t)
	res := s.expectSeq(t, api.id, key, []seq{{429, "0", "10"}})
	checkHeader(t, 1, res[0], "x-amzn-ErrorType", "LimitExceededException")
	// The usage API agrees: used 35 today, remaining 0 (not -25).
	today := time.Now().UTC().Format("2006-01-02")
	usage, err := s.sdk.GetUsage(context.Background(), &apigateway.GetUsageInput{UsagePlanId: &p, KeyId: &keyID, StartDate: &today, EndDate: &today})
	must(t, "GetUsage", err)
	if got, want := usage.Items[keyID], [][]int64{{35, 0}}; !reflect.DeepEqual(got, want) {
		t.Errorf("GetUsage after lowering the quota: got %v, want %v", got, want)
	}
	s.mustPatchPlan(t, p, "/quota/limit", "100")
	s.sync(t)
	s.expectSeq(t, api.id, key, []seq{{200, "64", "100"}})

	t.Run("sibling lowered burst", func(t *testing.T) {
		p := s.mustPlan(t, api.id, planSpec{Throttle: throttle(0.001, 50)})
		_, key := s.mustKey(t, p)
		s.sync(t)
		s.expectSeq(t, api.id, key, repeat(5, seq{200, "-", "50"}))
		s.mustPatchPlan(t, p, "/throttle/burstLimit", "3")
		s.sync(t)
		s.expectSeq(t, api.id, key, []seq{{200, "2", "3"}, {200, "1", "3"}, {200, "0", "3"}, {429, "0", "3"}})
	})
	t.Run("sibling lowered plan-method burst", func(t *testing.T) {
		p := s.mustPlan(t, api.id, planSpec{Method: map[string]types.ThrottleSettings{"/items/GET": {RateLimit: 0.001, BurstLimit: 50}}})
		_, key := s.mustKey(t, p)
		s.sync(t)
		s.expectSeq(t, api.id, key, repeat(5, seq{200, "-", "50"}))
		s.mustPatchPlan(t, p, "/apiStages/"+api.id+":prod/throttle//items/GET/burstLimit", "2")
		s.sync(t)
		s.expectSeq(t, api.id, key, []seq{{200, "1", "2"}, {200, "0", "2"}, {429, "0", "2"}})
	})
}

// TestPlanChangesApplyToLiveState: plan changes apply to live limiter state on both
// nodes within the propagation bound, including a node restarted during the
// change; moving a key to another plan starts that plan's own counters.
func TestPlanChangesApplyToLiveState(t *testing.T) {
	s, api, clock, _ := mustClockStack(t)
	p := s.mustPlan(t, api.id, planSpec{Throttle: throttle(0.01, 10)})
	keyID, key := s.mustKey(t, p)
	s.sync(t)
	s.expectSeq(t, api.id, key, append(repeat(10, seq{200, "-", "10"}), seq{429, "0", "10"}))

	s.mustPatchPlan(t, p, "/throttle/rateLimit", "100", "/throttle/burstLimit", "200")
	t.Logf("raise propagated to both nodes in %v", s.sync(t))
	// The case expects 200 at once; docs/behaviour.md ("Throttles and quota", which wins) keeps the
	// tokens earned under the old limits up to the first decision under
	// the new ones (none: the limiter's clock stands still) and refills at
	// the new rate from then on. So the first request is refused under the
	// new limit, and both nodes admit 20 ms later.
	s.expectSeq(t, api.id, key, []seq{{429, "0", "200"}})
	clock.Add(20 * time.Millisecond)
	s.expectSeq(t, api.id, key, repeat(2, seq{200, "-", "200"}))
	clock.Add(50 * time.Millisecond) // 5 tokens again before lowering
	s.mustPatchPlan(t, p, "/throttle/rateLimit", "0.01", "/throttle/burstLimit", "2")
	t.Logf("lowering propagated to both nodes in %v", s.sync(t))
	if ok, _ := s.countOK(t, api.id, key, 10); ok != 2 {
		t.Errorf("10 rapid requests over both nodes after lowering to burst 2: %d admitted, want 2", ok)
	}

	q := s.mustPlan(t, api.id, planSpec{Throttle: throttle(10000, 10000), Quota: quota(5, types.QuotaPeriodTypeDay, 0)})
	s.sync(t)
	_, err := s.sdk.DeleteUsagePlanKey(context.Background(), &apigateway.DeleteUsagePlanKeyInput{UsagePlanId: &p, KeyId: &keyID})
	must(t, "DeleteUsagePlanKey", err)
	s.restartGateway(t, 1) // a node restarted during the change
	_, err = s.sdk.CreateUsagePlanKey(context.Background(), &apigateway.CreateUsagePlanKeyInput{UsagePlanId: &q, KeyId: &keyID, KeyType: aws.String("API_KEY")})
	must(t, "CreateUsagePlanKey", err)
	var limit string
	took, ok := waittest.Poll(time.Second, func() bool {
		limit = s.call(t, 0, api.id, "/prod/items", key).Header.Get("X-RateLimit-Limit")
		return limit == "5"
	})
	if !ok {
		t.Fatalf("after moving the key to plan Q: X-RateLimit-Limit %q after 1s, want 5", limit)
	}
	t.Logf("move to plan Q seen %v after the 2xx", took)
	// Q's own counter: one used above; P's use is not carried over.
	s.expectSeq(t, api.id, key, []seq{{200, "3", "5"}, {200, "2", "5"}})
}
