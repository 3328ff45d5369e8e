package main

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"tollgate/internal/clocktest"

	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"
)

// Cases that need exact instants: the limiters of both gateways read a
// test clock instead of Redis TIME.

// mustClockStack starts a stack and a caseAPI with both limiters on a
// test clock at 2026-06-15 12:00 UTC (returned as start); the test runs in
// parallel with others.
func mustClockStack(t *testing.T) (*stack, caseAPI, *clocktest.Clock, time.Time) {
	t.Parallel()
	s := mustStack(t)
	start := utc(t, "2026-06-15T12:00:00Z")
	return s, s.mustCaseAPI(t), s.useClock(t, start), start
}

// step is one request at an offset from the case's start: the status and,
// when not "-", the Retry-After and X-RateLimit-Remaining wanted.
type step struct {
	at               time.Duration
	status           int
	retry, remaining string
}

// runSteps sends each step's GET /prod/items with key at start+at,
// alternating the gateways.
func (s *stack) runSteps(t *testing.T, c *clocktest.Clock, start time.Time, apiID, key string, steps []step) []*http.Response {
	t.Helper()
	out := make([]*http.Response, len(steps))
	for i, st := range steps {
		c.Set(start.Add(st.at))
		res := s.call(t, i%2, apiID, "/prod/items", key)
		out[i] = res
		if res.StatusCode != st.status {
			t.Errorf("request %d at +%v via gateway %d: got %d, want %d", i+1, st.at, i%2, res.StatusCode, st.status)
		}
		checkHeader(t, i+1, res, "Retry-After", st.retry)
		checkHeader(t, i+1, res, "X-RateLimit-Remaining", st.remaining)
	}
	return out
}

// TestFractionalRatesAreExact: non-integral rates stored in PostgreSQL,
// pushed through Redis and run in Lua give a token after exactly one
// token's worth of time, at the plan, plan-method and stage levels.
func TestFractionalRatesAreExact(t *testing.T) {
	s, api, c, start := mustClockStack(t)
	tenThirteenths := []step{{0, 200, "", "-"}, {1300 * time.Millisecond, 200, "", "-"},
		{2600 * time.Millisecond, 200, "", "-"}, {3250 * time.Millisecond, 429, "1", "-"}}
	oneThird := []step{{0, 200, "", "-"}, {3 * time.Second, 200, "", "-"}, {5999 * time.Millisecond, 429, "1", "-"}}
	for _, tc := range []struct {
		name  string
		rate  float64
		level string // plan, method or stage
		steps []step
	}{
		{"plan 10/13", 0.7692307692307693, "plan", tenThirteenths},
		{"plan 1/3", 0.3333333333333333, "plan", oneThird},
		{"sibling plan-method 10/13", 0.7692307692307693, "method", tenThirteenths},
		{"sibling plan-method 1/3", 0.3333333333333333, "method", oneThird},
		{"sibling stage 10/13", 0.7692307692307693, "stage", tenThirteenths},
		{"sibling stage 1/3", 0.3333333333333333, "stage", oneThird},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, p := api, planSpec{Throttle: throttle(tc.rate, 1)}
			switch tc.level {
			case "method":
				p = planSpec{Throttle: throttle(10000, 10000), Method: map[string]types.ThrottleSettings{"/items/GET": {RateLimit: tc.rate, BurstLimit: 1}}}
			case "stage":
				a, p = s.mustCaseAPI(t), planSpec{}
				s.mustPatchStage(t, a.id, "/*/*/throttling/rateLimit", strconv.FormatFloat(tc.rate, 'g', -1, 64), "/*/*/throttling/burstLimit", "1")
			}
			_, key := s.mustKey(t, s.mustPlan(t, a.id, p))
			s.sync(t)
			s.runSteps(t, c, start, a.id, key, tc.steps)
			start = start.Add(time.Hour)
		})
	}
}

// TestFastClientIsNotLockedOut: a client sending twice its rate keeps getting its
// share; refused requests charge nothing.
func TestFastClientIsNotLockedOut(t *testing.T) {
	s, api, c, start := mustClockStack(t)
	_, key := s.mustKey(t, s.mustPlan(t, api.id, planSpec{Throttle: throttle(5, 5)}))
	s.sync(t)
	var total, late int
	for i := range 100 { // one every 100 ms for 10 s
		c.Set(start.Add(time.Duration(i) * 100 * time.Millisecond))
		if s.call(t, i%2, api.id, "/prod/items", key).StatusCode == 200 {
			total++
			if i >= 50 {
				late++
			}
		}
	}
	// 5 burst + 5/s over 9.9 s; seconds 5..10 admit 5/s.
	if total < 53 || total > 57 || late < 23 || late > 27 {
		t.Errorf("admitted %d in 10 s (%d in seconds 5-10), want 55±2 (25±2)", total, late)
	}
	at := start.Add(9900*time.Millisecond + time.Second)
	for i := range 5 {
		c.Set(at)
		if res := s.call(t, i%2, api.id, "/prod/items", key); res.StatusCode != 200 {
			t.Errorf("after a 1 s pause, request %d: got %d, want 200", i+1, res.StatusCode)
		}
	}
}

