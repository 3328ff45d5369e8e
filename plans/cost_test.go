package plans_test

import (
	"strings"
	"testing"

	"tollgate/plans"
)

func TestCostTagsParseOrNameTheBadTag(t *testing.T) {
	t.Parallel()
	quota := &plans.Quota{Limit: 100, Period: plans.PeriodMonth}
	for _, tc := range []struct {
		tags     map[string]string
		noQuota  bool
		badTag   string
		weight   int32
		settled  bool
		reserve  int32
		missing0 bool
	}{
		{tags: nil, weight: 1, reserve: 1},
		{tags: map[string]string{plans.CostTag: "0"}, weight: 0, reserve: 1},
		{tags: map[string]string{plans.CostTag: "25"}, weight: 25, reserve: 1},
		{tags: map[string]string{plans.CostTag: "1000000000"}, weight: 1000000000, reserve: 1},
		{tags: map[string]string{plans.CostTag: "header:X-Usage-Tokens", plans.CostReserveTag: "500"}, weight: 1, settled: true, reserve: 500},
		{tags: map[string]string{plans.CostTag: "json:usage.total_tokens", plans.CostIfMissingTag: "0"}, weight: 1, settled: true, reserve: 1, missing0: true},
		{tags: map[string]string{plans.CostTag: "json:usage.input_tokens+usage.output_tokens", plans.CostIfMissingTag: "reserve"}, weight: 1, settled: true, reserve: 1},
		{tags: map[string]string{plans.CustomerQuotaTag: "300"}, weight: 1, reserve: 1},
		{tags: map[string]string{plans.CostTag: "-1"}, badTag: plans.CostTag},
		{tags: map[string]string{plans.CostTag: "1000000001"}, badTag: plans.CostTag},
		{tags: map[string]string{plans.CostTag: "1.5"}, badTag: plans.CostTag},
		{tags: map[string]string{plans.CostTag: "007"}, badTag: plans.CostTag},
		{tags: map[string]string{plans.CostTag: "tokens"}, badTag: plans.CostTag},
		{tags: map[string]string{plans.CostTag: "header:"}, badTag: plans.CostTag},
		{tags: map[string]string{plans.CostTag: "header:X Tokens"}, badTag: plans.CostTag},
		{tags: map[string]string{plans.CostTag: "json:"}, badTag: plans.CostTag},
		{tags: map[string]string{plans.CostTag: "json:usage..total"}, badTag: plans.CostTag},
		{tags: map[string]string{plans.CostTag: "json:a+"}, badTag: plans.CostTag},
		{tags: map[string]string{plans.CostTag: "json:a+b+c+d+e+f+g+h+i"}, badTag: plans.CostTag},
		{tags: map[string]string{plans.CostReserveTag: "x"}, badTag: plans.CostReserveTag},
		{tags: map[string]string{plans.CostIfMissingTag: "1"}, badTag: plans.CostIfMissingTag},
		{tags: map[string]string{plans.CustomerQuotaTag: "lots"}, badTag: plans.CustomerQuotaTag},
		{tags: map[string]string{plans.CustomerQuotaTag: "300"}, noQuota: true, badTag: plans.CustomerQuotaTag},
	} {
		p := plans.UsagePlan{Name: "p", Tags: tc.tags, Quota: quota}
		if tc.noQuota {
			p.Quota = nil
		}
		err := p.Validate()
		if tc.badTag != "" {
			if plans.ErrorKind(err) != plans.KindInvalid || !strings.Contains(err.Error(), tc.badTag) {
				t.Errorf("%v: got %v, want an invalid-value error naming %s", tc.tags, err, tc.badTag)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.tags, err)
			continue
		}
		c := p.Cost()
		if c.Weight != tc.weight || c.Settled() != tc.settled || c.Reserve != tc.reserve || c.IfMissingZero != tc.missing0 {
			t.Errorf("%v: got %+v, want weight %d settled %v reserve %d if-missing-0 %v", tc.tags, c, tc.weight, tc.settled, tc.reserve, tc.missing0)
		}
	}
}

// What a decision takes: the weight, or a settled cost's reservation; what
// a response without usage costs.
func TestCostDecidedAndIfMissing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tags              map[string]string
		decided, ifMissed int32
	}{
		{map[string]string{plans.CostTag: "4"}, 4, 1},
		{map[string]string{plans.CostTag: "header:X-T", plans.CostReserveTag: "9"}, 9, 9},
		{map[string]string{plans.CostTag: "header:X-T", plans.CostReserveTag: "9", plans.CostIfMissingTag: "0"}, 9, 0},
	} {
		c, err := plans.ParseCost(tc.tags)
		if err != nil || c.Decided() != tc.decided || c.IfMissing() != tc.ifMissed {
			t.Errorf("%v: decided %d if missing %d (%v), want %d %d", tc.tags, c.Decided(), c.IfMissing(), err, tc.decided, tc.ifMissed)
		}
	}
}
