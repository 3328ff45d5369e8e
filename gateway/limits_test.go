package gateway

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/engine"
	"tollgate/internal/clocktest"
	"tollgate/limit"
	"tollgate/plans"
)

func TestWriteRateLimitHeaders(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)
	throttle := &limit.Bucket{RateLimit: 10, BurstLimit: 20, Level: limit.LevelPlan}
	rate0 := &limit.Bucket{RateLimit: 0, BurstLimit: 5, Level: limit.LevelPlan}
	ts := &limit.State{Limit: 20, Remaining: 19, Reset: now.Add(100 * time.Millisecond), Window: 2 * time.Second}
	qs := &limit.State{Limit: 1000, Remaining: 998, Reset: now.Add(14 * time.Hour), Window: 24 * time.Hour}
	tests := []struct {
		name     string
		d        limit.Decision
		bucket   *limit.Bucket
		hasQuota bool
		want     map[string]string // "" means absent
	}{
		{"throttle and quota", limit.Decision{Now: now, Plan: ts, Quota: qs}, throttle, true, map[string]string{
			"X-RateLimit-Limit": "1000", "X-RateLimit-Remaining": "998", "X-RateLimit-Reset": strconv.FormatInt(now.Add(14*time.Hour).Unix(), 10),
			"RateLimit-Policy": `"throttle";q=20;w=2, "quota";q=1000;w=86400`,
			"RateLimit":        `"throttle";r=19;t=1, "quota";r=998;t=50400`,
		}},
		{"throttle only", limit.Decision{Now: now, Plan: ts}, throttle, false, map[string]string{
			"X-RateLimit-Limit": "20", "X-RateLimit-Remaining": "19", "X-RateLimit-Reset": strconv.FormatInt(now.Unix()+1, 10),
			"RateLimit-Policy": `"throttle";q=20;w=2`, "RateLimit": `"throttle";r=19;t=1`,
		}},
		{"quota only", limit.Decision{Now: now, Quota: qs}, nil, true, map[string]string{
			"X-RateLimit-Limit": "1000", "X-RateLimit-Remaining": "998",
			"RateLimit-Policy": `"quota";q=1000;w=86400`, "RateLimit": `"quota";r=998;t=50400`,
		}},
		{"rate 0 throttle is left out", limit.Decision{Now: now, Plan: &limit.State{Limit: 5, Remaining: 4}}, rate0, false, map[string]string{
			"X-RateLimit-Limit": "", "RateLimit-Policy": "", "RateLimit": "",
		}},
		{"rate 0 throttle with quota", limit.Decision{Now: now, Plan: &limit.State{Limit: 5, Remaining: 4}, Quota: qs}, rate0, true, map[string]string{
			"X-RateLimit-Limit": "1000", "RateLimit-Policy": `"quota";q=1000;w=86400`, "RateLimit": `"quota";r=998;t=50400`,
		}},
		{"negative remaining clamps", limit.Decision{Now: now, Quota: &limit.State{Limit: 3, Remaining: -1, Reset: now.Add(time.Second), Window: time.Hour}}, nil, true, map[string]string{
			"X-RateLimit-Remaining": "0", "RateLimit": `"quota";r=0;t=1`,
		}},
		{"no plan limits", limit.Decision{Now: now}, nil, false, map[string]string{
			"X-RateLimit-Limit": "", "X-RateLimit-Remaining": "", "X-RateLimit-Reset": "", "RateLimit": "", "RateLimit-Policy": "",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			writeRateLimitHeaders(h, nil, tc.d, tc.bucket, tc.hasQuota, nil)
			for name, want := range tc.want {
				if got := strings.Join(h[name], ","); got != want {
					t.Errorf("%s: got %q, want %q", name, got, want)
				}
			}
		})
	}
}

func TestSetRetryAfter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{{0, "1"}, {time.Millisecond, "1"}, {time.Second, "1"}, {1001 * time.Millisecond, "2"}, {59 * time.Minute, "3540"}} {
		h := http.Header{}
		setRetryAfter(h, tc.d)
		if got := h.Get("Retry-After"); got != tc.want {
			t.Errorf("setRetryAfter(%v): got %q, want %q", tc.d, got, tc.want)
		}
	}
}

