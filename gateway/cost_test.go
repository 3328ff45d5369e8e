package gateway

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"tollgate/internal/waittest"
	"tollgate/limit"
	"tollgate/plans"
)

// costGateway serves /llm, whose upstream answers
// {"usage":{"input_tokens":<in>,"output_tokens":<out>}} from the query
// (no usage field without them) and sends X-Tokens: <h> when h is set,
// for plan01 with a daily quota of quota units and the given tags.
func costGateway(t *testing.T, quota int32, tags map[string]string) *testGateway {
	t.Helper()
	up := httptestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if h := q.Get("h"); h != "" {
			w.Header().Set("X-Tokens", h)
		}
		w.Header().Set("Content-Type", "application/json")
		if q.Has("in") {
			fmt.Fprintf(w, `{"id":"c-1","usage":{"input_tokens":%s,"output_tokens":%s}}`, q.Get("in"), q.Get("out"))
			return
		}
		fmt.Fprint(w, `{"data":[{"id":"model-1"}]}`)
	}))
	snap := snapshot(plans.Stage{}, res{"/llm", methods(proxy(true, up.URL+"/llm"), "GET")})
	addPlan(snap, plans.UsagePlan{ID: "plan01", Quota: &plans.Quota{Limit: quota, Period: plans.PeriodDay}, Tags: tags})
	return limitGateway(t, snap)
}

// wantUnits waits until key0000001's quota in plan01 (limit quota a day)
// has used units used (its remaining is never below 0) and today's usage counts requests requests of units
// units.
func (tg *testGateway) wantUnits(t *testing.T, quota int32, used, requests, units int64) {
	t.Helper()
	var u limit.Usage
	cond := func() bool {
		var err error
		u, err = tg.engine.KeyUsage(t.Context(), "key0000001", "plan01", &limit.Quota{Limit: quota, Period: plans.PeriodDay})
		return err == nil && u.Quota.Remaining == max(0, int64(quota)-used) && u.Today == requests && u.TodayUnits == units
	}
	if _, ok := waittest.Poll(10*time.Second, cond); !ok {
		t.Fatalf("quota remaining %v, today %d requests of %d units; want %d used, %d requests of %d units",
			u.Quota, u.Today, u.TodayUnits, used, requests, units)
	}
}

func TestFixedWeightChargesItsUnitsAndHeadersSpeakUnits(t *testing.T) {
	t.Parallel()
	tg := costGateway(t, 10, map[string]string{plans.CostTag: "3"})
	for i, want := range []string{"7", "4", "1"} {
		got := tg.do(t, "GET", "/prod/llm", "x-api-key", goodKey)
		if got.status != 200 || got.header.Get("X-RateLimit-Remaining") != want {
			t.Fatalf("request %d: status %d remaining %q, want 200 %s", i+1, got.status, got.header.Get("X-RateLimit-Remaining"), want)
		}
	}
	got := tg.do(t, "GET", "/prod/llm", "x-api-key", goodKey)
	wantError(t, got, 429, "Limit Exceeded", "LimitExceededException")
	tg.wantUnits(t, 10, 9, 3, 9)
	rep := tg.usage(t, goodKey)
	if rep.Quota.Used != 9 || rep.Today.Count != 9 || rep.Today.Requests != 3 {
		t.Errorf("partner usage: used %d, today %d units of %d requests; want 9, 9 of 3", rep.Quota.Used, rep.Today.Count, rep.Today.Requests)
	}
}

