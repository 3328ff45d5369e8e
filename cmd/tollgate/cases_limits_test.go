package main

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"
)

// Gateway-level versions of the limiter fault cases (each from a public bug
// report against another gateway or limiter; the BCnn ids in the comments
// below name them): config through the admin API (AWS SDK), requests alternating the two
// gateway nodes, statuses and headers as clients see them.

// TestLimitOfNAdmitsExactlyN: a limit of N admits exactly N, through both nodes,
// at every level that can refuse (plan bucket, plan-method bucket, stage
// bucket, quota of every period), and each 200 reaches the upstream once;
// with one Redis primary and with every node on the Redis Cluster
// (TOLLGATE_REDIS_URL=redis-cluster://...).
func TestLimitOfNAdmitsExactlyN(t *testing.T) {
	t.Parallel()
	eachRedis(t, func(t *testing.T, cluster bool) { exactlyN(t, mustStackWith(t, stackOptions{cluster: cluster})) })
}

// eachRedis runs test in parallel subtests on one Redis ("primary") and on
// the test Redis Cluster ("cluster").
func eachRedis(t *testing.T, test func(t *testing.T, cluster bool)) {
	for _, redis := range []struct {
		name    string
		cluster bool
	}{{"primary", false}, {"cluster", true}} {
		t.Run(redis.name, func(t *testing.T) {
			t.Parallel()
			test(t, redis.cluster)
		})
	}
}

func exactlyN(t *testing.T, s *stack) {
	api := s.mustCaseAPI(t)
	plan5 := func(n int, limit string) []seq { // n admitted, counting down from n-1
		var out []seq
		for i := n - 1; i >= 0; i-- {
			out = append(out, seq{200, itoa(i), limit})
		}
		return append(out, seq{429, "0", limit})
	}
	for _, tc := range []struct {
		name string
		plan planSpec
		want []seq
	}{
		{"A plan throttle 0.001/5", planSpec{Throttle: throttle(0.001, 5)}, plan5(5, "5")},
		{"B quota 5 per DAY", planSpec{Throttle: throttle(10000, 10000), Quota: quota(5, types.QuotaPeriodTypeDay, 0)}, plan5(5, "5")},
		{"C quota 1 per DAY", planSpec{Quota: quota(1, types.QuotaPeriodTypeDay, 0)}, plan5(1, "1")},
		{"C burst 1 rate 0.001", planSpec{Throttle: throttle(0.001, 1)}, plan5(1, "1")},
		{"sibling plan-method throttle 0.001/5", planSpec{Throttle: throttle(10000, 10000),
			Method: map[string]types.ThrottleSettings{"/items/GET": {RateLimit: 0.001, BurstLimit: 5}}}, plan5(5, "5")},
		{"sibling quota 5 per WEEK", planSpec{Quota: quota(5, types.QuotaPeriodTypeWeek, 3)}, plan5(5, "5")},
		{"sibling quota 5 per MONTH", planSpec{Quota: quota(5, types.QuotaPeriodTypeMonth, 27)}, plan5(5, "5")},
		// A rate-0 bucket sends no X-RateLimit headers (headers.go: it never
		// refills, so it has no reset).
		{"sibling rate 0 burst 3", planSpec{Throttle: throttle(0, 3)}, append(repeat(3, seq{200, "", ""}), seq{429, "", ""})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, key := s.mustKey(t, s.mustPlan(t, api.id, tc.plan))
			s.sync(t)
			before := s.echo.Hits()
			s.expectSeq(t, api.id, key, tc.want)
			if got, want := s.echo.Hits()-before, int64(len(tc.want)-1); got != want {
				t.Errorf("upstream hits: got %d, want %d", got, want)
			}
		})
	}
	t.Run("sibling stage method throttle 0.001/5", func(t *testing.T) {
		api := s.mustCaseAPI(t) // its own stage bucket
		s.mustPatchStage(t, api.id, "/*/*/throttling/rateLimit", "0.001", "/*/*/throttling/burstLimit", "5")
		_, k1 := s.mustKey(t, s.mustPlan(t, api.id, planSpec{}))
		_, k2 := s.mustKey(t, s.mustPlan(t, api.id, planSpec{}))
		s.sync(t)
		// The stage bucket is shared by every key: 3 + 2 admitted, then none;
		// a plan without limits sends no rate-limit headers.
		s.expectSeq(t, api.id, k1, repeat(3, seq{200, "", ""}))
		s.expectSeq(t, api.id, k2, append(repeat(2, seq{200, "", ""}), seq{429, "", ""}))
		s.expectSeq(t, api.id, k1, []seq{{429, "", ""}})
	})
}