// limitSnapshot serves /keyed and /open; edit sets the plan and stage.
func limitSnapshot(plan plans.UsagePlan, stage plans.Stage) *plans.Snapshot {
	snap := snapshot(stage,
		res{"/keyed", methods(mock(true), "GET")},
		res{"/open", methods(mock(false), "GET")},
	)
	plan.ID = "plan01"
	addPlan(snap, plan)
	return snap
}

func limitGateway(t *testing.T, snap *plans.Snapshot) *testGateway {
	t.Helper()
	tg := mustGateway(t, snap, func(o *Options) { o.Metrics = NewMetrics() })
	addTestKeys(tg.keys)
	return tg
}

// secondsToUTCMidnight is how long until the next UTC day.
func secondsToUTCMidnight() float64 {
	now := time.Now().UTC()
	return time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC).Sub(now).Seconds()
}

func TestPlanThrottle(t *testing.T) {
	t.Parallel()
	tg := limitGateway(t, limitSnapshot(plans.UsagePlan{Throttle: &plans.Throttle{RateLimit: 0.5, BurstLimit: 2}}, plans.Stage{}))
	for i, wantRemaining := range []string{"1", "0"} {
		got := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey)
		if got.status != 200 {
			t.Fatalf("request %d: status got %d, want 200", i+1, got.status)
		}
		if r := got.header.Get("X-RateLimit-Remaining"); r != wantRemaining {
			t.Errorf("request %d: X-RateLimit-Remaining got %q, want %q", i+1, r, wantRemaining)
		}
		if l := got.header.Get("X-RateLimit-Limit"); l != "2" {
			t.Errorf("request %d: X-RateLimit-Limit got %q, want 2", i+1, l)
		}
		if p := got.header.Get("RateLimit-Policy"); p != `"throttle";q=2;w=4` {
			t.Errorf("request %d: RateLimit-Policy got %q, want %q", i+1, p, `"throttle";q=2;w=4`)
		}
	}
	got := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey)
	wantError(t, got, 429, "Too Many Requests", "TooManyRequestsException")
	if ra := got.header.Get("Retry-After"); ra != "2" {
		t.Errorf("Retry-After: got %q, want 2 (1 token at 0.5/s)", ra)
	}
	if r := got.header.Get("X-RateLimit-Remaining"); r != "0" {
		t.Errorf("429 X-RateLimit-Remaining: got %q, want 0", r)
	}
	if rl := got.header.Get("RateLimit"); !strings.HasPrefix(rl, `"throttle";r=0;t=`) {
		t.Errorf("429 RateLimit: got %q, want \"throttle\";r=0;t=...", rl)
	}
	reset, _ := strconv.ParseInt(got.header.Get("X-RateLimit-Reset"), 10, 64)
	if d := reset - time.Now().Unix(); d < 2 || d > 5 {
		t.Errorf("X-RateLimit-Reset: got %d s from now, want 2..5", d)
	}
	line := tg.logLine(t, got.header.Get("x-amzn-RequestId"))
	if line["error_type"] != ErrorTypeThrottled || line["reason"] != "plan" {
		t.Errorf("log: got %v/%v, want THROTTLED/plan", line["error_type"], line["reason"])
	}
	if n := counterValue(t, tg.metrics.Throttled.WithLabelValues(testAPI, testStage, "plan")); n != 1 {
		t.Errorf("tollgate_throttled_total{level=plan}: got %v, want 1", n)
	}
	if n := counterValue(t, tg.metrics.Admitted.WithLabelValues(testAPI, testStage)); n != 2 {
		t.Errorf("tollgate_admitted_total: got %v, want 2 (the refused request is not admitted)", n)
	}
}

