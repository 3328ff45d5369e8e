package gateway

import (
	"context"
	"net/http"
	"net/netip"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"tollgate/engine"
	"tollgate/internal/hammertest"
	"tollgate/internal/redistest"
	"tollgate/internal/waittest"
	"tollgate/plans"
)

// withRules returns snap with rules on (testAPI, testStage), each given a
// counter id of its own.
func withRules(snap *plans.Snapshot, rules ...plans.RateLimitRule) *plans.Snapshot {
	st := snap.Apis[testAPI].Stages[testStage]
	for i, r := range rules {
		r.SetDefaults()
		st.RateLimitRules = append(st.RateLimitRules, plans.StageRule{RateLimitRule: r, CounterID: "c" + r.Name + string(rune('a'+i))})
	}
	return snap
}

func i32(v int32) *int32      { return &v }
func f64(v float64) *float64  { return &v }
func trustLocal(o *Options)   { o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} }
func from(ip string) []string { return []string{"X-Forwarded-For", ip} }
func wantStatus(t *testing.T, got response, want int, what string) {
	t.Helper()
	if got.status != want {
		t.Fatalf("%s: status %d, want %d (body %s)", what, got.status, want, got.body)
	}
}

// A per-IP rule protects a method that requires no API key: each trusted
// client address has its own count, the 429 is a rule's (message,
// Retry-After) and the headers name the rule.
func TestPerIPRuleProtectsAPublicMethod(t *testing.T) {
	t.Parallel()
	snap := withRules(snapshot(plans.Stage{}, res{"/login", methods(mock(false), "POST")}, res{"/pets", methods(mock(false), "GET")}),
		plans.RateLimitRule{Name: "login-per-ip", ResourcePath: "/login", HTTPMethod: "POST", KeyBy: []string{"ip"},
			Algorithm: plans.FixedWindow, Limit: i32(2), WindowSeconds: i32(3600)})
	tg := mustGateway(t, snap, trustLocal)
	for i := range 2 {
		got := tg.do(t, "POST", "/prod/login", from("203.0.113.7")...)
		wantStatus(t, got, 200, "request within the limit")
		if p := got.header.Get("RateLimit-Policy"); p != `"login-per-ip";q=2;w=3600` {
			t.Errorf("request %d: RateLimit-Policy %q", i, p)
		}
		if !strings.HasPrefix(got.header.Get("RateLimit"), `"login-per-ip";r=`+string(rune('1'-i))+";t=") {
			t.Errorf("request %d: RateLimit %q", i, got.header.Get("RateLimit"))
		}
	}
	got := tg.do(t, "POST", "/prod/login", from("203.0.113.7")...)
	wantError(t, got, http.StatusTooManyRequests, "Too Many Requests", "TooManyRequestsException")
	if ra := got.header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Errorf("Retry-After %q", ra)
	}
	if !strings.HasPrefix(got.header.Get("RateLimit"), `"login-per-ip";r=0;t=`) {
		t.Errorf("refusal's RateLimit %q", got.header.Get("RateLimit"))
	}
	wantStatus(t, tg.do(t, "POST", "/prod/login", from("203.0.113.8")...), 200, "another client address")
	wantStatus(t, tg.do(t, "GET", "/prod/pets", from("203.0.113.7")...), 200, "another method")
	if h := tg.do(t, "GET", "/prod/pets", from("203.0.113.7")...).header.Get("RateLimit-Policy"); h != "" {
		t.Errorf("a method the rule does not cover shows %q", h)
	}
	if !strings.Contains(tg.logs.String(), `"reason":"rule login-per-ip"`) {
		t.Error("the refusal's access log line does not name the rule")
	}
}

