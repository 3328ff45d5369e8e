package main

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"
)

// faultStack is a stack on a redis-server of the test's own.
type faultStack struct {
	*stack
	redis *redisProc
	logs  *logBuffer
	api   caseAPI
	plan  string
	known string // a key each gateway has used (its record is cached)
	fresh string // a key no gateway has seen yet
}

// mustFaultStack starts a redis-server, a stack on it in failure mode mode
// with Redis deadline timeout, an API, a plan (quota 1000 per DAY) and two
// keys; known has been used on both gateways.
func mustFaultStack(t *testing.T, mode string, timeout time.Duration) *faultStack {
	t.Helper()
	f := &faultStack{redis: mustRedisServer(t), logs: &logBuffer{}}
	f.stack = mustStackWith(t, stackOptions{redisURL: f.redis.url(), failureMode: mode, redisTimeout: timeout, logs: f.logs})
	f.api = f.mustCaseAPI(t)
	f.plan = f.mustPlan(t, f.api.id, planSpec{Throttle: throttle(1000, 1000), Quota: quota(1000, types.QuotaPeriodTypeDay, 0)})
	_, f.known = f.mustKey(t, f.plan)
	_, f.fresh = f.mustKey(t, f.plan)
	f.sync(t)
	f.waitAdmitted(t, f.known, 5*time.Second) // a loaded machine may miss a short deadline once
	return f
}

// atoi parses a header number or fails.
func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return n
}

// limiterErrors sums tollgate_limiter_errors_total over both gateways.
func (f *faultStack) limiterErrors(t *testing.T) float64 {
	return counterValue(t, f.gateways[0], "tollgate_limiter_errors_total") + counterValue(t, f.gateways[1], "tollgate_limiter_errors_total")
}

// waitAdmitted polls key on both gateways until each answers 200 with
// rate-limit headers (the limiter decides again); it returns how long that
// took, or fails after limit. Every answer on the way must be 200 or 503,
// never 403.
func (f *faultStack) waitAdmitted(t *testing.T, key string, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		done := true
		for i := range 2 {
			res := f.call(t, i, f.api.id, "/prod/items", key)
			if res.StatusCode != 200 && res.StatusCode != 503 {
				t.Fatalf("while Redis recovers, gateway %d: got %d, want 200 or 503 (never 403)", i, res.StatusCode)
			}
			done = done && res.StatusCode == 200 && res.Header.Get("X-RateLimit-Limit") != ""
		}
		if done {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			t.Fatalf("key not admitted with limits on both gateways %v after Redis returned", limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestFaultRedisDown kills the limiter's Redis: open admits known keys
// without limits (a metric, one log line per node and outage), closed
// answers 503; a key that cannot be verified gets 503 in both modes. When
// Redis is started again (with its append-only file, without its scripts:
// NOSCRIPT), both nodes enforce limits again within 1 s without a restart.
func TestFaultRedisDown(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"open", "closed"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			f := mustFaultStack(t, mode, 250*time.Millisecond)
			errs := f.limiterErrors(t)
			f.redis.stop(t)
			wantKnown := map[string]int{"open": 200, "closed": 503}[mode]
			for i := range 4 {
				res := f.call(t, i%2, f.api.id, "/prod/items", f.known)
				if res.StatusCode != wantKnown {
					t.Fatalf("known key, Redis down, request %d: got %d, want %d", i+1, res.StatusCode, wantKnown)
				}
				if h := res.Header.Get("X-RateLimit-Limit"); h != "" {
					t.Errorf("known key, Redis down: X-RateLimit-Limit %q, want none", h)
				}
				if mode == "closed" {
					checkHeader(t, i+1, res, "x-amzn-ErrorType", "ServiceUnavailableException")
				}
			}
			for name, key := range map[string]string{"fresh": f.fresh, "unknown": "NeverCreatedNeverCreated01"} {
				for i := range 2 {
					if res := f.call(t, i, f.api.id, "/prod/items", key); res.StatusCode != 503 {
						t.Errorf("%s key, Redis down, via gateway %d: got %d, want 503 (never 403)", name, i, res.StatusCode)
					}
				}
			}
			if got := f.limiterErrors(t) - errs; got < 4 {
				t.Errorf("tollgate_limiter_errors_total grew by %v, want ≥ 4", got)
			}
			// An outage is logged once it has lasted outageAfter (a second;
			// one missed deadline on a loaded node is not an outage): traffic
			// goes on until both nodes have said so, and they say it once.
			waitFor(t, "both nodes log the outage", 10*time.Second, func() bool {
				f.call(t, 0, f.api.id, "/prod/items", f.known)
				f.call(t, 1, f.api.id, "/prod/items", f.known)
				return logCount(f.logs, "limiter unavailable") >= 2
			})
			f.call(t, 0, f.api.id, "/prod/items", f.known)
			f.call(t, 1, f.api.id, "/prod/items", f.known)
			if n := logCount(f.logs, "limiter unavailable"); n != 2 {
				t.Errorf("'limiter unavailable' logged %d times, want 2 (once per node for the outage)", n)
			}
			f.redis.start(t)
			took := f.waitAdmitted(t, f.known, time.Second)
			t.Logf("%s: known key admitted with limits on both nodes %v after Redis answered", mode, took)
			f.waitAdmitted(t, f.fresh, time.Second)
			// The quota survived the restart: the fresh key's count goes on.
			before := f.call(t, 0, f.api.id, "/prod/items", f.fresh).Header.Get("X-RateLimit-Remaining")
			after := f.call(t, 1, f.api.id, "/prod/items", f.fresh).Header.Get("X-RateLimit-Remaining")
			if before == "" || before == "1000" || after != itoa(atoi(t, before)-1) {
				t.Errorf("fresh key's quota after the restart: Remaining %q then %q, want it to count on (below 999, then one less)", before, after)
			}
		})
	}
}

