package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/hammertest"
	"tollgate/internal/redistest"
	"tollgate/limit"
	"tollgate/script"
)

// twoLimiters returns two Limiters with their own clients on one Redis and
// one key prefix, as two gateway nodes.
func twoLimiters(t *testing.T) (*Engine, *Engine) {
	t.Helper()
	a := mustLimiter(t)
	rdb, _ := redistest.MustClient(t)
	return a, New(rdb, Options{Prefix: a.r.keys.Prefix, Timeout: testTimeout})
}

// nodeRequest is key keyID's request on plan "p1" with throttle rate/burst,
// the stage and account buckets (100/s, burst 10000: never binding in a
// test, full again within 100 s) and a DAY quota (0: none).
func nodeRequest(l *Engine, keyID string, rate float64, burst, quota int32) *keyedRequest {
	k := l.r.keys
	req := &keyedRequest{
		Buckets: []keyedBucket{
			{Key: k.PlanBucket(keyID, "p1"), RateLimit: rate, BurstLimit: burst, Level: limit.LevelPlan},
			{Key: k.StageBucket("api1", "prod", "GET", "/items"), RateLimit: 100, BurstLimit: 10000, Level: limit.LevelStage},
			{Key: k.AccountBucket(), RateLimit: 100, BurstLimit: 10000, Level: limit.LevelAccount},
		},
		UsageKey: k.Usage(keyID, "p1"),
	}
	if quota > 0 {
		req.Quota = &keyedQuota{Key: k.Quota(keyID, "p1"), Limit: quota, Period: script.PeriodDay}
	}
	return req
}

// hammer sends n requests from each of g goroutines, alternating the two
// limiters, and returns how many were admitted.
func hammer(t *testing.T, a, b *Engine, g, n int, req func(l *Engine, i int) *keyedRequest) int64 {
	t.Helper()
	return hammertest.Count(g, n, func(w, i int) bool {
		l := a
		if (w+i)%2 == 1 {
			l = b
		}
		d, err := l.decideKeyed(context.Background(), req(l, w*n+i), nil)
		if err != nil {
			t.Errorf("Decide: %v", err)
		}
		return err == nil && d.Allowed
	})
}

func TestConcurrentNodesAdmitExactly(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		req  func(l *Engine, i int) *keyedRequest
		want int64
	}{
		{"quota 30", func(l *Engine, _ int) *keyedRequest { return nodeRequest(l, "k1", 0, 1000, 30) }, 30},
		{"burst 25 at rate 0", func(l *Engine, _ int) *keyedRequest { return nodeRequest(l, "k1", 0, 25, 0) }, 25},
		{"shared account burst 40 over 50 keys", func(l *Engine, i int) *keyedRequest {
			r := nodeRequest(l, fmt.Sprintf("k%d", i%50), 0, 100, 0)
			r.Buckets[2].RateLimit, r.Buckets[2].BurstLimit = 0, 40
			return r
		}, 40},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, b := twoLimiters(t)
			if got := hammer(t, a, b, 32, 10, tc.req); got != tc.want {
				t.Fatalf("admitted: got %d, want %d", got, tc.want)
			}
		})
	}
}