// Without trusted proxies a client cannot pick its address: every request
// of the connection's peer counts under the peer, whatever
// X-Forwarded-For says.
func TestPerIPRuleIgnoresForwardedForFromUntrustedPeers(t *testing.T) {
	t.Parallel()
	snap := withRules(snapshot(plans.Stage{}, res{"/login", methods(mock(false), "POST")}),
		plans.RateLimitRule{Name: "per-ip", KeyBy: []string{"ip"}, Algorithm: plans.FixedWindow, Limit: i32(1), WindowSeconds: i32(3600)})
	tg := mustGateway(t, snap, nil)
	wantStatus(t, tg.do(t, "POST", "/prod/login", from("203.0.113.1")...), 200, "first")
	wantStatus(t, tg.do(t, "POST", "/prod/login", from("203.0.113.2")...), 429, "a spoofed address")
}

// Rules match by resourcePath and httpMethod ("*" for any); on an ANY
// method the request's own method is compared, and HEAD served by GET
// counts as GET.
func TestRulesMatchResourceAndMethod(t *testing.T) {
	t.Parallel()
	snap := withRules(snapshot(plans.Stage{},
		res{"/pets", methods(mock(false), "GET", "POST")}, res{"/any", methods(mock(false), "ANY")}, res{"/other", methods(mock(false), "GET")}),
		plans.RateLimitRule{Name: "pets-get", ResourcePath: "/pets", HTTPMethod: "GET", Algorithm: plans.FixedWindow, Limit: i32(1), WindowSeconds: i32(3600)},
		plans.RateLimitRule{Name: "any-post", ResourcePath: "/any", HTTPMethod: "POST", Algorithm: plans.FixedWindow, Limit: i32(1), WindowSeconds: i32(3600)})
	tg := mustGateway(t, snap, nil)
	wantStatus(t, tg.do(t, "GET", "/prod/pets"), 200, "GET /pets")
	wantStatus(t, tg.do(t, "HEAD", "/prod/pets"), 429, "HEAD /pets (served by GET)")
	wantStatus(t, tg.do(t, "POST", "/prod/pets"), 200, "POST /pets")
	wantStatus(t, tg.do(t, "POST", "/prod/pets"), 200, "POST /pets again")
	wantStatus(t, tg.do(t, "GET", "/prod/other"), 200, "GET /other")
	wantStatus(t, tg.do(t, "GET", "/prod/any"), 200, "GET on ANY")
	wantStatus(t, tg.do(t, "GET", "/prod/any"), 200, "GET on ANY again")
	wantStatus(t, tg.do(t, "POST", "/prod/any"), 200, "POST on ANY")
	wantStatus(t, tg.do(t, "POST", "/prod/any"), 429, "POST on ANY again")
}

// A rule counts per combination of its keyBy values (header, query
// parameter, API key); a request without a value counts under the empty
// one. A rule that counts every caller together is never shown in
// headers.
func TestRuleCountsPerCombinationOfValues(t *testing.T) {
	t.Parallel()
	snap := withRules(snapshot(plans.Stage{}, res{"/pets", methods(mock(false), "GET")}),
		plans.RateLimitRule{Name: "tenant-channel", KeyBy: []string{"header:X-Tenant", "query:channel"}, Algorithm: plans.SlidingWindow, Limit: i32(1), WindowSeconds: i32(3600)},
		plans.RateLimitRule{Name: "everyone", Algorithm: plans.TokenBucket, RateLimit: f64(100), BurstLimit: i32(100)})
	tg := mustGateway(t, snap, nil)
	first := tg.do(t, "GET", "/prod/pets?channel=web", "X-Tenant", "acme")
	wantStatus(t, first, 200, "acme/web")
	if p := first.header.Get("RateLimit-Policy"); p != `"tenant-channel";q=1;w=3600` {
		t.Errorf("RateLimit-Policy %q: want the private rule only", p)
	}
	wantStatus(t, tg.do(t, "GET", "/prod/pets?channel=web", "X-Tenant", "acme"), 429, "acme/web again")
	wantStatus(t, tg.do(t, "GET", "/prod/pets?channel=app", "X-Tenant", "acme"), 200, "acme/app")
	wantStatus(t, tg.do(t, "GET", "/prod/pets?channel=web", "X-Tenant", "acme:web"), 200, "a value that would collide if joined")
	wantStatus(t, tg.do(t, "GET", "/prod/pets"), 200, "no values")
	wantStatus(t, tg.do(t, "GET", "/prod/pets?channel="), 429, "empty values count as missing ones")
}