// TestFaultNoScript: a script cache flushed under a running gateway (as a
// Redis restart or failover does) is reloaded on the spot: no failed
// decision, no 503.
func TestFaultNoScript(t *testing.T) {
	t.Parallel()
	f := mustFaultStack(t, "closed", 5*time.Second) // no decision may time out here
	errs := f.limiterErrors(t)
	for round := range 3 {
		if err := f.redis.client.ScriptFlush(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			res := f.call(t, i, f.api.id, "/prod/items", f.known)
			if res.StatusCode != 200 || res.Header.Get("X-RateLimit-Limit") != "1000" {
				t.Errorf("round %d, gateway %d after SCRIPT FLUSH: got %d with limit %q, want 200 with 1000", round+1, i, res.StatusCode, res.Header.Get("X-RateLimit-Limit"))
			}
		}
	}
	if got := f.limiterErrors(t) - errs; got != 0 {
		t.Errorf("limiter errors after SCRIPT FLUSH: got %v, want 0", got)
	}
}

// TestFaultRedisRestartedEmpty: Redis comes back without its data. A key a
// node already knew keeps being served from its last good record, even
// once the node has reloaded the empty Redis and before the admin has
// republished (tryout finding: 782 such requests got 503 in 0.25 s); a key
// no node has seen gets 503 (never 403) until the republish; within 5 s of
// it both nodes enforce again.
func TestFaultRedisRestartedEmpty(t *testing.T) {
	t.Parallel()
	f := mustFaultStack(t, "open", time.Second)
	_ = f.admin.Close() // no republish until the gateways have reloaded
	f.redis.stop(t)
	f.redis.wipe(t)
	f.redis.start(t)
	waitFor(t, "both gateways notice the empty Redis", 10*time.Second, func() bool {
		return logCount(f.logs, "push: change stream ends before our position; reloading everything")+
			logCount(f.logs, "push: change stream readable again; config reloaded") >= 2
	})
	for start := time.Now(); time.Since(start) < 500*time.Millisecond; time.Sleep(5 * time.Millisecond) {
		for i := range 2 {
			if res := f.call(t, i, f.api.id, "/prod/items", f.known); res.StatusCode != http.StatusOK {
				t.Fatalf("known key via gateway %d, after it reloaded the empty Redis: got %d, want 200", i, res.StatusCode)
			}
		}
	}
	for i := range 2 {
		if res := f.call(t, i, f.api.id, "/prod/items", f.fresh); res.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("unseen key via gateway %d before the republish: got %d, want 503", i, res.StatusCode)
		}
	}
	f.admin = f.startMain(t, f.admin.Config, "admin", f.logs)
	took := f.waitAdmitted(t, f.fresh, 5*time.Second)
	t.Logf("unseen key admitted on both nodes %v after the admin restarted", took)
	f.waitAdmitted(t, f.known, time.Second)
}

