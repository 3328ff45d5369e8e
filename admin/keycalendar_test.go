package admin_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"
)

// A key's own quota calendar, by its fields quotaAnchor and quotaTimeZone
// or its tags tollgate:quota-anchor and tollgate:quota-timezone: a bad
// value is a 400 naming the field or tag (a bad zone with no anchor too),
// and an anchor that does not fit the period of a plan the key is on, or
// is being put on, is a 400 naming it; so is a plan's period change that
// a key's anchor would not fit.
func TestKeyQuotaCalendarIsCheckedAgainstItsPlans(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct{ body, field string }{
		{`{"name":"k","quotaAnchor":"29"}`, "quotaAnchor"},
		{`{"name":"k","quotaAnchor":"someday"}`, "quotaAnchor"},
		{`{"name":"k","quotaTimeZone":"Mars/Olympus"}`, "quotaTimeZone"},
		{`{"name":"k","tags":{"tollgate:quota-timezone":"Asia/Nowhere"}}`, "tags.tollgate:quota-timezone"},
		{`{"name":"k","tags":{"tollgate:quota-anchor":""}}`, "tags.tollgate:quota-anchor"},
	} {
		if status, _, body := e.raw("POST", "/apikeys", tc.body); status != 400 || !strings.Contains(body, tc.field) {
			t.Errorf("create %s: got %d %s, want 400 naming %s", tc.body, status, body, tc.field)
		}
	}
	status, _, body := e.raw("POST", "/apikeys", `{"name":"tokyo","enabled":true,"quotaAnchor":"15","quotaTimeZone":"Asia/Tokyo"}`)
	var k struct {
		ID            string `json:"id"`
		QuotaAnchor   string `json:"quotaAnchor"`
		QuotaTimeZone string `json:"quotaTimeZone"`
	}
	if err := json.Unmarshal([]byte(body), &k); err != nil || status != 201 || k.QuotaAnchor != "15" || k.QuotaTimeZone != "Asia/Tokyo" {
		t.Fatalf("create: got %d %s, want 201 with quotaAnchor 15 and quotaTimeZone Asia/Tokyo", status, body)
	}
	plan := func(name string, period types.QuotaPeriodType) string {
		p := call(e.c.CreateUsagePlan(e.ctx, &apigateway.CreateUsagePlanInput{Name: aws.String(name),
			Quota: &types.QuotaSettings{Limit: 100, Period: period}})).must(t)
		return *p.Id
	}
	month, week, day := plan("month", types.QuotaPeriodTypeMonth), plan("week", types.QuotaPeriodTypeWeek), plan("day", types.QuotaPeriodTypeDay)
	addKey := func(planID string) error {
		_, err := e.c.CreateUsagePlanKey(e.ctx, &apigateway.CreateUsagePlanKeyInput{UsagePlanId: aws.String(planID), KeyId: &k.ID, KeyType: aws.String("API_KEY")})
		return err
	}
	wantBadRequest(t, addKey(week), "quotaAnchor")
	wantBadRequest(t, addKey(day), "quotaAnchor")
	if err := addKey(month); err != nil {
		t.Fatalf("the key of the 15th on a MONTH plan: %v", err)
	}
	arn := aws.String("arn:aws:apigateway:us-east-1::/apikeys/" + k.ID)
	_, err := e.c.TagResource(e.ctx, &apigateway.TagResourceInput{ResourceArn: arn, Tags: map[string]string{"tollgate:quota-anchor": "MON"}})
	wantBadRequest(t, err, "tollgate:quota-anchor")
	_, err = e.c.TagResource(e.ctx, &apigateway.TagResourceInput{ResourceArn: arn, Tags: map[string]string{"tollgate:quota-timezone": "Asia/Nowhere"}})
	wantBadRequest(t, err, "tollgate:quota-timezone")
	call(e.c.TagResource(e.ctx, &apigateway.TagResourceInput{ResourceArn: arn, Tags: map[string]string{"tollgate:quota-anchor": "last"}})).must(t)
	if status, _, body := e.raw("PATCH", "/apikeys/"+k.ID, `{"patchOperations":[{"op":"replace","path":"/quotaAnchor","value":"FRI"}]}`); status != 400 || !strings.Contains(body, "quotaAnchor") {
		t.Fatalf("patch a weekday onto a key on a MONTH plan: got %d %s, want 400 naming quotaAnchor", status, body)
	}
	_, err = e.c.UpdateUsagePlan(e.ctx, &apigateway.UpdateUsagePlanInput{UsagePlanId: aws.String(month), PatchOperations: []types.PatchOperation{
		{Op: types.OpReplace, Path: aws.String("/quota/period"), Value: aws.String("WEEK")}}})
	wantBadRequest(t, err, "quota.period")
	// without its anchors the key fits any period: a zone alone fits DAY
	if status, _, body := e.raw("PATCH", "/apikeys/"+k.ID, `{"patchOperations":[{"op":"remove","path":"/quotaAnchor"}]}`); status != 200 {
		t.Fatalf("remove quotaAnchor: got %d %s", status, body)
	}
	call(e.c.UntagResource(e.ctx, &apigateway.UntagResourceInput{ResourceArn: arn, TagKeys: []string{"tollgate:quota-anchor"}})).must(t)
	if err := addKey(day); err != nil {
		t.Fatalf("the key with a zone alone on a DAY plan: %v", err)
	}
}
