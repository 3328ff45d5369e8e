package admin

import (
	"reflect"
	"testing"

	"tollgate/plans"
)

// planWith returns a plan with a throttle, a quota and one api stage.
func planWith() *plans.UsagePlan {
	return &plans.UsagePlan{ID: "p12345", Name: "gold",
		ApiStages: []plans.ApiStage{{ApiID: "api0000001", Stage: "prod"}},
		Throttle:  &plans.Throttle{RateLimit: 10, BurstLimit: 20},
		Quota:     &plans.Quota{Limit: 1000, Period: plans.PeriodDay},
	}
}

func TestPatchUsagePlan(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		ops  []patchOp
		want func(p *plans.UsagePlan)
	}{
		{"rename and describe", []patchOp{replace("/name", "silver"), replace("/description", "d")},
			func(p *plans.UsagePlan) { p.Name, p.Description = "silver", "d" }},
		{"throttle fields", []patchOp{replace("/throttle/rateLimit", "0.5"), replace("/throttle/burstLimit", "3")},
			func(p *plans.UsagePlan) { p.Throttle = &plans.Throttle{RateLimit: 0.5, BurstLimit: 3} }},
		{"remove throttle", []patchOp{remove("/throttle")}, func(p *plans.UsagePlan) { p.Throttle = nil }},
		{"remove quota", []patchOp{remove("/quota")}, func(p *plans.UsagePlan) { p.Quota = nil }},
		{"quota fields", []patchOp{replace("/quota/period", "WEEK"), replace("/quota/offset", "6"), replace("/quota/limit", "5")},
			func(p *plans.UsagePlan) { p.Quota = &plans.Quota{Limit: 5, Offset: 6, Period: plans.PeriodWeek} }},
		{"new quota with its limit", []patchOp{remove("/quota"), replace("/quota/limit", "9"), replace("/quota/period", "MONTH")},
			func(p *plans.UsagePlan) { p.Quota = &plans.Quota{Limit: 9, Period: plans.PeriodMonth} }},
		{"anchor, zone and alerts", []patchOp{replace("/quota/period", "MONTH"), replace("/quota/anchor", "last"),
			replace("/quota/timeZone", "Asia/Tokyo"), replace("/alerts", "100, 80%,90")},
			func(p *plans.UsagePlan) {
				p.Quota = &plans.Quota{Limit: 1000, Period: plans.PeriodMonth, Anchor: "last", TimeZone: "Asia/Tokyo"}
				p.Alerts = []int32{80, 90, 100}
			}},
		{"remove alerts", []patchOp{replace("/alerts", "50"), remove("/alerts")}, func(p *plans.UsagePlan) {}},
		{"cost fields, the last of weight, header and json wins", []patchOp{replace("/cost/weight", "3"), replace("/cost/header", "X-Tokens"),
			replace("/cost/json", "usage.input_tokens+usage.output_tokens"), replace("/cost/reserve", "50"), replace("/cost/ifMissing", "0"),
			replace("/customerQuota/limit", "300")},
			func(p *plans.UsagePlan) {
				p.CostSettings = &plans.CostSettings{JSON: []string{"usage.input_tokens", "usage.output_tokens"}, Reserve: new(int32(50)), IfMissing: "0"}
				p.CustomerBudget = &plans.CustomerQuota{Limit: 300}
			}},
		{"remove cost and customer quota", []patchOp{replace("/cost/weight", "3"), replace("/customerQuota/limit", "3"),
			remove("/cost"), remove("/customerQuota")}, func(p *plans.UsagePlan) {}},
		{"a cost emptied field by field is none", []patchOp{replace("/cost/weight", "3"), remove("/cost/weight")}, func(p *plans.UsagePlan) {}},
		{"method costs by raw and escaped path", []patchOp{
			replace("/apiStages/api0000001:prod/methodCosts//pets/GET", "1"),
			replace("/apiStages/api0000001:prod/methodCosts/~1pets/POST", "5"),
			replace("/apiStages/api0000001:prod/methodCosts///DELETE", "0"),
			remove("/apiStages/api0000001:prod/methodCosts//pets/GET"),
		}, func(p *plans.UsagePlan) {
			p.ApiStages[0].MethodCosts = map[string]int32{"/pets/POST": 5, "//DELETE": 0}
		}},
		{"remove all method costs", []patchOp{replace("/apiStages/api0000001:prod/methodCosts//pets/GET", "1"),
			remove("/apiStages/api0000001:prod/methodCosts")}, func(p *plans.UsagePlan) {}},
		{"add and remove api stages", []patchOp{add("/apiStages", "api0000002:dev"), patchOp{Op: opRemove, Path: "/apiStages", Value: "api0000001:prod"}},
			func(p *plans.UsagePlan) { p.ApiStages = []plans.ApiStage{{ApiID: "api0000002", Stage: "dev"}} }},
		{"method throttle by raw path", []patchOp{
			replace("/apiStages/api0000001:prod/throttle//pets/{id}/GET/rateLimit", "2"),
			replace("/apiStages/api0000001:prod/throttle//pets/{id}/GET/burstLimit", "4"),
		}, func(p *plans.UsagePlan) {
			p.ApiStages[0].Throttle = map[string]plans.Throttle{"/pets/{id}/GET": {RateLimit: 2, BurstLimit: 4}}
		}},
		{"method throttle by escaped path and root", []patchOp{
			replace("/apiStages/api0000001:prod/throttle/~1pets/POST/burstLimit", "1"),
			replace("/apiStages/api0000001:prod/throttle///GET/burstLimit", "8"),
		}, func(p *plans.UsagePlan) {
			// A lone burstLimit takes the plan's rate (10), not 0.
			p.ApiStages[0].Throttle = map[string]plans.Throttle{"/pets/POST": {RateLimit: 10, BurstLimit: 1}, "//GET": {RateLimit: 10, BurstLimit: 8}}
		}},
		{"remove a method throttle", []patchOp{
			replace("/apiStages/api0000001:prod/throttle/~1pets/POST/burstLimit", "1"),
			remove("/apiStages/api0000001:prod/throttle//pets/POST"),
		}, func(p *plans.UsagePlan) {}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, want := planWith(), planWith()
			tc.want(want)
			if err := want.Validate(); err != nil {
				t.Fatalf("test expectation invalid: %v", err)
			}
			if err := patchUsagePlan(got, tc.ops); err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v, want %+v", got, want)
			}
		})
	}
}

func TestPatchUsagePlanRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		ops       []patchOp
		wantField string
	}{
		{"unknown path", []patchOp{replace("/apiKeySource", "HEADER")}, "/apiKeySource"},
		{"burst with a fraction", []patchOp{replace("/throttle/burstLimit", "2.5")}, "/throttle/burstLimit"},
		{"new quota without a limit", []patchOp{remove("/quota"), replace("/quota/period", "DAY")}, "quota.limit"},
		{"quota offset out of range", []patchOp{replace("/quota/offset", "3")}, "quota.offset"},
		{"burst 0 with a rate", []patchOp{replace("/throttle/burstLimit", "0")}, "throttle.burstLimit"},
		{"api stage value without a colon", []patchOp{add("/apiStages", "api0000002")}, "/apiStages"},
		{"api stage already present", []patchOp{add("/apiStages", "api0000001:prod")}, "/apiStages"},
		{"api stage not present", []patchOp{patchOp{Op: opRemove, Path: "/apiStages", Value: "nope:prod"}}, "/apiStages"},
		{"method throttle on a stage not in the plan", []patchOp{replace("/apiStages/x:y/throttle//pets/GET/rateLimit", "1")}, "/apiStages/x:y/throttle//pets/GET/rateLimit"},
		{"method throttle with a bad method", []patchOp{replace("/apiStages/api0000001:prod/throttle//pets/FETCH/rateLimit", "1")}, "/apiStages/api0000001:prod/throttle//pets/FETCH/rateLimit"},
		{"method throttle unknown field", []patchOp{replace("/apiStages/api0000001:prod/throttle//pets/GET/quota", "1")}, "/apiStages/api0000001:prod/throttle//pets/GET/quota"},
		{"replace of /throttle", []patchOp{replace("/throttle", "{}")}, "/throttle"},
		{"an anchor for a DAY", []patchOp{replace("/quota/anchor", "15")}, "quota.anchor"},
		{"an unknown zone", []patchOp{replace("/quota/timeZone", "Asia/Atlantis")}, "quota.timeZone"},
		{"alerts that are not percentages", []patchOp{replace("/alerts", "80,ninety")}, "/alerts"},
		{"an alert over 200 %", []patchOp{replace("/alerts", "300")}, "/alerts"},
		{"a negative weight", []patchOp{replace("/cost/weight", "-1")}, "cost.weight"},
		{"a weight that is not a number", []patchOp{replace("/cost/weight", "many")}, "/cost/weight"},
		{"a bad cost header", []patchOp{replace("/cost/header", "X Tokens")}, "cost.header"},
		{"an empty json path", []patchOp{replace("/cost/json", "usage..total")}, "cost.json"},
		{"a bad ifMissing", []patchOp{replace("/cost/ifMissing", "1")}, "cost.ifMissing"},
		{"a reserve above the maximum", []patchOp{replace("/cost/reserve", "1000000001")}, "cost.reserve"},
		{"an unknown cost field", []patchOp{replace("/cost/price", "1")}, "/cost/price"},
		{"a negative customer quota", []patchOp{replace("/customerQuota/limit", "-5")}, "customerQuota.limit"},
		{"a customer quota without a quota", []patchOp{remove("/quota"), replace("/customerQuota/limit", "5")}, "customerQuota"},
		{"a negative method cost", []patchOp{replace("/apiStages/api0000001:prod/methodCosts//pets/GET", "-2")}, "apiStages.methodCosts./pets/GET"},
		{"a method cost with a bad method", []patchOp{replace("/apiStages/api0000001:prod/methodCosts//pets/FETCH", "2")}, "/apiStages/api0000001:prod/methodCosts//pets/FETCH"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := patchUsagePlan(planWith(), tc.ops)
			pe, ok := err.(*plans.Error)
			if !ok || pe.Kind != plans.KindInvalid || pe.Field != tc.wantField {
				t.Fatalf("got error %#v, want a 400 naming %s", err, tc.wantField)
			}
		})
	}
}