// TestFaultRedisFlushed: Redis loses everything while running (FLUSHALL on
// the test's own server). Until the admin's reconciler has republished,
// valid keys get 503, never 403; within 5 s both nodes enforce again, the
// quota counting from zero (counters live only in Redis), and an unknown
// key is 403 again.
func TestFaultRedisFlushed(t *testing.T) {
	t.Parallel()
	f := mustFaultStack(t, "open", time.Second)
	if err := f.redis.client.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	took := f.waitAdmitted(t, f.fresh, 5*time.Second)
	t.Logf("fresh key admitted on both nodes %v after FLUSHALL", took)
	f.waitAdmitted(t, f.known, time.Second)
	if res := f.call(t, 0, f.api.id, "/prod/items", "NeverCreatedNeverCreated01"); res.StatusCode != http.StatusForbidden {
		t.Errorf("unknown key after the republish: got %d, want 403", res.StatusCode)
	}
	if v := f.publishedVersion(t); v < 1 {
		t.Errorf("republished snapshot version %d, want ≥ 1", v)
	}
}

// TestFaultRedisSlow: Redis answers, but later than TOLLGATE_REDIS_TIMEOUT
// (CLIENT PAUSE holds every command): open admits known keys without
// limits, closed answers 503, an unverifiable key is 503 in both; limits
// apply again within 1 s of Redis answering in time.
func TestFaultRedisSlow(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"open", "closed"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			f := mustFaultStack(t, mode, 250*time.Millisecond)
			ctx := context.Background()
			// 5 s: the first decision waits up to 1 s for its run, later
			// ones try Redis again every 250 ms (TOLLGATE_REDIS_TIMEOUT), and
			// the fresh key's lookup takes 500 ms, on a loaded machine.
			if err := f.redis.client.Do(ctx, "CLIENT", "PAUSE", "5000", "ALL").Err(); err != nil {
				t.Fatal(err)
			}
			wantKnown := map[string]int{"open": 200, "closed": 503}[mode]
			for i := range 4 {
				res := f.call(t, i%2, f.api.id, "/prod/items", f.known)
				if res.StatusCode != wantKnown || res.Header.Get("X-RateLimit-Limit") != "" {
					t.Errorf("known key, Redis slow, request %d: got %d with limit %q, want %d without limits", i+1, res.StatusCode, res.Header.Get("X-RateLimit-Limit"), wantKnown)
				}
			}
			if res := f.call(t, 0, f.api.id, "/prod/items", f.fresh); res.StatusCode != 503 {
				t.Errorf("fresh key, Redis slow: got %d, want 503 (never 403)", res.StatusCode)
			}
			if err := f.redis.client.Ping(ctx).Err(); err != nil { // returns when the pause ends
				t.Fatal(err)
			}
			took := f.waitAdmitted(t, f.known, time.Second)
			t.Logf("%s: limits apply %v after the pause ended", mode, took)
			f.waitAdmitted(t, f.fresh, time.Second)
		})
	}
}