// Every key the script writes has a TTL in the right unit and range.
func TestTTLOnEveryKey(t *testing.T) {
	t.Parallel()
	a, b := twoLimiters(t)
	hammer(t, a, b, 50, 20, func(l *Engine, i int) *keyedRequest {
		return nodeRequest(l, fmt.Sprintf("k%d", i%50), 1, 10, 1000)
	})
	// rate 0: 400 days
	if _, err := a.decideKeyed(t.Context(), nodeRequest(a, "zero", 0, 3, 0), nil); err != nil {
		t.Fatalf("Decide: %v", err)
	}
	now := time.Now().UTC()
	midnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	const slack = 2 * time.Second // test and Redis clocks, test duration
	var n int
	iter := a.r.rdb.Scan(t.Context(), 0, a.r.keys.Prefix+":*", 1000).Iterator()
	for iter.Next(t.Context()) {
		name := iter.Val()
		n++
		ttl, err := a.r.rdb.PTTL(t.Context(), name).Result()
		if err != nil {
			t.Fatalf("PTTL %s: %v", name, err)
		}
		var lo, hi time.Duration
		switch {
		case strings.Contains(name, "{k:zero}:tb:"):
			lo, hi = 399*24*time.Hour, 400*24*time.Hour
		case strings.Contains(name, "{k:") && strings.Contains(name, "}:tb:"): // plan 1/s, burst 10: full within 10 s, + 1 s
			lo, hi = time.Millisecond, 11*time.Second+slack
		case strings.Contains(name, ":tb"): // stage, account: ≤ 1000 tokens used at 100/s, + 1 s
			lo, hi = time.Millisecond, 11*time.Second+slack
		case strings.Contains(name, ":q:"):
			lo, hi = time.Hour, midnight.Sub(now)+time.Hour+slack
		case strings.Contains(name, ":u:"):
			lo, hi = 99*24*time.Hour, 100*24*time.Hour
		case name == a.r.changes0: // emptied by the ledger's flush worker; holds the restore mark
			lo, hi = -1, -1
		case name == a.r.keys.RunWindow(0, a.r.node) || name == b.r.keys.RunWindow(0, b.r.node): // a node's runs: a day
			lo, hi = 23*time.Hour, 24*time.Hour
		default:
			t.Errorf("unexpected key %s", name)
		}
		if ttl < lo || ttl > hi {
			t.Errorf("%s: TTL got %v, want between %v and %v", name, ttl, lo, hi)
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("SCAN: %v", err)
	}
	if want := 50*3 + 2 + 2 + 1 + 2; n != want { // per key: bucket, quota, usage; stage; account; "zero": bucket, usage; the usage change set; each node's run window
		t.Fatalf("keys: got %d, want %d", n, want)
	}
}

// A limit change rewrites the bucket (even on a refusal) with the TTL of the
// new limits.
func TestRebaseSetsTTL(t *testing.T) {
	t.Parallel()
	l := mustLimiter(t)
	k := l.r.keys.PlanBucket("k1", "p1")
	req := &keyedRequest{Buckets: []keyedBucket{{Key: k, RateLimit: 0.001, BurstLimit: 1, Level: limit.LevelPlan}}}
	if d, err := l.decideKeyed(t.Context(), req, nil); err != nil || !d.Allowed {
		t.Fatalf("first: got %+v, %v, want admitted", d, err)
	}
	req.Buckets[0].BurstLimit = 5
	if d, err := l.decideKeyed(t.Context(), req, nil); err != nil || d.Allowed {
		t.Fatalf("after raising the burst: got %+v, %v, want refused", d, err)
	}
	ttl, err := l.r.rdb.PTTL(t.Context(), k).Result()
	if err != nil {
		t.Fatalf("PTTL: %v", err)
	}
	if lo, hi := 4000*time.Second, 5001*time.Second; ttl < lo || ttl > hi {
		t.Fatalf("TTL after the change to 0.001/5: got %v, want between %v and %v", ttl, lo, hi)
	}
}

// A server that lost its scripts (restarted, or SCRIPT FLUSH) answers
// NOSCRIPT: the engine loads the script and decides, alone and with cache
// reads in the same pipeline, and charges once.
func TestNoScriptReloadsAndDecides(t *testing.T) {
	t.Parallel()
	_, rdb := redistest.MustServer(t)
	l := mustLoaded(t, New(rdb, Options{Prefix: "t", Timeout: testTimeout}))
	req := nodeRequest(l, "k1", 0, 5, 5)
	for i, along := range []func(context.Context, redis.Pipeliner){nil, func(ctx context.Context, p redis.Pipeliner) { p.Get(ctx, "t:other") }} {
		if err := rdb.ScriptFlush(t.Context()).Err(); err != nil {
			t.Fatal(err)
		}
		d, err := l.decideKeyed(t.Context(), req, along)
		if err != nil || !d.Allowed || d.Quota.Remaining != int64(4-i) {
			t.Fatalf("decision %d after SCRIPT FLUSH: got %+v, %v, want admitted with quota remaining %d", i+1, d, err, 4-i)
		}
	}
}

func TestDecideErrors(t *testing.T) {
	t.Parallel()
	downClient := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = downClient.Close() })
	prefix := redistest.MustPrefix(t)
	down := New(downClient, Options{})
	slow := New(silentRedis(t), Options{Prefix: prefix})
	cases := []struct {
		name string
		l    *Engine
		is   error
	}{
		{"redis down", down, nil},
		{"no reply", slow, os.ErrDeadlineExceeded},
	}
	for _, tc := range cases {
		_, err := tc.l.decideKeyed(t.Context(), nodeRequest(tc.l, "k1", 1, 1, 1), nil)
		if err == nil || !strings.HasPrefix(err.Error(), "engine: decide: ") {
			t.Errorf("%s: got error %v, want a wrapped error", tc.name, err)
		}
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%s: got %v, want errors.Is %v", tc.name, err, tc.is)
		}
	}
}

// With no test clock the script reads Redis TIME.
func TestDecideUsesRedisTime(t *testing.T) {
	t.Parallel()
	l := mustLimiter(t)
	before := time.Now()
	d, err := l.decideKeyed(t.Context(), nodeRequest(l, "k1", 1, 1, 0), nil)
	if err != nil {
		t.Fatalf("Decide: %v", err)
	}
	if diff := d.Now.Sub(before); diff < -time.Second || diff > time.Second {
		t.Fatalf("Now: got %v, want within 1 s of %v", d.Now, before)
	}
}

// Rates reach Redis with full precision (Lua's tostring keeps 14 digits,
// which would make 10/13 per second slightly slower): the float64 itself
// is packed, and stored packed.
func TestRateKeepsFullPrecision(t *testing.T) {
	t.Parallel()
	l := mustLimiter(t)
	for _, rate := range []float64{0.7692307692307693, 0.3333333333333333, 1e-7, 123456.78901234567} {
		k := l.r.keys.PlanBucket("k1", fmt.Sprint(rate))
		req := &keyedRequest{Buckets: []keyedBucket{{Key: k, RateLimit: rate, BurstLimit: 5, Level: limit.LevelPlan}}}
		if _, err := l.decideKeyed(t.Context(), req, nil); err != nil {
			t.Fatalf("Decide: %v", err)
		}
		state, err := l.r.rdb.Get(t.Context(), k).Result()
		var got float64
		if err == nil {
			var s script.BucketState
			_, err = s.Decode(state)
			got = s.Rate
		}
		if err != nil || got != rate {
			t.Errorf("stored rate: got %v (err %v), want %v exactly", got, err, rate)
		}
	}
}
