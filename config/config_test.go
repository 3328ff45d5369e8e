package config_test

import (
	"strings"
	"testing"

	"tollgate/config"
	"tollgate/plans"
)

const doc = `
apiKeys:
  - name: b
    enabled: true
    usagePlans: [gold, silver, gold]
  - name: a
usagePlans:
  - name: gold
    quota: {limit: 10, period: DAY}
apis:
  - name: shop
    stages:
      - name: prod
        methodSettings:
          "*/*": {throttlingRateLimit: 5}
`

func TestParseFillsMethodSettingDefaults(t *testing.T) {
	d, err := config.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	ms := d.Apis[0].Stages[0].MethodSettings["*/*"]
	want := plans.DefaultMethodSetting()
	want.ThrottlingRateLimit = 5
	if ms != want {
		t.Fatalf("got %+v, want AWS's defaults with rate 5 (burst -1: inherit)", ms)
	}
}

func TestParseNamesAnUnknownField(t *testing.T) {
	_, err := config.Parse([]byte("usagePlans:\n  - name: x\n    quotas: {}\n"))
	if plans.ErrorKind(err) != plans.KindInvalid || !strings.Contains(err.Error(), "quotas") {
		t.Fatalf("got %v, want 400 naming quotas", err)
	}
}

func TestYAMLIsDeterministicAndReadsBack(t *testing.T) {
	d, err := config.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	n, err := config.Normalize(d)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := config.YAML(n)
	back, err := config.Parse(first)
	if err != nil {
		t.Fatalf("the YAML does not read back: %v\n%s", err, first)
	}
	n2, _ := config.Normalize(back)
	second, _ := config.YAML(n2)
	if string(first) != string(second) {
		t.Fatalf("YAML changed on a round trip:\n%s\n---\n%s", first, second)
	}
	if !strings.Contains(string(first), `loggingLevel: "OFF"`) {
		t.Errorf("OFF is not quoted (YAML 1.1 readers take it for false):\n%s", first)
	}
	if strings.Index(string(first), "name: a") > strings.Index(string(first), "name: b") {
		t.Errorf("keys not sorted by name:\n%s", first)
	}
}

func TestPlanOfTheSameDocumentIsEmpty(t *testing.T) {
	d, err := config.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	cur, err := config.Normalize(d)
	if err != nil {
		t.Fatal(err)
	}
	changes, err := config.Plan(cur, d, true)
	if err != nil || len(changes) != 0 {
		t.Fatalf("got %+v, %v; want no change", changes, err)
	}
}

func TestPlanRefusesTwoItemsOfOneName(t *testing.T) {
	d, _ := config.Parse([]byte("usagePlans:\n  - name: x\n  - name: x\n"))
	_, err := config.Plan(&config.Document{}, d, false)
	if plans.ErrorKind(err) != plans.KindInvalid || !strings.Contains(err.Error(), "usagePlans[x]") {
		t.Fatalf("got %v, want 400 naming usagePlans[x]", err)
	}
}

func TestPlanDeletesOnlyWhenPruning(t *testing.T) {
	cur, _ := config.Normalize(&config.Document{UsagePlans: []config.UsagePlan{{ID: "p1", Name: "old"}}})
	if changes, _ := config.Plan(cur, &config.Document{}, false); len(changes) != 0 {
		t.Fatalf("without prune: got %+v, want nothing", changes)
	}
	changes, _ := config.Plan(cur, &config.Document{}, true)
	if len(changes) != 1 || changes[0].Action != config.Delete || changes[0].ID != "p1" {
		t.Fatalf("with prune: got %+v, want the delete of old", changes)
	}
}
