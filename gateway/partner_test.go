package gateway

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"tollgate/limit"
	"tollgate/plans"
)

// otherKey is a second key in plan01, whose figures goodKey must never see.
const otherKey = "OtherKey0123456789abcdefXYZ"

// usageGateway serves limitSnapshot(plan) with the test keys and otherKey.
func usageGateway(t *testing.T, plan plans.UsagePlan) *testGateway {
	t.Helper()
	tg := limitGateway(t, limitSnapshot(plan, plans.Stage{}))
	tg.keys.add(otherKey, &plans.KeyRecord{KeyID: "key0000009", Enabled: true, PlanIDs: []string{"plan01"}})
	return tg
}

// usage asks the partner usage endpoint with key and decodes a 200.
func (tg *testGateway) usage(t *testing.T, key string) usageReport {
	t.Helper()
	got := tg.do(t, "GET", UsagePath, "x-api-key", key)
	if got.status != 200 {
		t.Fatalf("GET %s: status %d, want 200 (body %s)", UsagePath, got.status, got.body)
	}
	var rep usageReport
	if err := json.Unmarshal([]byte(got.body), &rep); err != nil {
		t.Fatalf("GET %s: body %s: %v", UsagePath, got.body, err)
	}
	return rep
}

// nextUTCMidnight is the end of the current UTC day, RFC 3339.
func nextUTCMidnight() string {
	now := time.Now().UTC()
	return time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC).Format(time.RFC3339)
}

func TestPartnerUsageShowsTheCallersOwnFigures(t *testing.T) {
	t.Parallel()
	tg := usageGateway(t, plans.UsagePlan{Name: "Gold", Throttle: &plans.Throttle{RateLimit: 100, BurstLimit: 50},
		Quota: &plans.Quota{Limit: 10, Period: plans.PeriodDay}})
	for range 3 {
		if got := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey); got.status != 200 {
			t.Fatalf("keyed request: status %d", got.status)
		}
	}
	for range 5 {
		if got := tg.do(t, "GET", "/prod/keyed", "x-api-key", otherKey); got.status != 200 {
			t.Fatalf("other key's request: status %d", got.status)
		}
	}
	today := time.Now().UTC().Format(time.DateOnly)
	for i := range 3 { // asking again counts nothing
		rep := tg.usage(t, goodKey)
		if rep.KeyID != "key0000001" {
			t.Errorf("keyId: got %q, want key0000001", rep.KeyID)
		}
		p := rep.Plan
		if p.ID != "plan01" || p.Name != "Gold" || p.Throttle == nil || p.Throttle.RateLimit != 100 || p.Throttle.BurstLimit != 50 ||
			p.Quota == nil || p.Quota.Limit != 10 || p.Quota.Period != plans.PeriodDay ||
			len(p.ApiStages) != 1 || p.ApiStages[0] != (apiStageView{ApiID: testAPI, Stage: testStage}) {
			t.Errorf("plan: got %+v", p)
		}
		if q := rep.Quota; q == nil || q.Used != 3 || q.Remaining != 7 || (q.ResetAt != nextUTCMidnight() && i == 0) {
			t.Errorf("ask %d: quota got %+v, want used 3, remaining 7, resetAt %s", i+1, q, nextUTCMidnight())
		}
		if rep.Today.Date != today || rep.Today.Count != 3 {
			t.Errorf("ask %d: today got %+v, want %s 3", i+1, rep.Today, today)
		}
		if len(rep.Plans) != 1 || rep.Plans[0].Plan.ID != "plan01" {
			t.Errorf("plans: got %+v, want plan01 alone", rep.Plans)
		}
	}
	rep := tg.usage(t, otherKey)
	if rep.KeyID != "key0000009" || rep.Quota.Used != 5 || rep.Quota.Remaining != 5 || rep.Today.Count != 5 {
		t.Errorf("other key: got %s used %d remaining %d today %d, want key0000009 5 5 5", rep.KeyID, rep.Quota.Used, rep.Quota.Remaining, rep.Today.Count)
	}
	// the usage asks counted nowhere: the limiter's own figures
	u, err := tg.engine.KeyUsage(t.Context(), "key0000001", "plan01", &limit.Quota{Limit: 10, Period: plans.PeriodDay})
	if err != nil || u.Quota.Remaining != 7 || u.Today != 3 || u.Now.UTC().Format(time.DateOnly) != today {
		t.Errorf("KeyUsage: got %+v %v, want remaining 7 and 3 on %s", u, err, today)
	}
}