func TestQuota(t *testing.T) {
	t.Parallel()
	tg := limitGateway(t, limitSnapshot(plans.UsagePlan{Quota: &plans.Quota{Limit: 2, Period: plans.PeriodDay}}, plans.Stage{}))
	for i := range 2 {
		got := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey)
		if got.status != 200 {
			t.Fatalf("request %d: status got %d, want 200", i+1, got.status)
		}
		if r, want := got.header.Get("X-RateLimit-Remaining"), strconv.Itoa(1-i); r != want {
			t.Errorf("request %d: X-RateLimit-Remaining got %q, want %q", i+1, r, want)
		}
	}
	got := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey)
	wantError(t, got, 429, "Limit Exceeded", "LimitExceededException")
	ra, _ := strconv.ParseFloat(got.header.Get("Retry-After"), 64)
	if want := secondsToUTCMidnight(); math.Abs(ra-want) > 3 {
		t.Errorf("Retry-After: got %v, want about %v (to the end of the UTC day)", ra, want)
	}
	if p := got.header.Get("RateLimit-Policy"); p != `"quota";q=2;w=86400` {
		t.Errorf("RateLimit-Policy: got %q, want %q", p, `"quota";q=2;w=86400`)
	}
	now := time.Now().UTC()
	midnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC).Unix()
	if r, _ := strconv.ParseInt(got.header.Get("X-RateLimit-Reset"), 10, 64); r != midnight && r != midnight+86400 {
		t.Errorf("X-RateLimit-Reset: got %d, want %d (next UTC midnight)", r, midnight)
	}
	line := tg.logLine(t, got.header.Get("x-amzn-RequestId"))
	if line["error_type"] != ErrorTypeQuota {
		t.Errorf("log error_type: got %v, want %s", line["error_type"], ErrorTypeQuota)
	}
}

func TestThrottledRequestCostsNoQuota(t *testing.T) {
	t.Parallel()
	tg := limitGateway(t, limitSnapshot(plans.UsagePlan{
		Throttle: &plans.Throttle{RateLimit: 0.01, BurstLimit: 1},
		Quota:    &plans.Quota{Limit: 10, Period: plans.PeriodMonth},
	}, plans.Stage{}))
	first := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey)
	if first.status != 200 || first.header.Get("X-RateLimit-Remaining") != "9" {
		t.Fatalf("first: got %d remaining %q, want 200 remaining 9", first.status, first.header.Get("X-RateLimit-Remaining"))
	}
	if p := first.header.Get("RateLimit-Policy"); !strings.HasPrefix(p, `"throttle";q=1;w=100, "quota";q=10;w=`) {
		t.Errorf("RateLimit-Policy: got %q, want throttle then quota items", p)
	}
	for range 3 {
		got := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey)
		wantError(t, got, 429, "Too Many Requests", "TooManyRequestsException")
		if r := got.header.Get("X-RateLimit-Remaining"); r != "9" {
			t.Errorf("throttled: X-RateLimit-Remaining got %q, want 9 (quota not charged)", r)
		}
	}
}

func TestRateZeroBucketHasNoRetryAfter(t *testing.T) {
	t.Parallel()
	tg := limitGateway(t, limitSnapshot(plans.UsagePlan{Throttle: &plans.Throttle{RateLimit: 0, BurstLimit: 1}}, plans.Stage{}))
	first := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey)
	if first.status != 200 {
		t.Fatalf("first: got %d, want 200", first.status)
	}
	if first.header.Get("X-RateLimit-Limit") != "" || first.header.Get("RateLimit") != "" {
		t.Errorf("rate 0: got rate-limit headers %v, want none", first.header)
	}
	got := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey)
	wantError(t, got, 429, "Too Many Requests", "TooManyRequestsException")
	if ra := got.header.Get("Retry-After"); ra != "" {
		t.Errorf("Retry-After: got %q, want none at rate 0", ra)
	}
}

