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

// The native cost fields win over the cost tags field by field, and the
// customerQuota field over its tag; a method cost replaces the plan's cost
// for its method only.
func TestCostFieldsWinOverTheirTags(t *testing.T) {
	t.Parallel()
	p := plans.UsagePlan{Name: "llm", Quota: &plans.Quota{Limit: 100, Period: plans.PeriodMonth},
		Tags:         map[string]string{plans.CostTag: "json:usage.total_tokens", plans.CostReserveTag: "40", plans.CustomerQuotaTag: "300"},
		CostSettings: &plans.CostSettings{Header: "X-Tokens", IfMissing: "0"},
		ApiStages:    []plans.ApiStage{{ApiID: "a", Stage: "prod", MethodCosts: map[string]int32{"~1models/GET": 0}}}}
	p.Normalize()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	c := p.Cost()
	if c.Header != "X-Tokens" || c.JSON != nil || c.Reserve != 40 || !c.IfMissingZero {
		t.Errorf("cost %+v, want the field's header, the tag's reserve 40 and the field's ifMissing 0", c)
	}
	if n, ok := p.CustomerQuota(); !ok || n != 300 {
		t.Errorf("customer quota %d %v, want the tag's 300", n, ok)
	}
	p.CustomerBudget = &plans.CustomerQuota{Limit: 0}
	if n, ok := p.CustomerQuota(); !ok || n != 0 {
		t.Errorf("customer quota %d %v, want the field's 0", n, ok)
	}
	p.CostSettings = &plans.CostSettings{Weight: new(int32(7))}
	if c := p.Cost(); c.Settled() || c.Decided() != 7 {
		t.Errorf("cost %+v, want the field's weight 7 in place of the tag's json", c)
	}
	if c, ok := p.MethodCost("a", "prod", "/models", "GET"); !ok || c.Settled() || c.Decided() != 0 {
		t.Errorf("method cost %+v %v, want a fixed 0", c, ok)
	}
	if _, ok := p.MethodCost("a", "prod", "/models", "POST"); ok {
		t.Error("POST /models has a method cost; want none")
	}
}

func TestCostFieldsRefuseBadValuesNamingTheField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cost  plans.CostSettings
		field string
	}{
		{plans.CostSettings{Weight: new(int32(-1))}, "cost.weight"},
		{plans.CostSettings{Weight: new(int32(1)), Header: "X-Tokens"}, "cost"},
		{plans.CostSettings{Header: "X Tokens"}, "cost.header"},
		{plans.CostSettings{JSON: []string{}}, "cost.json"},
		{plans.CostSettings{JSON: []string{"a+b"}}, "cost.json"},
		{plans.CostSettings{JSON: strings.Split("a,b,c,d,e,f,g,h,i", ",")}, "cost.json"},
		{plans.CostSettings{Reserve: new(int32(plans.MaxCost + 1))}, "cost.reserve"},
		{plans.CostSettings{IfMissing: "none"}, "cost.ifMissing"},
	} {
		p := plans.UsagePlan{Name: "llm", CostSettings: &tc.cost}
		err := p.Validate()
		if pe, ok := err.(*plans.Error); !ok || pe.Kind != plans.KindInvalid || pe.Field != tc.field {
			t.Errorf("cost %+v: error %v, want a 400 naming %s", tc.cost, err, tc.field)
		}
	}
}