// A sliding-window rule binds: limit requests per window, then 429.
func TestSlidingWindowRuleBinds(t *testing.T) {
	t.Parallel()
	snap := withRules(snapshot(plans.Stage{}, res{"/pets", methods(mock(false), "GET")}),
		plans.RateLimitRule{Name: "sliding", KeyBy: []string{"ip"}, Algorithm: plans.SlidingWindow, Limit: i32(3), WindowSeconds: i32(3600)})
	tg := mustGateway(t, snap, nil)
	for range 3 {
		wantStatus(t, tg.do(t, "GET", "/prod/pets"), 200, "within the window's limit")
	}
	got := tg.do(t, "GET", "/prod/pets")
	wantError(t, got, 429, "Too Many Requests", "TooManyRequestsException")
	// The window ends before the estimate lets one more in: the rule's t
	// is its Retry-After, never sooner.
	ra := got.header.Get("Retry-After")
	if _, after, ok := strings.Cut(got.header.Get("RateLimit"), ";t="); ra == "" || !ok || after != ra {
		t.Errorf("RateLimit %q with Retry-After %q: want t equal to Retry-After", got.header.Get("RateLimit"), ra)
	}
}

// blockingUpstream is an upstream whose requests wait until release is
// closed (or their client went away); started receives one value per
// request it got, gone one per request whose context ended.
type blockingUpstream struct {
	started, gone chan struct{}
	release       chan struct{}
}

func newBlockingUpstream(t *testing.T) (*blockingUpstream, string) {
	u := &blockingUpstream{started: make(chan struct{}, 16), gone: make(chan struct{}, 16), release: make(chan struct{})}
	srv := httptestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.started <- struct{}{}
		select {
		case <-u.release:
			w.WriteHeader(200)
		case <-r.Context().Done():
			u.gone <- struct{}{}
		}
	}))
	t.Cleanup(func() {
		select {
		case <-u.release:
		default:
			close(u.release)
		}
	})
	return u, srv.URL
}

// A concurrency rule binds while a request is in flight and frees its
// slot when the response ends, and when the client goes away.
func TestConcurrencyRuleReleasedWhenTheResponseEndsOrTheClientLeaves(t *testing.T) {
	t.Parallel()
	up, url := newBlockingUpstream(t)
	snap := withRules(snapshot(plans.Stage{}, res{"/slow", methods(proxy(false, url), "GET")}, res{"/fast", methods(mock(false), "GET")}),
		plans.RateLimitRule{Name: "one-at-a-time", KeyBy: []string{"header:X-Tenant"}, Algorithm: plans.Concurrency, Limit: i32(1)})
	tg := mustGateway(t, snap, nil)

	// a client that goes away frees its slot
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequestWithContext(ctx, "GET", tg.http.URL+"/prod/slow", nil)
		req.Host, req.Header = testHost, http.Header{"X-Tenant": {"acme"}}
		if resp, err := tg.http.Client().Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-up.started
	got := tg.do(t, "GET", "/prod/fast", "X-Tenant", "acme")
	wantError(t, got, 429, "Too Many Requests", "TooManyRequestsException")
	if p := got.header.Get("RateLimit-Policy"); p != `"one-at-a-time";q=1` {
		t.Errorf("RateLimit-Policy %q", p)
	}
	wantStatus(t, tg.do(t, "GET", "/prod/fast", "X-Tenant", "other"), 200, "another tenant")
	cancel()
	<-done
	<-up.gone
	waittest.Until(t, "the slot of a client that went away freed", 10*time.Second, func() bool {
		return tg.do(t, "GET", "/prod/fast", "X-Tenant", "acme").status == 200
	})

	// a response that ends frees its slot
	finished := make(chan int)
	go func() {
		req, _ := http.NewRequest("GET", tg.http.URL+"/prod/slow", nil)
		req.Host, req.Header = testHost, http.Header{"X-Tenant": {"acme"}}
		resp, err := tg.http.Client().Do(req)
		if err != nil {
			finished <- 0
			return
		}
		resp.Body.Close()
		finished <- resp.StatusCode
	}()
	<-up.started
	wantStatus(t, tg.do(t, "GET", "/prod/fast", "X-Tenant", "acme"), 429, "while the slow request runs")
	close(up.release)
	if s := <-finished; s != 200 {
		t.Fatalf("slow request: %d", s)
	}
	wantStatus(t, tg.do(t, "GET", "/prod/fast", "X-Tenant", "acme"), 200, "once the response ended")
}

