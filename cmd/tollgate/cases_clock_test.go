package main

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"

	"tollgate/gateway"
	"tollgate/internal/clocktest"
	"tollgate/internal/redistest"
	"tollgate/internal/waittest"
	"tollgate/plans"
)

// useClock sets the stack's clock to at: every node's scripts read it
// from now on in place of Redis TIME (it is injected as the engine's
// Clock; its zero time means Redis TIME, restored at cleanup). The nodes'
// own clocks keep reading the real time, months away from the instants
// the cases use: any use of a node clock in a decision would show.
func (s *stack) useClock(t *testing.T, at time.Time) *clocktest.Clock {
	t.Helper()
	s.clock.Set(at)
	t.Cleanup(func() { s.clock.Set(time.Time{}) })
	return s.clock
}

// utc parses an RFC 3339 instant ("2026-06-15T23:59:50Z") or fails.
func utc(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// TestEveryDateFollowsRedisClockDaysAway runs the whole stack against a
// limiter Redis whose clock is three days ahead of the nodes' (noon of its
// day, far from any midnight): the day a request counts on, its quota
// period, GetUsage's today, the ledger's row, the partner endpoint's date
// and the restore after the limiter restarted empty all follow Redis's
// day, never the nodes'.
func TestEveryDateFollowsRedisClockDaysAway(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	ahead := 3*24*time.Hour + now.Truncate(24*time.Hour).Add(12*time.Hour).Sub(now)
	r := mustRedisServerWith(t, redistest.ClockEnv(t, ahead))
	ctx := t.Context()
	redisNow, err := r.client.Time(ctx).Result()
	must(t, "TIME", err)
	redisDay, nodeDay := plans.UTCDate(redisNow), plans.UTCDate(time.Now())
	if redisDay.Sub(nodeDay) != 3*24*time.Hour {
		t.Fatalf("the limiter's clock reads %v, the nodes' %v: want three days apart", redisNow, time.Now())
	}

	s := mustStackWith(t, stackOptions{redisURL: r.url(), flushInterval: 100 * time.Millisecond})
	api := s.mustCaseAPI(t)
	p := s.mustPlan(t, api.id, planSpec{Throttle: throttle(1000, 1000), Quota: quota(5, types.QuotaPeriodTypeDay, 0)})
	keyID, key := s.mustKey(t, p)
	s.sync(t)
	s.expectSeq(t, api.id, key, []seq{{200, "4", "5"}, {200, "3", "5"}, {200, "2", "5"}})

	report := func() (date string, count int64, resetAt string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "http://"+s.gateways[0].GatewayAddr+gateway.UsagePath, nil)
		must(t, "request", err)
		req.Host = api.id + ".execute-api.localhost"
		req.Header.Set("x-api-key", key)
		res, err := http.DefaultClient.Do(req)
		must(t, "partner usage", err)
		defer res.Body.Close()
		var got struct {
			Quota struct{ ResetAt string } `json:"quota"`
			Today struct {
				Date  string
				Count int64
			} `json:"today"`
		}
		if res.StatusCode != http.StatusOK || json.NewDecoder(res.Body).Decode(&got) != nil {
			t.Fatalf("partner usage: got %d, want 200 and a report", res.StatusCode)
		}
		return got.Today.Date, got.Today.Count, got.Quota.ResetAt
	}
	day := redisDay.Format(plans.UsageDateLayout)
	if date, count, resetAt := report(); date != day || count != 3 || resetAt != redisDay.AddDate(0, 0, 1).Format(time.RFC3339) {
		t.Fatalf("partner usage: got today %s = %d, quota reset %s; want %s = 3, reset at the end of Redis's day", date, count, resetAt, day)
	}
	usage := func(day string) map[string][][]int64 {
		t.Helper()
		out, err := s.sdk.GetUsage(ctx, &apigateway.GetUsageInput{UsagePlanId: &p, StartDate: &day, EndDate: &day})
		must(t, "GetUsage", err)
		return out.Items
	}
	if got, want := usage(day), map[string][][]int64{keyID: {{3, 2}}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("GetUsage of Redis's today %s: got %v, want %v", day, got, want)
	}
	if got, want := usage(nodeDay.Format(plans.UsageDateLayout)), map[string][][]int64{keyID: {{0, 5}}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("GetUsage of the nodes' today, a past day on Redis's clock: got %v, want %v (nothing counted, the whole quota left)", got, want)
	}
	dbURL := s.admin.Config.DatabaseURL
	waittest.Until(t, "the ledger has the count on Redis's day", 30*time.Second, func() bool {
		return ledgerCount(t, dbURL, p, keyID, redisDay) == 3
	})
	if n := ledgerCount(t, dbURL, p, keyID, nodeDay); n != 0 {
		t.Fatalf("the ledger counts %d on the nodes' day, want 0", n)
	}

	r.stop(t) // the limiter restarts empty: the restore writes Redis's today back
	r.wipe(t)
	r.start(t)
	waittest.Until(t, "the restored quota answers", 30*time.Second, func() bool {
		res := s.call(t, 0, api.id, "/prod/items", key)
		return res.StatusCode == http.StatusOK && res.Header.Get("X-RateLimit-Remaining") == "1"
	})
	s.expectSeq(t, api.id, key, []seq{{200, "0", "5"}, {429, "0", "5"}})
	if date, count, _ := report(); date != day || count != 5 {
		t.Fatalf("partner usage after the restore: got today %s = %d, want %s = 5", date, count, day)
	}
	waittest.Until(t, "GetUsage counts the restored day and what followed", 30*time.Second, func() bool {
		return reflect.DeepEqual(usage(day), map[string][][]int64{keyID: {{5, 0}}})
	})
}