func TestRefusingLevels(t *testing.T) {
	t.Parallel()
	one := plans.Throttle{RateLimit: 0.01, BurstLimit: 1}
	stageOne := plans.Stage{MethodSettings: map[string]plans.MethodSetting{
		"~1keyed/GET": {ThrottlingRateLimit: 0.01, ThrottlingBurstLimit: 1, LoggingLevel: "OFF"},
	}}
	tests := []struct {
		name    string
		plan    plans.UsagePlan
		stage   plans.Stage
		account *plans.Throttle
		level   string
		headers bool // caller's own plan limits shown
	}{
		{"plan", plans.UsagePlan{Throttle: &one}, plans.Stage{}, nil, "plan", true},
		{"plan method", plans.UsagePlan{Throttle: &plans.Throttle{RateLimit: 100, BurstLimit: 100},
			ApiStages: []plans.ApiStage{{ApiID: testAPI, Stage: testStage, Throttle: map[string]plans.Throttle{"/keyed/GET": one}}}}, plans.Stage{}, nil, "method", true},
		{"stage", plans.UsagePlan{}, stageOne, nil, "stage", false},
		{"account", plans.UsagePlan{}, plans.Stage{}, &one, "account", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			snap := limitSnapshot(tc.plan, tc.stage)
			if tc.account != nil {
				snap.Account = *tc.account
			}
			tg := limitGateway(t, snap)
			if got := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey); got.status != 200 {
				t.Fatalf("first: got %d, want 200", got.status)
			}
			got := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey)
			wantError(t, got, 429, "Too Many Requests", "TooManyRequestsException")
			if got.header.Get("Retry-After") == "" {
				t.Errorf("Retry-After: got none, want one")
			}
			if has := got.header.Get("X-RateLimit-Limit") != ""; has != tc.headers {
				t.Errorf("X-RateLimit-Limit present: got %v, want %v", has, tc.headers)
			}
			if line := tg.logLine(t, got.header.Get("x-amzn-RequestId")); line["reason"] != tc.level {
				t.Errorf("log reason: got %v, want %s", line["reason"], tc.level)
			}
			if n := counterValue(t, tg.metrics.Throttled.WithLabelValues(testAPI, testStage, tc.level)); n != 1 {
				t.Errorf("tollgate_throttled_total{level=%s}: got %v, want 1", tc.level, n)
			}
		})
	}
}

func TestStageBucketAppliesWithoutKey(t *testing.T) {
	t.Parallel()
	stage := plans.Stage{MethodSettings: map[string]plans.MethodSetting{
		"*/*": {ThrottlingRateLimit: 0.01, ThrottlingBurstLimit: 1, LoggingLevel: "OFF"},
	}}
	tg := limitGateway(t, limitSnapshot(plans.UsagePlan{}, stage))
	if got := tg.do(t, "GET", "/prod/open"); got.status != 200 {
		t.Fatalf("first: got %d, want 200", got.status)
	}
	got := tg.do(t, "GET", "/prod/open")
	wantError(t, got, 429, "Too Many Requests", "TooManyRequestsException")
	if got.header.Get("X-RateLimit-Limit") != "" || got.header.Get("RateLimit") != "" {
		t.Errorf("shared stage bucket leaked in headers: %v", got.header)
	}
}

// deadEngine is a real engine pointed at a port nobody listens on.
func deadEngine(t *testing.T) Engine {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	return newLimiter(t, engine.New(rdb, engine.Options{Prefix: "dead"}), false)
}

func TestLimiterFailureModes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode   string
		status int
	}{{"", 200}, {FailOpen, 200}, {FailClosed, 503}}
	for _, tc := range tests {
		t.Run("mode "+tc.mode, func(t *testing.T) {
			t.Parallel()
			metrics := NewMetrics()
			snap := limitSnapshot(plans.UsagePlan{Throttle: &plans.Throttle{RateLimit: 1, BurstLimit: 1}}, plans.Stage{})
			tg := mustGateway(t, snap, func(o *Options) {
				o.Engine = deadEngine(t)
				o.FailureMode = tc.mode
				o.Metrics = metrics
			})
			tg.outageAfter = 0 // every failure of a run counts as an outage at once
			addTestKeys(tg.keys)
			for range 3 {
				got := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey)
				if tc.status == 503 {
					wantError(t, got, 503, "Service Unavailable", "ServiceUnavailableException")
					if ra := got.header.Get("Retry-After"); ra != "1" {
						t.Errorf("503 Retry-After: got %q, want 1", ra)
					}
				} else if got.status != tc.status {
					t.Fatalf("status: got %d, want %d", got.status, tc.status)
				}
				if got.header.Get("X-RateLimit-Limit") != "" || got.header.Get("RateLimit") != "" {
					t.Errorf("rate-limit headers without a decision: %v", got.header)
				}
			}
			if n := counterValue(t, metrics.LimiterErrors); n != 3 {
				t.Errorf("tollgate_limiter_errors_total: got %v, want 3", n)
			}
			wantAdmitted := 3.0 // failure mode open admits without limits
			if tc.status == 503 {
				wantAdmitted = 0
			}
			if n := counterValue(t, metrics.Admitted.WithLabelValues(testAPI, testStage)); n != wantAdmitted {
				t.Errorf("tollgate_admitted_total: got %v, want %v", n, wantAdmitted)
			}
			if n := strings.Count(tg.logs.String(), `"msg":"limiter unavailable"`); n != 1 {
				t.Errorf("outage log lines: got %d, want 1", n)
			}
		})
	}
}