// A leaky-bucket rule delays the excess rather than refusing it: requests
// arriving together leave one turn (1/rate) apart, up to burstLimit
// waiting; the one beyond is refused.
func TestLeakyBucketRuleDelaysRatherThanRefuses(t *testing.T) {
	t.Parallel()
	snap := withRules(snapshot(plans.Stage{}, res{"/pets", methods(mock(false), "GET")}),
		plans.RateLimitRule{Name: "smooth", KeyBy: []string{"ip"}, Algorithm: plans.LeakyBucket, RateLimit: f64(10), BurstLimit: i32(2), MaxDelayMillis: i32(1000)})
	tg := mustGateway(t, snap, nil)
	type result struct {
		status int
		took   time.Duration
	}
	results := make([]result, 4)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			start := time.Now()
			got := tg.do(t, "GET", "/prod/pets")
			results[i] = result{got.status, time.Since(start)}
		})
	}
	wg.Wait()
	var admitted []time.Duration
	refused := 0
	for _, r := range results {
		switch r.status {
		case 200:
			admitted = append(admitted, r.took)
		case 429:
			refused++
		}
	}
	if len(admitted) != 3 || refused != 1 {
		t.Fatalf("results %v: want 3 admitted (one at once, two waiting) and 1 refused", results)
	}
	sort.Slice(admitted, func(i, j int) bool { return admitted[i] < admitted[j] })
	// Each waits at least its turn: 0, 100 ms, 200 ms after the first was
	// decided (1 ms of slack for the rounding of the clocks).
	for i, took := range admitted {
		if min := time.Duration(i)*100*time.Millisecond - time.Millisecond; took < min {
			t.Errorf("admitted request %d took %v, want at least %v (its turn)", i, took, min)
		}
	}
	t.Logf("leaky bucket: admitted after %v", admitted)
}

// A client that goes away while its request waits for its turn ends the
// request there and gives the turn back: the next request takes it.
func TestLeakyBucketTurnGivenBackWhenTheClientLeaves(t *testing.T) {
	t.Parallel()
	snap := withRules(snapshot(plans.Stage{}, res{"/pets", methods(mock(false), "GET")}),
		plans.RateLimitRule{Name: "smooth", Algorithm: plans.LeakyBucket, RateLimit: f64(0.5), BurstLimit: i32(1), MaxDelayMillis: i32(5000)})
	tg := mustGateway(t, snap, nil)
	wantStatus(t, tg.do(t, "GET", "/prod/pets"), 200, "first, at once")
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", tg.http.URL+"/prod/pets", nil)
	req.Host = testHost
	if resp, err := tg.http.Client().Do(req); err == nil { // it would wait 2 s
		resp.Body.Close()
		t.Fatalf("second: %d before its turn", resp.StatusCode)
	}
	waittest.Until(t, "the left request logged", 10*time.Second, func() bool { return strings.Contains(tg.logs.String(), "waited for its turn") })
	// Without the give-back the queue holds one waiting (burst 1) for
	// 2 s more, and this one would be refused.
	wantStatus(t, tg.do(t, "GET", "/prod/pets"), 200, "the turn given back")
}