// A token budget sold by the sum of two JSON fields: each request reserves
// 50, the settle charges the rest (or gives back), the last request may
// pass the limit by its own excess, and the next is refused.
func TestSettledJSONCostChargesTheRealCostAndRefusesWhenSpent(t *testing.T) {
	t.Parallel()
	tg := costGateway(t, 300, map[string]string{plans.CostTag: "json:usage.input_tokens+usage.output_tokens",
		plans.CostReserveTag: "50"})
	steps := []struct {
		in, out     int
		remaining   string // after the reservation
		used, units int64
		requests    int64
	}{
		{100, 20, "250", 120, 120, 1},
		{10, 5, "130", 135, 135, 2},
		{90, 75, "115", 300, 300, 3}, // exactly the budget
	}
	for i, s := range steps {
		got := tg.do(t, "GET", "/prod/llm?in="+strconv.Itoa(s.in)+"&out="+strconv.Itoa(s.out), "x-api-key", goodKey)
		if got.status != 200 || got.header.Get("X-RateLimit-Remaining") != s.remaining {
			t.Fatalf("request %d: status %d remaining %q, want 200 %s", i+1, got.status, got.header.Get("X-RateLimit-Remaining"), s.remaining)
		}
		tg.wantUnits(t, 300, s.used, s.requests, s.units)
	}
	got := tg.do(t, "GET", "/prod/llm?in=1&out=1", "x-api-key", goodKey)
	wantError(t, got, 429, "Limit Exceeded", "LimitExceededException")
	tg.wantUnits(t, 300, 300, 3, 300)
}

func TestSettledCostPassesTheLimitByOneRequestsExcessAtMost(t *testing.T) {
	t.Parallel()
	tg := costGateway(t, 100, map[string]string{plans.CostTag: "json:usage.input_tokens", plans.CostReserveTag: "10"})
	if got := tg.do(t, "GET", "/prod/llm?in=85&out=0", "x-api-key", goodKey); got.status != 200 {
		t.Fatalf("first: status %d", got.status)
	}
	tg.wantUnits(t, 100, 85, 1, 85)
	// 15 left: the reservation fits, the real cost does not
	if got := tg.do(t, "GET", "/prod/llm?in=40&out=0", "x-api-key", goodKey); got.status != 200 {
		t.Fatalf("second: status %d", got.status)
	}
	tg.wantUnits(t, 100, 125, 2, 125)
	got := tg.do(t, "GET", "/prod/llm?in=1&out=0", "x-api-key", goodKey)
	wantError(t, got, 429, "Limit Exceeded", "LimitExceededException")
	if r := got.header.Get("X-RateLimit-Remaining"); r != "0" {
		t.Errorf("refusal: X-RateLimit-Remaining %q, want 0", r)
	}
}

// A response without usage costs what tollgate:cost-if-missing says, never
// a silent 1.
func TestResponseWithoutUsageCostsWhatThePlanSays(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ifMissing string
		want      int64
	}{{"", 40}, {plans.CostIfMissingReserve, 40}, {plans.CostIfMissingZero, 0}} {
		tags := map[string]string{plans.CostTag: "header:X-Tokens", plans.CostReserveTag: "40"}
		if tc.ifMissing != "" {
			tags[plans.CostIfMissingTag] = tc.ifMissing
		}
		tg := costGateway(t, 1000, tags)
		if got := tg.do(t, "GET", "/prod/llm", "x-api-key", goodKey); got.status != 200 {
			t.Fatalf("%q: status %d", tc.ifMissing, got.status)
		}
		tg.wantUnits(t, 1000, tc.want, 1, tc.want)
		if got := tg.do(t, "GET", "/prod/llm?h=7", "x-api-key", goodKey); got.status != 200 {
			t.Fatalf("%q: status %d", tc.ifMissing, got.status)
		}
		tg.wantUnits(t, 1000, tc.want+7, 2, tc.want+7)
	}
}

