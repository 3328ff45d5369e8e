package admin_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"

	"tollgate/internal/redistest"
	"tollgate/limit"
	"tollgate/plans"
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

// limitQuota is q as the limiter decides it.
func limitQuota(q *plans.Quota) *limit.Quota {
	c := q.Calendar()
	return &limit.Quota{Limit: q.Limit, Period: q.Period, Offset: q.Offset, Anchor: c.Anchor, Zone: c.Zone}
}

// GetUsage and UpdateUsage count a key on its own calendar in its own
// periods, on Redis's clock (stepped far from the node's): a key of the
// 15th in Tokyo on a plan of the 1st in UTC starts a period on the 14th at
// 15:00 UTC, so its remaining is full again on the 15th, while a key on
// the plan's calendar keeps counting from the 1st; UpdateUsage sets the
// remaining of the key's own period.
func TestUsageReadsAKeyInItsOwnPeriods(t *testing.T) {
	t.Parallel()
	srv := redistest.MustServerStepped(t, 0)
	e := newUsageEnvOn(t, srv.Client, redistest.MustPrefix(t))
	planID, keys := e.plan("tokyo", &types.QuotaSettings{Limit: 10, Period: types.QuotaPeriodTypeMonth}, 2)
	tokyo, plain := keys[0], keys[1]
	if status, _, body := e.raw("PATCH", "/apikeys/"+tokyo, `{"patchOperations":[{"op":"replace","path":"/quotaAnchor","value":"15"},
		{"op":"replace","path":"/quotaTimeZone","value":"Asia/Tokyo"}]}`); status != 200 {
		t.Fatalf("PATCH the key's calendar: %d %s", status, body)
	}
	planRule := &plans.Quota{Limit: 10, Period: plans.PeriodMonth}
	tokyoRule := limitQuota(plans.KeyCalendar{Anchor: "15", TimeZone: "Asia/Tokyo"}.Apply(planRule))
	srv.ClockAt(t, time.Date(2027, 3, 13, 12, 0, 0, 0, time.UTC))
	e.requests(planID, tokyo, tokyoRule, 2)
	e.requests(planID, plain, limitQuota(planRule), 2)
	srv.ClockAt(t, time.Date(2027, 3, 16, 3, 0, 0, 0, time.UTC))
	e.requests(planID, tokyo, tokyoRule, 3)
	e.requests(planID, plain, limitQuota(planRule), 3)
	// the 14th counts in the period its first instant is in: the Tokyo
	// key's from the 14th of February; the 15th starts its next
	wantUsage(t, e.usage(planID, "", "2027-03-13", "2027-03-16").Items, map[string][][]int64{
		tokyo: {{2, 8}, {0, 8}, {0, 10}, {3, 7}},
		plain: {{2, 8}, {0, 8}, {0, 8}, {3, 5}},
	})
	// the periods GetUsage names: the key's own with keyId, per key otherwise
	var got struct {
		CurrentPeriod struct{ Start, End string } `json:"currentPeriod"`
		KeyPeriods    map[string]struct {
			CurrentPeriod struct{ Start, End string } `json:"currentPeriod"`
		} `json:"keyPeriods"`
	}
	read := func(query string) {
		t.Helper()
		status, _, body := e.raw("GET", "/usageplans/"+planID+"/usage?startDate=2027-03-16&endDate=2027-03-16"+query, "")
		if status != 200 || json.Unmarshal([]byte(body), &got) != nil {
			t.Fatalf("GetUsage%s: %d %s", query, status, body)
		}
	}
	read("&keyId=" + tokyo)
	if got.CurrentPeriod.Start != "2027-03-14T15:00:00Z" || got.CurrentPeriod.End != "2027-04-14T15:00:00Z" {
		t.Fatalf("GetUsage of the Tokyo key: current period %+v, want the key's from the 14th 15:00 UTC", got.CurrentPeriod)
	}
	read("")
	if got.CurrentPeriod.Start != "2027-03-01T00:00:00Z" || got.KeyPeriods[tokyo].CurrentPeriod.Start != "2027-03-14T15:00:00Z" || len(got.KeyPeriods) != 1 {
		t.Fatalf("GetUsage of the plan: current period %+v, key periods %+v; want the plan's from the 1st and the Tokyo key's own", got.CurrentPeriod, got.KeyPeriods)
	}
	call(e.c.UpdateUsage(e.ctx, &apigateway.UpdateUsageInput{UsagePlanId: aws.String(planID), KeyId: aws.String(tokyo),
		PatchOperations: []types.PatchOperation{{Op: types.OpReplace, Path: aws.String("/remaining"), Value: aws.String("5")}}})).must(t)
	d, err := e.lim.Decide(e.ctx, &limit.Request{KeyID: tokyo, PlanID: planID, Quota: tokyoRule})
	if err != nil || !d.Allowed || d.Quota.Remaining != 4 || !d.Quota.Reset.Equal(time.Date(2027, 4, 14, 15, 0, 0, 0, time.UTC)) {
		t.Fatalf("after UpdateUsage set 5 left: %+v %v, want 4 left until the 15th of April in Tokyo", d.Quota, err)
	}
}