// A shadow rule only reports: every request goes on, each would-be
// refusal is logged with its rule and counted, and the caller's headers
// do not show the rule.
func TestShadowRuleOnlyReports(t *testing.T) {
	t.Parallel()
	snap := withRules(snapshot(plans.Stage{}, res{"/pets", methods(mock(false), "GET")}),
		plans.RateLimitRule{Name: "trial", KeyBy: []string{"ip"}, Algorithm: plans.FixedWindow, Limit: i32(1), WindowSeconds: i32(3600), Mode: plans.ModeShadow})
	tg := mustGateway(t, snap, nil)
	for i := range 3 {
		got := tg.do(t, "GET", "/prod/pets")
		wantStatus(t, got, 200, "shadow rule")
		if h := got.header.Get("RateLimit-Policy") + got.header.Get("Retry-After"); h != "" {
			t.Errorf("request %d shows the shadow rule: %q", i, h)
		}
	}
	if n := counterValue(t, tg.metrics.ShadowRefusals.WithLabelValues(testAPI, testStage, "rule", "trial")); n != 2 {
		t.Errorf("tollgate_shadow_refusals_total: %v, want 2", n)
	}
	if n := strings.Count(tg.logs.String(), `"msg":"shadow limit would refuse"`); n != 2 {
		t.Errorf("%d would-be refusals logged, want 2:\n%s", n, tg.logs.String())
	}
	if !strings.Contains(tg.logs.String(), `"limit":"rule"`) ||
		!strings.Contains(tg.logs.String(), `"rule":"trial"`) {
		t.Errorf("the log does not name the rule:\n%s", tg.logs.String())
	}
}

// On a keyed method a rule by API key is decided with the plan's bucket,
// all or nothing, and the headers list the plan's policy and the rule's.
func TestRuleByAPIKeyBesideThePlan(t *testing.T) {
	t.Parallel()
	snap := withRules(keyedSnapshot(),
		plans.RateLimitRule{Name: "per-key", ResourcePath: "/keyed", KeyBy: []string{"apiKey"}, Algorithm: plans.FixedWindow, Limit: i32(1), WindowSeconds: i32(60)})
	tg := mustGateway(t, snap, nil)
	addTestKeys(tg.keys)
	got := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey)
	wantStatus(t, got, 200, "first")
	if p := got.header.Get("RateLimit-Policy"); p != `"throttle";q=100;w=1, "per-key";q=1;w=60` {
		t.Errorf("RateLimit-Policy %q", p)
	}
	if x := got.header.Get("X-RateLimit-Remaining"); x != "99" {
		t.Errorf("X-RateLimit-Remaining %q: the plan's", x)
	}
	refused := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey)
	wantError(t, refused, 429, "Too Many Requests", "TooManyRequestsException")
	if r := refused.header.Get("RateLimit"); !strings.Contains(r, `"per-key";r=0;t=`) {
		t.Errorf("RateLimit %q after the rule refused", r)
	}
	wantStatus(t, tg.do(t, "GET", "/prod/open"), 200, "the open method, outside the rule's path")
}