// The keys of one customer share its budget: the first limit hit refuses
// and charges nothing; another customer's key and the key's own quota are
// untouched.
func TestCustomerQuotaIsSharedByTheCustomersKeys(t *testing.T) {
	t.Parallel()
	up := httptestServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	snap := snapshot(plans.Stage{}, res{"/x", methods(proxy(true, up.URL+"/x"), "GET")})
	addPlan(snap, plans.UsagePlan{ID: "plan01", Quota: &plans.Quota{Limit: 100, Period: plans.PeriodMonth},
		Tags: map[string]string{plans.CustomerQuotaTag: "10", plans.CostTag: "2"}})
	tg := mustGateway(t, snap, nil)
	for i, k := range [][2]string{{"acmeaaaaaaaaaaaaaaaaaaaaaaaa", "acme"}, {"acmebbbbbbbbbbbbbbbbbbbbbbbb", "acme"}, {"othercccccccccccccccccccccccc", "other"}} {
		tg.keys.add(k[0], &plans.KeyRecord{KeyID: fmt.Sprintf("key000000%d", i+1), Enabled: true, PlanIDs: []string{"plan01"}, CustomerID: k[1]})
	}
	for i, k := range []string{"acmeaaaaaaaaaaaaaaaaaaaaaaaa", "acmebbbbbbbbbbbbbbbbbbbbbbbb", "acmeaaaaaaaaaaaaaaaaaaaaaaaa", "acmebbbbbbbbbbbbbbbbbbbbbbbb", "acmeaaaaaaaaaaaaaaaaaaaaaaaa"} {
		got := tg.do(t, "GET", "/prod/x", "x-api-key", k)
		if got.status != 200 {
			t.Fatalf("acme request %d: status %d, want 200", i+1, got.status)
		}
		if want := fmt.Sprintf(`"customer";r=%d;`, 8-2*i); !containsItem(got.header.Get("RateLimit"), want) {
			t.Errorf("acme request %d: RateLimit %q, want an item %s", i+1, got.header.Get("RateLimit"), want)
		}
	}
	for _, k := range []string{"acmeaaaaaaaaaaaaaaaaaaaaaaaa", "acmebbbbbbbbbbbbbbbbbbbbbbbb"} {
		got := tg.do(t, "GET", "/prod/x", "x-api-key", k)
		wantError(t, got, 429, "Limit Exceeded", "LimitExceededException")
		if r := got.header.Get("X-RateLimit-Remaining"); r != "0" {
			t.Errorf("refused: X-RateLimit-Remaining %q, want 0 (the customer quota's)", r)
		}
		if line := tg.logLine(t, got.header.Get("x-amzn-RequestId")); line["reason"] != "customer" {
			t.Errorf("refused: log reason %v, want customer", line["reason"])
		}
	}
	// a customer quota's refusals count where quota refusals count
	if n := counterValue(t, tg.metrics.Throttled.WithLabelValues(testAPI, testStage, "quota")); n != 2 {
		t.Errorf(`tollgate_throttled_total{level="quota"}: got %v, want 2 (the customer quota's refusals)`, n)
	}
	if n := counterValue(t, tg.metrics.Throttled.WithLabelValues(testAPI, testStage, "customer")); n != 0 {
		t.Errorf(`tollgate_throttled_total{level="customer"}: got %v, want 0`, n)
	}
	if got := tg.do(t, "GET", "/prod/x", "x-api-key", "othercccccccccccccccccccccccc"); got.status != 200 {
		t.Fatalf("another customer: status %d, want 200", got.status)
	}
	// the refusal charged nothing: the first key's own quota holds its 3 × 2
	u, err := tg.engine.KeyUsage(t.Context(), "key0000001", "plan01", &limit.Quota{Limit: 100, Period: plans.PeriodMonth})
	if err != nil || u.Quota.Remaining != 94 || u.Today != 3 || u.TodayUnits != 6 {
		t.Fatalf("key usage: %+v %+v, %v; want 94 left, 3 requests of 6 units today", u, u.Quota, err)
	}
}

func containsItem(field, item string) bool {
	for i := 0; i+len(item) <= len(field); i++ {
		if field[i:i+len(item)] == item {
			return true
		}
	}
	return false
}

