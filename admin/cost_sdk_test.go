package admin_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"

	"tollgate/limit"
	"tollgate/plans"
)

// The cost and customer quota tags are set with the AWS SDK, a bad value
// is a 400 naming the tag, and a customer's budget reads back per
// customer, in units.
func TestCostTagsAndCustomerUsage(t *testing.T) {
	t.Parallel()
	e := newUsageEnv(t)
	planID, keys := e.plan("llm", &types.QuotaSettings{Limit: 1000, Period: types.QuotaPeriodTypeMonth}, 2)
	arn := aws.String("arn:aws:apigateway:us-east-1::/usageplans/" + planID)
	for tag, bad := range map[string]string{plans.CostTag: "tokens", plans.CostReserveTag: "-3",
		plans.CostIfMissingTag: "1", plans.CustomerQuotaTag: "lots"} {
		_, err := e.c.TagResource(e.ctx, &apigateway.TagResourceInput{ResourceArn: arn, Tags: map[string]string{tag: bad}})
		wantBadRequest(t, err, tag)
	}
	if status, _, body := e.raw("GET", "/usageplans/"+planID+"/customers/acme/usage", ""); status != 400 || !strings.Contains(body, plans.CustomerQuotaTag) {
		t.Fatalf("a plan without a customer quota: got %d %s, want 400 naming the tag", status, body)
	}
	call(e.c.TagResource(e.ctx, &apigateway.TagResourceInput{ResourceArn: arn, Tags: map[string]string{
		plans.CostTag: "json:usage.total_tokens", plans.CostReserveTag: "20", plans.CustomerQuotaTag: "300"}})).must(t)

	q := &limit.Quota{Limit: 1000, Period: plans.PeriodMonth}
	for i, k := range []string{keys[0], keys[1], keys[0]} {
		d, err := e.lim.Decide(e.ctx, &limit.Request{KeyID: k, PlanID: planID, Quota: q, Cost: 20,
			CustomerID: "acme", CustomerQuota: &limit.Quota{Limit: 300, Period: plans.PeriodMonth}})
		if err != nil || !d.Allowed {
			t.Fatalf("decision %d: %+v, %v", i+1, d, err)
		}
	}
	status, _, body := e.raw("GET", "/usageplans/"+planID+"/customers/acme/usage", "")
	var got struct {
		UsagePlanID, CustomerID, Period, PeriodStart, PeriodEnd string
		Limit, Used, Remaining                                  int64
	}
	if err := json.Unmarshal([]byte(body), &got); status != 200 || err != nil {
		t.Fatalf("customer usage: %d %s (%v)", status, body, err)
	}
	if got.UsagePlanID != planID || got.CustomerID != "acme" || got.Limit != 300 || got.Used != 60 || got.Remaining != 240 ||
		got.Period != "MONTH" || got.PeriodStart == "" || got.PeriodEnd <= got.PeriodStart {
		t.Fatalf("customer usage: got %+v, want 60 of 300 used this month", got)
	}
	if status, _, _ := e.raw("GET", "/usageplans/nope/customers/acme/usage", ""); status != 404 {
		t.Fatalf("an unknown plan: got %d, want 404", status)
	}
}

// CreateUsagePlan takes the native cost and customer quota fields, GET
// returns them, the customer budget read takes the field over its tag,
// and a bad value is a 400 naming the field.
func TestCostFieldsOnCreateAndGet(t *testing.T) {
	t.Parallel()
	e := newUsageEnv(t)
	for field, body := range map[string]string{
		"cost.weight":         `{"name":"x","cost":{"weight":-1}}`,
		"cost.json":           `{"name":"x","cost":{"json":["usage..total"]}}`,
		"cost.ifMissing":      `{"name":"x","cost":{"header":"X-Tokens","ifMissing":"never"}}`,
		"customerQuota":       `{"name":"x","customerQuota":{"limit":5}}`,
		"customerQuota.limit": `{"name":"x","quota":{"limit":5,"period":"DAY"},"customerQuota":{"limit":-5}}`,
	} {
		if status, _, got := e.raw("POST", "/usageplans", body); status != 400 || !strings.Contains(got, field) {
			t.Errorf("%s: got %d %s, want 400 naming %s", body, status, got, field)
		}
	}
	status, _, body := e.raw("POST", "/usageplans", `{"name":"llm","quota":{"limit":1000,"period":"MONTH"},
		"tags":{"tollgate:customer-quota":"900"},
		"cost":{"json":["usage.input_tokens","usage.output_tokens"],"reserve":50,"ifMissing":"0"},"customerQuota":{"limit":300}}`)
	var p plans.UsagePlan
	if err := json.Unmarshal([]byte(body), &p); status != 201 || err != nil {
		t.Fatalf("create: %d %s", status, body)
	}
	status, _, body = e.raw("GET", "/usageplans/"+p.ID, "")
	if status != 200 || !strings.Contains(body, `"cost":{"json":["usage.input_tokens","usage.output_tokens"],"reserve":50,"ifMissing":"0"}`) ||
		!strings.Contains(body, `"customerQuota":{"limit":300}`) {
		t.Fatalf("get: %d %s, want the cost fields", status, body)
	}
	status, _, body = e.raw("GET", "/usageplans/"+p.ID+"/customers/acme/usage", "")
	if status != 200 || !strings.Contains(body, `"limit":300`) {
		t.Fatalf("customer usage: %d %s, want the field's limit 300 (not the tag's 900)", status, body)
	}
}