// A usage plan tagged tollgate:mode=shadow only reports: its throttle and
// quota are decided in counters of their own, every would-be refusal is
// logged and counted with its level, nothing is refused and no plan
// header is shown; enforcing it afterwards starts from a full bucket and
// an unused quota.
func TestShadowPlanOnlyReports(t *testing.T) {
	t.Parallel()
	snap := keyedSnapshot()
	p := snap.Plans["plan01"]
	p.Throttle = &plans.Throttle{RateLimit: 0.001, BurstLimit: 2}
	p.Quota = &plans.Quota{Limit: 3, Period: plans.PeriodDay}
	p.Tags = map[string]string{plans.ModeTag: plans.ModeTagShadow}
	tg := mustGateway(t, snap, nil)
	addTestKeys(tg.keys)
	for i := range 5 {
		got := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey)
		wantStatus(t, got, 200, "shadow plan")
		for _, h := range []string{"X-RateLimit-Limit", "RateLimit-Policy", "RateLimit", "Retry-After"} {
			if v := got.header.Get(h); v != "" {
				t.Errorf("request %d: %s %q from a shadow plan", i+1, h, v)
			}
		}
	}
	// the bucket (burst 2) would have refused requests 3-5; the quota (3,
	// counting on its own) requests 4 and 5
	for level, want := range map[string]float64{"plan": 3, "quota": 2} {
		if n := counterValue(t, tg.metrics.ShadowRefusals.WithLabelValues(testAPI, testStage, level, "")); n != want {
			t.Errorf("tollgate_shadow_refusals_total{level=%q}: %v, want %v", level, n, want)
		}
	}
	if n := strings.Count(tg.logs.String(), `"limit":"quota"`); n != 2 {
		t.Errorf("%d quota would-be refusals logged, want 2", n)
	}

	enforced := keyedSnapshot()
	enforced.Version = 2
	enforced.Plans["plan01"].Throttle = &plans.Throttle{RateLimit: 0.001, BurstLimit: 2}
	enforced.Plans["plan01"].Quota = &plans.Quota{Limit: 3, Period: plans.PeriodDay}
	if err := tg.SetSnapshot(enforced); err != nil {
		t.Fatal(err)
	}
	got := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey)
	wantStatus(t, got, 200, "enforced")
	if p, want := got.header.Get("RateLimit"), `"throttle";r=1;`; !strings.HasPrefix(p, want) || !strings.Contains(p, `"quota";r=2;`) {
		t.Errorf("RateLimit %q once enforced: want a fresh bucket and quota (the shadow counters are its own)", p)
	}
}

// A hot client of a method with a TOKEN_BUCKET, FIXED_WINDOW or
// SLIDING_WINDOW rule may be admitted on its node's capacity leases
// (docs/leases.md, "Rate-limit rules"): 320 requests of 16 concurrent
// callers from one address, against a rule of 200 on a node with leases,
// admit exactly 200, and each admitted response shows an r in RateLimit
// below the rule's limit (what the node holds on a lease counts as
// remaining). Distinct r values are a sequential caller's promise only: a
// lease's give-back raises what Redis counts as remaining while another
// lease of the node is being spent, so concurrent callers may see a value
// twice.
func TestHotRuleClientIsExactOnLeases(t *testing.T) {
	t.Parallel()
	for _, r := range []plans.RateLimitRule{
		{Algorithm: plans.TokenBucket, RateLimit: f64(0.001), BurstLimit: i32(200)},
		{Algorithm: plans.FixedWindow, Limit: i32(200), WindowSeconds: i32(3600)},
		{Algorithm: plans.SlidingWindow, Limit: i32(200), WindowSeconds: i32(3600)},
	} {
		t.Run(r.Algorithm, func(t *testing.T) {
			t.Parallel()
			r.Name, r.KeyBy = "per-ip", []string{"ip"}
			snap := withRules(snapshot(plans.Stage{}, res{"/pets", methods(mock(false), "GET")}), r)
			rdb, prefix := redistest.MustClient(t)
			eng := engine.New(rdb, engine.Options{Prefix: prefix, Timeout: 5 * time.Second})
			if err := eng.Load(t.Context()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = eng.Close() })
			tg := mustGatewayOn(t, rdb, prefix, snap, func(o *Options) { o.Engine = newLimiter(t, eng, true) })
			remaining := regexp.MustCompile(`^"per-ip";r=(\d+);`)
			admitted := hammertest.Count(16, 20, func(_, _ int) bool {
				got := tg.do(t, "GET", "/prod/pets")
				if got.status != http.StatusOK {
					return false
				}
				r := -1
				if m := remaining.FindStringSubmatch(got.header.Get("RateLimit")); m != nil {
					r, _ = strconv.Atoi(m[1])
				}
				if r < 0 || r >= 200 {
					t.Errorf("admitted with RateLimit %q: want an r below the rule's 200", got.header.Get("RateLimit"))
				}
				return true
			})
			if admitted != 200 {
				t.Errorf("admitted %d of 320, want the rule's 200", admitted)
			}
			t.Logf("%d round trips for 320 requests", eng.Trips())
		})
	}
}
