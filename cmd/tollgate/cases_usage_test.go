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

// TestUsageGetAndUpdate: the admin node reads the gateways' counters
// (GetUsage), and UpdateUsage's new remaining count reaches a gateway that
// had refused the key (its refusal memory is cleared by the announcement).
func TestUsageGetAndUpdate(t *testing.T) {
	t.Parallel()
	s := mustStack(t)
	ctx := context.Background()
	api := s.mustCaseAPI(t)
	p := s.mustPlan(t, api.id, planSpec{Throttle: throttle(10000, 10000), Quota: quota(2, types.QuotaPeriodTypeDay, 0)})
	keyID, key := s.mustKey(t, p)
	s.sync(t)
	s.expectSeq(t, api.id, key, []seq{{200, "1", "2"}, {200, "0", "2"}, {429, "0", "2"}, {429, "0", "2"}})
	today := time.Now().UTC().Format("2006-01-02")
	usage := func() map[string][][]int64 {
		t.Helper()
		out, err := s.sdk.GetUsage(ctx, &apigateway.GetUsageInput{UsagePlanId: &p, StartDate: &today, EndDate: &today})
		must(t, "GetUsage", err)
		return out.Items
	}
	if got, want := usage(), map[string][][]int64{keyID: {{2, 0}}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("GetUsage: got %v, want %v", got, want)
	}
	up, err := s.sdk.UpdateUsage(ctx, &apigateway.UpdateUsageInput{UsagePlanId: &p, KeyId: &keyID,
		PatchOperations: []types.PatchOperation{{Op: types.OpReplace, Path: aws.String("/remaining"), Value: aws.String("1")}}})
	must(t, "UpdateUsage", err)
	if got, want := up.Items, map[string][][]int64{keyID: {{2, 1}}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("UpdateUsage: got %v, want %v", got, want)
	}
	// Both gateways refused the key; the announcement lets one request in.
	waittest.Until(t, "gateway 0 admitting the key after UpdateUsage", 2*time.Second, func() bool {
		return s.call(t, 0, api.id, "/prod/items", key).StatusCode == 200
	})
	if res := s.call(t, 1, api.id, "/prod/items", key); res.StatusCode != 429 {
		t.Fatalf("after the one request UpdateUsage allowed: got %d, want 429", res.StatusCode)
	}
	if got, want := usage(), map[string][][]int64{keyID: {{3, 0}}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("GetUsage after: got %v, want %v", got, want)
	}
}