// TestThrottledRequestKeepsQuota: a throttle 429 leaves the quota's
// Remaining as it was.
func TestThrottledRequestKeepsQuota(t *testing.T) {
	s, api, c, start := mustClockStack(t)
	_, key := s.mustKey(t, s.mustPlan(t, api.id, planSpec{Throttle: throttle(0.01, 1), Quota: quota(10, types.QuotaPeriodTypeDay, 0)}))
	s.sync(t)
	res := s.runSteps(t, c, start, api.id, key, []step{{0, 200, "", "9"}, {time.Second, 429, "99", "9"}, {100 * time.Second, 200, "", "8"}})
	checkHeader(t, 2, res[1], "x-amzn-ErrorType", "TooManyRequestsException")
}

// TestRetryAfterIsTheRealWait: Retry-After only on 429s, equal to the real wait
// rounded up, for the plan, plan-method and stage buckets and the quota.
func TestRetryAfterIsTheRealWait(t *testing.T) {
	s, api, c, start := mustClockStack(t)
	bucket := []step{{0, 200, "", "-"}, {100 * time.Millisecond, 429, "2", "-"}, {2100 * time.Millisecond, 200, "", "-"}}
	for _, tc := range []struct {
		name  string
		level string
	}{{"plan 0.5/1", "plan"}, {"sibling plan-method 0.5/1", "method"}, {"sibling stage 0.5/1", "stage"}} {
		t.Run(tc.name, func(t *testing.T) {
			a, p := api, planSpec{Throttle: throttle(0.5, 1)}
			switch tc.level {
			case "method":
				p = planSpec{Method: map[string]types.ThrottleSettings{"/items/GET": {RateLimit: 0.5, BurstLimit: 1}}}
			case "stage":
				a, p = s.mustCaseAPI(t), planSpec{}
				s.mustPatchStage(t, a.id, "/*/*/throttling/rateLimit", "0.5", "/*/*/throttling/burstLimit", "1")
			}
			_, key := s.mustKey(t, s.mustPlan(t, a.id, p))
			s.sync(t)
			s.runSteps(t, c, start, a.id, key, bucket)
			start = start.Add(time.Hour)
		})
	}
	for _, tc := range []struct {
		name, at, retry, reset string
		q                      *types.QuotaSettings
	}{
		{"quota DAY at 23:59:00", "2026-06-15T23:59:00Z", "60", "2026-06-16T00:00:00Z", quota(1, types.QuotaPeriodTypeDay, 0)},
		{"sibling quota WEEK Saturday 23:59:30", "2026-06-13T23:59:30Z", "30", "2026-06-14T00:00:00Z", quota(1, types.QuotaPeriodTypeWeek, 0)},
		{"sibling quota MONTH offset 2 at 3 March 23:59:59.5", "2026-03-02T23:59:59.5Z", "1", "2026-03-03T00:00:00Z", quota(1, types.QuotaPeriodTypeMonth, 2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, key := s.mustKey(t, s.mustPlan(t, api.id, planSpec{Quota: tc.q}))
			s.sync(t)
			res := s.runSteps(t, c, utc(t, tc.at), api.id, key, []step{{0, 200, "", "0"}, {0, 429, tc.retry, "0"}})
			reset := strconv.FormatInt(utc(t, tc.reset).Unix(), 10)
			checkHeader(t, 1, res[0], "X-RateLimit-Reset", reset)
			checkHeader(t, 2, res[1], "X-RateLimit-Reset", reset)
		})
	}
}

// TestLimitsFollowRedisClock: decisions and periods follow the limiter's
// one clock (Redis TIME, here the test clock), never a node's: both nodes
// run with clocks months away from it and a Tokyo time zone (TestMain),
// yet count in the right period and share one bucket.
func TestLimitsFollowRedisClock(t *testing.T) {
	t.Parallel()
	s := mustStack(t)
	api := s.mustCaseAPI(t)
	start := utc(t, "2026-06-15T23:59:55Z")
	c := s.useClock(t, start)
	_, key := s.mustKey(t, s.mustPlan(t, api.id, planSpec{Throttle: throttle(1, 5), Quota: quota(1000, types.QuotaPeriodTypeDay, 0)}))
	s.sync(t)
	ok := 0
	for i := range 20 { // 20 within 0.95 s, alternating nodes
		c.Set(start.Add(time.Duration(i) * 50 * time.Millisecond))
		if s.call(t, i%2, api.id, "/prod/items", key).StatusCode == 200 {
			ok++
		}
	}
	if ok != 5 {
		t.Errorf("20 requests in 0.95 s over two nodes: %d admitted, want 5 (burst 5, rate 1/s)", ok)
	}
	// 23:59:59.9 still counts in 15 June (5 used before): 994 left;
	// 00:00:00 opens 16 June.
	res := s.runSteps(t, c, utc(t, "2026-06-15T23:59:59.9Z"), api.id, key, []step{{0, 200, "", "994"}, {100 * time.Millisecond, 200, "", "999"}})
	checkHeader(t, 1, res[0], "X-RateLimit-Reset", strconv.FormatInt(utc(t, "2026-06-16T00:00:00Z").Unix(), 10))
	checkHeader(t, 2, res[1], "X-RateLimit-Reset", strconv.FormatInt(utc(t, "2026-06-17T00:00:00Z").Unix(), 10))
	t.Run("idle after a burst", func(t *testing.T) {
		at := utc(t, "2026-06-16T00:00:10Z") // 5 s idle refills burst 5
		s.runSteps(t, c, at, api.id, key, append(repeatStep(5, step{0, 200, "", "-"}), step{0, 429, "1", "-"}))
	})
}