func TestLimiterRecoveryLogged(t *testing.T) {
	t.Parallel()
	tg := limitGateway(t, limitSnapshot(plans.UsagePlan{}, plans.Stage{}))
	tg.outageAfter = 0
	real := tg.engine.swap(deadEngine(t))
	tg.do(t, "GET", "/prod/open")
	tg.do(t, "GET", "/prod/open")
	tg.engine.swap(real)
	tg.do(t, "GET", "/prod/open")
	tg.do(t, "GET", "/prod/open")
	logs := tg.logs.String()
	if a, b := strings.Count(logs, `"msg":"limiter unavailable"`), strings.Count(logs, `"msg":"limiter recovered"`); a != 1 || b != 1 {
		t.Errorf("outage/recovery log lines: got %d/%d, want 1/1", a, b)
	}
}

// A decision that misses its deadline now and then, between successes (a
// loaded node), is counted but is not an outage: no "limiter unavailable"
// / "limiter recovered" pairs.
// Failures without a success for outageAfter are one.
func TestLimiterIsolatedFailuresAreNotAnOutage(t *testing.T) {
	t.Parallel()
	metrics := NewMetrics()
	tg := mustGateway(t, limitSnapshot(plans.UsagePlan{}, plans.Stage{}), func(o *Options) { o.Metrics = metrics })
	clock := clocktest.New(time.Now())
	tg.nodeNow = clock.Now
	dead := deadEngine(t)
	real := tg.engine.swap(dead)
	for range 5 { // a failure an outageAfter after the last, but a success between them
		tg.do(t, "GET", "/prod/open")
		tg.engine.swap(real)
		tg.do(t, "GET", "/prod/open")
		tg.engine.swap(dead)
		clock.Add(tg.outageAfter)
	}
	logs := tg.logs.String()
	if a, b := strings.Count(logs, `"msg":"limiter unavailable"`), strings.Count(logs, `"msg":"limiter recovered"`); a != 0 || b != 0 {
		t.Errorf("isolated failures: outage/recovery lines %d/%d, want 0/0", a, b)
	}
	if n := counterValue(t, metrics.LimiterErrors); n != 5 {
		t.Errorf("tollgate_limiter_errors_total: got %v, want 5", n)
	}
	tg.do(t, "GET", "/prod/open") // the first failure
	clock.Add(tg.outageAfter - time.Millisecond)
	tg.do(t, "GET", "/prod/open") // not yet an outage
	if strings.Contains(tg.logs.String(), `"msg":"limiter unavailable"`) {
		t.Errorf("failures for less than outageAfter: an outage was logged")
	}
	clock.Add(time.Millisecond)
	tg.do(t, "GET", "/prod/open")
	tg.engine.swap(real)
	tg.do(t, "GET", "/prod/open")
	logs = tg.logs.String()
	if a, b := strings.Count(logs, `"msg":"limiter unavailable"`), strings.Count(logs, `"msg":"limiter recovered"`); a != 1 || b != 1 {
		t.Errorf("failures without a success for longer than outageAfter: outage/recovery lines %d/%d, want 1/1", a, b)
	}
}
