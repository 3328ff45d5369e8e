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