func TestPartnerUsageIsThrottledByThePlanBucketAndCountsNoQuota(t *testing.T) {
	t.Parallel()
	tg := usageGateway(t, plans.UsagePlan{Throttle: &plans.Throttle{RateLimit: 0.01, BurstLimit: 3},
		Quota: &plans.Quota{Limit: 10, Period: plans.PeriodMonth}})
	if got := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey); got.status != 200 {
		t.Fatalf("keyed request: status %d", got.status)
	}
	for i := range 2 {
		got := tg.do(t, "GET", UsagePath, "x-api-key", goodKey)
		if got.status != 200 {
			t.Fatalf("usage %d: status %d, want 200", i+1, got.status)
		}
		if r, want := got.header.Get("X-RateLimit-Remaining"), []string{"1", "0"}[i]; r != want {
			t.Errorf("usage %d: X-RateLimit-Remaining got %q, want %q (the plan bucket)", i+1, r, want)
		}
	}
	got := tg.do(t, "GET", UsagePath, "x-api-key", goodKey)
	wantError(t, got, 429, "Too Many Requests", "TooManyRequestsException")
	if got.header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	got = tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey)
	wantError(t, got, 429, "Too Many Requests", "TooManyRequestsException") // the same bucket
	// the other key has its own bucket, and the quota counts the one request
	rep := tg.usage(t, otherKey)
	if rep.Quota.Used != 0 || rep.Today.Count != 0 {
		t.Errorf("other key: got used %d today %d, want 0 0", rep.Quota.Used, rep.Today.Count)
	}
	u, err := tg.engine.KeyUsage(t.Context(), "key0000001", "plan01", &limit.Quota{Limit: 10, Period: plans.PeriodMonth})
	if err != nil || u.Quota.Remaining != 9 || u.Today != 1 {
		t.Errorf("KeyUsage: got %+v %v, want remaining 9 (usage asks cost no quota) and 1 today", u, err)
	}
}

func TestPartnerUsageRefusesWithoutAValidKey(t *testing.T) {
	t.Parallel()
	tg := usageGateway(t, plans.UsagePlan{Quota: &plans.Quota{Limit: 10, Period: plans.PeriodDay}})
	for _, tc := range []struct {
		name string
		hdr  []string
	}{
		{"missing", nil},
		{"unknown", []string{"x-api-key", unknownKey}},
		{"disabled", []string{"x-api-key", disabledKey}},
		{"no plan for this API", []string{"x-api-key", noPlanKey}},
	} {
		got := tg.do(t, "GET", UsagePath, tc.hdr...)
		wantError(t, got, 403, "Forbidden", "ForbiddenException")
		if got.status == 200 {
			t.Errorf("%s: answered %s", tc.name, got.body)
		}
	}
	got := tg.do(t, "POST", UsagePath, "x-api-key", goodKey)
	if got.status != 405 || got.header.Get("Allow") != "GET,HEAD" {
		t.Errorf("POST: got %d Allow %q, want 405 GET,HEAD", got.status, got.header.Get("Allow"))
	}
}