// TestAccountBucketAdmitsExactlyItsBurst: the account bucket admits exactly its burst
// over every key and both nodes, and its 429 carries Retry-After.
// It has its own stack: the account limit applies to all traffic.
func TestAccountBucketAdmitsExactlyItsBurst(t *testing.T) {
	t.Parallel()
	s := mustStack(t)
	api := s.mustCaseAPI(t)
	_, k1 := s.mustKey(t, s.mustPlan(t, api.id, planSpec{}))
	_, k2 := s.mustKey(t, s.mustPlan(t, api.id, planSpec{}))
	s.mustPatchAccount(t, 0.001, 5)
	s.sync(t)
	s.expectSeq(t, api.id, k1, repeat(3, seq{200, "", ""}))
	s.expectSeq(t, api.id, k2, repeat(2, seq{200, "", ""}))
	res := s.expectSeq(t, api.id, k1, []seq{{429, "", ""}})[0]
	checkHeader(t, 6, res, "x-amzn-ErrorType", "TooManyRequestsException")
	if ra := res.Header.Get("Retry-After"); ra == "" {
		t.Errorf("account 429: no Retry-After")
	}
}

// TestRemainingHeaderCountsDownToZero: X-RateLimit-Remaining counts down to 0 and
// stays there, X-RateLimit-Limit is on every answer (429s included),
// concurrent successes each see their own count, and refusals charge
// nothing at either level.
func TestRemainingHeaderCountsDownToZero(t *testing.T) {
	t.Parallel()
	s := mustStack(t)
	api := s.mustCaseAPI(t)
	p := s.mustPlan(t, api.id, planSpec{Throttle: throttle(10000, 10000), Quota: quota(3, types.QuotaPeriodTypeDay, 0)})
	_, k1 := s.mustKey(t, p)
	_, k2 := s.mustKey(t, p)
	s.sync(t)
	t.Run("sequential", func(t *testing.T) {
		res := s.expectSeq(t, api.id, k1, []seq{{200, "2", "3"}, {200, "1", "3"}, {200, "0", "3"}, {429, "0", "3"}, {429, "0", "3"}})
		for i, r := range res {
			if rl := r.Header.Get("RateLimit"); rl == "" || containsNegative(rl) {
				t.Errorf("request %d: RateLimit = %q, want present and never negative", i+1, rl)
			}
		}
	})
	t.Run("concurrent", func(t *testing.T) {
		ok, rem := s.countOK(t, api.id, k2, 3)
		slices.Sort(rem)
		if ok != 3 || !slices.Equal(rem, []string{"0", "1", "2"}) {
			t.Errorf("3 concurrent: got %d admitted with Remaining %v, want 3 with [0 1 2]", ok, rem)
		}
	})
	t.Run("sibling quota refusal charges no token", func(t *testing.T) {
		p := s.mustPlan(t, api.id, planSpec{Throttle: throttle(0.001, 2), Quota: quota(1, types.QuotaPeriodTypeDay, 0)})
		_, k := s.mustKey(t, p)
		s.sync(t)
		res := s.expectSeq(t, api.id, k, []seq{{200, "0", "1"}, {429, "0", "1"}, {429, "0", "1"}})
		checkHeader(t, 2, res[1], "x-amzn-ErrorType", "LimitExceededException")
		s.mustPatchPlan(t, p, "/quota/limit", "5")
		s.sync(t)
		// One token left of burst 2: the quota refusals took none.
		s.expectSeq(t, api.id, k, []seq{{200, "3", "5"}, {429, "3", "5"}})
	})
}

// containsNegative reports whether an IETF RateLimit field value holds a
// negative number (r=-1).
func containsNegative(v string) bool {
	for i := 0; i+1 < len(v); i++ {
		if v[i] == '=' && v[i+1] == '-' {
			return true
		}
	}
	return false
}