func TestSettledCostReadsHeadersAndJSONBodies(t *testing.T) {
	t.Parallel()
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	body := func(s string) *costTee { t := &costTee{}; t.write([]byte(s)); return t }
	header, _ := plans.ParseCost(map[string]string{plans.CostTag: "header:X-Cost"})
	sum, _ := plans.ParseCost(map[string]string{plans.CostTag: "json:usage.input_tokens+usage.output_tokens"})
	for _, tc := range []struct {
		name  string
		c     plans.Cost
		h     http.Header
		tee   *costTee
		want  int32
		found bool
	}{
		{"header", header, h("X-Cost", "12"), nil, 12, true},
		{"header fraction rounds up", header, h("X-Cost", "2.1"), nil, 3, true},
		{"header negative is 0", header, h("X-Cost", "-4"), nil, 0, true},
		{"header missing", header, h(), nil, 0, false},
		{"header not a number", header, h("X-Cost", "lots"), nil, 0, false},
		{"sum", sum, h(), body(`{"usage":{"input_tokens":3,"output_tokens":4}}`), 7, true},
		{"one field of two", sum, h(), body(`{"usage":{"input_tokens":3}}`), 3, true},
		{"no field", sum, h(), body(`{"data":[]}`), 0, false},
		{"not JSON", sum, h(), body(`<html>`), 0, false},
		{"a string is no number", sum, h(), body(`{"usage":{"input_tokens":"3"}}`), 0, false},
		{"huge is capped", sum, h(), body(`{"usage":{"input_tokens":1e30}}`), plans.MaxCost, true},
		{"body not kept", sum, h(), nil, 0, false},
	} {
		got, found := settledCost(&tc.c, tc.h, tc.tee)
		if got != tc.want || found != tc.found {
			t.Errorf("%s: got %d %v, want %d %v", tc.name, got, found, tc.want, tc.found)
		}
	}
	long := &costTee{}
	long.write(make([]byte, maxCostBody))
	long.write([]byte("x"))
	if _, found := settledCost(&sum, h(), long); found || long.buf != nil {
		t.Errorf("a body over %d bytes: found %v, kept %d bytes; want not found, nothing kept", maxCostBody, found, len(long.buf))
	}
}

// A plan's native cost field wins over its cost tag, and a method cost of
// its api stage replaces the plan's cost for that method only: GET costs
// the field's 2, POST its method's 5, and each is refused once the quota
// has less than its own cost left.
func TestMethodCostsChargeTheQuotaPerMethod(t *testing.T) {
	t.Parallel()
	up := httptestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"data":[]}`) // no usage field: the json tag would charge its reservation
	}))
	snap := snapshot(plans.Stage{}, res{"/llm", methods(proxy(true, up.URL+"/llm"), "GET", "POST")})
	addPlan(snap, plans.UsagePlan{ID: "plan01", Quota: &plans.Quota{Limit: 20, Period: plans.PeriodDay},
		Tags:         map[string]string{plans.CostTag: "json:usage.total_tokens"},
		CostSettings: &plans.CostSettings{Weight: new(int32(2))},
		ApiStages:    []plans.ApiStage{{ApiID: testAPI, Stage: testStage, MethodCosts: map[string]int32{"/llm/POST": 5}}}})
	tg := limitGateway(t, snap)
	for i, step := range []struct {
		verb      string
		status    int
		remaining string
	}{{"GET", 200, "18"}, {"POST", 200, "13"}, {"GET", 200, "11"}, {"POST", 200, "6"}, {"POST", 200, "1"}, {"POST", 429, ""}, {"GET", 429, ""}} {
		got := tg.do(t, step.verb, "/prod/llm", "x-api-key", goodKey)
		if got.status != step.status || step.remaining != "" && got.header.Get("X-RateLimit-Remaining") != step.remaining {
			t.Fatalf("request %d (%s): status %d remaining %q, want %d %s", i+1, step.verb, got.status,
				got.header.Get("X-RateLimit-Remaining"), step.status, step.remaining)
		}
	}
	tg.wantUnits(t, 20, 19, 5, 19)
}