func TestPartnerUsageListsEveryPlanOfTheKeyOnTheAPI(t *testing.T) {
	t.Parallel()
	snap := limitSnapshot(plans.UsagePlan{Quota: &plans.Quota{Limit: 10, Period: plans.PeriodDay}}, plans.Stage{})
	beta := *snap.Apis[testAPI].Stages[testStage]
	beta.Stage.StageName = "beta"
	snap.Apis[testAPI].Stages["beta"] = &beta
	addPlan(snap, plans.UsagePlan{ID: "plan02", ApiStages: []plans.ApiStage{{ApiID: testAPI, Stage: "beta"}}})
	tg := limitGateway(t, snap)
	for _, path := range []string{"/prod/keyed", "/beta/keyed", "/beta/keyed"} {
		if got := tg.do(t, "GET", path, "x-api-key", goodKey); got.status != 200 {
			t.Fatalf("%s: status %d", path, got.status)
		}
	}
	rep := tg.usage(t, goodKey)
	if len(rep.Plans) != 2 || rep.Plans[0].Plan.ID != rep.Plan.ID {
		t.Fatalf("plans: got %+v, want two, the top-level plan first", rep.Plans)
	}
	for _, p := range rep.Plans {
		want := map[string]int64{"plan01": 1, "plan02": 2}[p.Plan.ID]
		if p.Today.Count != want {
			t.Errorf("plan %s: today %d, want %d", p.Plan.ID, p.Today.Count, want)
		}
		if (p.Quota != nil) != (p.Plan.ID == "plan01") {
			t.Errorf("plan %s: quota %+v (plan02 has none)", p.Plan.ID, p.Quota)
		}
	}
}

// The partner usage endpoint is on no stage: its requests are counted with
// the API, an empty stage and the resource UsagePath (so no dashboard or
// console lists it as a stage), and its series go when the API does.
func TestPartnerUsageIsCountedOnNoStage(t *testing.T) {
	t.Parallel()
	tg := usageGateway(t, plans.UsagePlan{Throttle: &plans.Throttle{RateLimit: 0.01, BurstLimit: 1}})
	first := tg.do(t, "GET", UsagePath, "x-api-key", goodKey)
	second := tg.do(t, "GET", UsagePath, "x-api-key", goodKey)
	if first.status != 200 {
		t.Fatalf("first ask: status %d", first.status)
	}
	wantError(t, second, 429, "Too Many Requests", "TooManyRequestsException")
	for _, res := range []response{first, second} { // metrics are recorded before the access-log line
		line := tg.logLine(t, res.header.Get("x-amzn-RequestId"))
		if line["stage"] != "" || line["resource"] != UsagePath || line["api"] != testAPI {
			t.Errorf("access log: api %v stage %v resource %v, want %s, none and %s", line["api"], line["stage"], line["resource"], testAPI, UsagePath)
		}
	}
	if n := counterValue(t, tg.metrics.Requests.WithLabelValues(testAPI, "", "GET", UsagePath, "2xx")); n != 1 {
		t.Errorf("requests of api %s, no stage, %s: %v, want 1", testAPI, UsagePath, n)
	}
	if n := counterValue(t, tg.metrics.Admitted.WithLabelValues(testAPI, "")); n != 1 {
		t.Errorf("admitted of api %s, no stage: %v, want 1", testAPI, n)
	}
	if n := counterValue(t, tg.metrics.Throttled.WithLabelValues(testAPI, "", "plan")); n != 1 {
		t.Errorf("throttled of api %s, no stage: %v, want 1", testAPI, n)
	}
	stages := func() map[string]bool {
		reg := prometheus.NewRegistry()
		reg.MustRegister(tg.metrics.Collectors()...)
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, f := range families {
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "stage" {
						out[l.GetValue()] = true
					}
				}
			}
		}
		return out
	}
	if got := stages(); len(got) != 1 || !got[""] {
		t.Errorf("stage labels after partner usage asks: %v, want only the empty one", got)
	}

	snap := limitSnapshot(plans.UsagePlan{}, plans.Stage{})
	delete(snap.Apis, testAPI)
	snap.Plans = nil
	snap.Version = 1 << 40
	if err := tg.SetSnapshot(snap); err != nil {
		t.Fatal(err)
	}
	if got := stages(); len(got) != 0 {
		t.Errorf("stage labels after the API left the config: %v, want none", got)
	}
}