// TestLimitsArePerKey: limits are per key, never per plan or per "no
// identity"; requests without a valid key touch no bucket; the failed
// attempt limiter keeps distinct client addresses apart; per-method plan
// buckets keep methods apart.
func TestLimitsArePerKey(t *testing.T) {
	t.Parallel()
	s := mustStackWith(t, stackOptions{trustedProxies: []string{"127.0.0.1/32"}})
	api := s.mustCaseAPI(t)
	p := s.mustPlan(t, api.id, planSpec{Throttle: throttle(0.01, 2)})
	_, k1 := s.mustKey(t, p)
	_, k2 := s.mustKey(t, p)
	s.sync(t)
	from := func(addr string) http.Header { return http.Header{"X-Forwarded-For": {addr}} }

	s.expectSeq(t, api.id, k1, []seq{{200, "1", "2"}, {200, "0", "2"}, {429, "0", "2"}})
	s.expectSeq(t, api.id, k2, []seq{{200, "1", "2"}, {200, "0", "2"}})
	for name, h := range map[string]http.Header{
		"X-API-KEY":  {"X-API-KEY": {k1}},
		"x-api-key":  {"x-api-key": {k1}},
		"whitespace": {"X-Api-Key": {"  " + k1 + " "}},
	} {
		if res := s.send(t, 1, http.MethodGet, api.id, "/prod/items", h); res.StatusCode != 429 {
			t.Errorf("K1 as %s: got %d, want 429 (same identity)", name, res.StatusCode)
		}
	}
	var forbidden, other int
	for i := range 200 {
		h := from("10.0.0.1")
		if i >= 100 {
			h.Set("X-Api-Key", "UnknownUnknownUnknown"+itoa(i))
		}
		switch s.send(t, i%2, http.MethodGet, api.id, "/prod/items", h).StatusCode {
		case 403:
			forbidden++
		case 429: // the failed-attempt limiter of 10.0.0.1, without a Redis lookup
		default:
			other++
		}
	}
	if forbidden < 80 || other != 0 {
		t.Errorf("200 requests without a valid key: %d × 403 and %d others, want ≥ 80 × 403 (burst 40 per node) and only 403/429", forbidden, other)
	}
	if res := s.send(t, 0, http.MethodGet, api.id, "/prod/items", from("10.0.0.2")); res.StatusCode != 403 {
		t.Errorf("a second client address without a key: got %d, want 403 (not the first client's 429)", res.StatusCode)
	}
	if n := s.countKeys(t, "{k:}*"); n != 0 {
		t.Errorf("Redis keys of an empty key id: got %d, want 0", n)
	}
	_, k3 := s.mustKey(t, p)
	s.sync(t)
	s.expectSeq(t, api.id, k3, []seq{{200, "1", "2"}, {200, "0", "2"}, {429, "0", "2"}})

	t.Run("preflight without a key", func(t *testing.T) {
		for i := range 50 {
			if res := s.send(t, i%2, http.MethodOptions, api.id, "/prod/items", nil); res.StatusCode != 200 {
				t.Fatalf("preflight %d: got %d, want 200", i+1, res.StatusCode)
			}
		}
	})
	t.Run("sibling plan-method buckets per method", func(t *testing.T) {
		_, k := s.mustKey(t, s.mustPlan(t, api.id, planSpec{Throttle: throttle(0.01, 1),
			Method: map[string]types.ThrottleSettings{"/items/GET": {RateLimit: 0.01, BurstLimit: 1}}}))
		s.sync(t)
		s.expectSeq(t, api.id, k, []seq{{200, "0", "1"}, {429, "0", "1"}})
		if res := s.call(t, 0, api.id, "/prod/other", k); res.StatusCode != 200 {
			t.Errorf("GET /other after /items is throttled: got %d, want 200 (its own plan bucket)", res.StatusCode)
		}
	})
}

// countKeys counts the stack's Redis keys matching prefix + ":" + pattern.
func (s *stack) countKeys(t *testing.T, pattern string) int {
	t.Helper()
	ctx := context.Background()
	keys, err := s.admin.rdb.Keys(ctx, s.admin.Config.RedisPrefix+":"+pattern).Result()
	if err != nil {
		t.Fatalf("KEYS: %v", err)
	}
	return len(keys)
}