func repeatStep(n int, st step) []step {
	out := make([]step, n)
	for i := range out {
		out[i] = st
	}
	return out
}

// TestQuotaPeriodsAreUTCCalendarPeriods: quotas are UTC calendar periods (not
// rolling windows, not local time) with the nodes in Asia/Tokyo (TestMain)
// and PostgreSQL sessions in America/New_York (startStack).
func TestQuotaPeriodsAreUTCCalendarPeriods(t *testing.T) {
	t.Parallel()
	s := mustStack(t)
	api := s.mustCaseAPI(t)
	c := s.useClock(t, utc(t, "2026-06-15T00:00:00Z"))
	day, week, month := types.QuotaPeriodTypeDay, types.QuotaPeriodTypeWeek, types.QuotaPeriodTypeMonth
	for _, tc := range []struct {
		name       string
		q          *types.QuotaSettings
		use        string // instant at which the whole quota is used
		next       string // instant of the probe
		nextStatus int
	}{
		{"DAY midnight", quota(3, day, 0), "2026-06-15T23:59:50Z", "2026-06-16T00:00:01Z", 200},
		{"DAY not rolling", quota(3, day, 0), "2026-06-15T15:00:00Z", "2026-06-16T00:00:05Z", 200},
		{"DAY not the Tokyo midnight", quota(3, day, 0), "2026-06-15T14:59:59Z", "2026-06-15T15:00:01Z", 429},
		{"MONTH", quota(2, month, 0), "2026-02-28T23:59:59Z", "2026-03-01T00:00:00Z", 200},
		{"WEEK starts Sunday", quota(1, week, 0), "2026-06-13T23:59:00Z", "2026-06-14T00:00:01Z", 200},
		// The case text expects 200 here; docs/behaviour.md ("Throttles and quota") (WEEK from
		// Sunday 00:00 UTC) put Sunday 23:59 and Monday 00:00:01 in one week.
		{"WEEK Sunday to Monday is one week", quota(1, week, 0), "2026-06-14T23:59:00Z", "2026-06-15T00:00:01Z", 429},
		{"sibling WEEK offset 1 starts Monday", quota(1, week, 1), "2026-06-14T23:59:00Z", "2026-06-15T00:00:01Z", 200},
		{"sibling MONTH offset 3 starts on the 4th", quota(1, month, 3), "2026-03-03T23:59:59Z", "2026-03-04T00:00:00Z", 200},
		{"sibling MONTH offset 3 not on the 1st", quota(1, month, 3), "2026-02-28T23:59:59Z", "2026-03-01T00:00:00Z", 429},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limit := int(tc.q.Limit)
			_, key := s.mustKey(t, s.mustPlan(t, api.id, planSpec{Quota: tc.q}))
			s.sync(t)
			var steps []step
			for i := limit - 1; i >= 0; i-- {
				steps = append(steps, step{0, 200, "", strconv.Itoa(i)})
			}
			use, next := utc(t, tc.use), utc(t, tc.next)
			s.runSteps(t, c, use, api.id, key, append(steps, step{0, 429, "-", "0"}))
			want := step{0, tc.nextStatus, "-", "0"}
			if tc.nextStatus == 200 {
				want.remaining = strconv.Itoa(limit - 1)
			}
			s.runSteps(t, c, next, api.id, key, []step{want})
		})
	}
	t.Run("Retry-After to the UTC midnight", func(t *testing.T) {
		_, key := s.mustKey(t, s.mustPlan(t, api.id, planSpec{Throttle: throttle(10000, 10000), Quota: quota(3, day, 0)}))
		s.sync(t)
		s.runSteps(t, c, utc(t, "2026-06-15T23:59:50Z"), api.id, key,
			[]step{{0, 200, "", "2"}, {0, 200, "", "1"}, {0, 200, "", "0"}, {0, 429, "10", "0"}})
	})
}
