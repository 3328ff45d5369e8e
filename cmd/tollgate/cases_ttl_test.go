package main

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"

	"tollgate/internal/waittest"
)

// TestEveryStateKeyExpires: after concurrent load over both nodes,
// every per-request state key (buckets, quota, usage) has a TTL of the
// right size and unit, and only config state persists. Buckets then expire
// by themselves, and a day later every key is admitted again.
func TestEveryStateKeyExpires(t *testing.T) {
	t.Parallel()
	s := mustStack(t)
	api := s.mustCaseAPI(t)
	p := s.mustPlan(t, api.id, planSpec{Throttle: throttle(10, 10), Quota: quota(1000, types.QuotaPeriodTypeDay, 0)})
	keys := make([]string, 50)
	for i := range keys {
		_, keys[i] = s.mustKey(t, p)
	}
	s.sync(t)
	inParallel(5, len(keys), func(i int) {
		if ok, _ := s.countOK(t, api.id, keys[i], 20); ok < 10 {
			t.Errorf("20 concurrent requests of a fresh key: %d admitted, want at least its burst 10", ok)
		}
	})
	now := time.Now().UTC()
	midnight := now.Truncate(24 * time.Hour).Add(24 * time.Hour)
	// Markers end the hash tag, so no key id ("{k:tb6e...}") can match one.
	counts := s.checkTTLs(t, map[string]time.Duration{
		"}:tb":   2 * time.Second,                               // plan, stage and account buckets: full within 1 s (10/s), + 1 s
		"}:q:":   midnight.Sub(now) + time.Hour + 5*time.Second, // period end + the script's 1 h margin
		"}:u:":   100 * 24 * time.Hour,                          // daily usage, 100 days
		"}:run:": 24 * time.Hour,                                // each node's run window, a day
	})
	if counts["}:q:"] != 50 || counts["}:u:"] != 50 {
		t.Errorf("state keys: %d quota and %d usage, want 50 of each", counts["}:q:"], counts["}:u:"])
	}

	if _, ok := waittest.Poll(5*time.Second, func() bool { return s.countKeys(t, "*}:tb*") == 0 }); !ok {
		t.Fatalf("bucket keys left 5 s after the load: %d, want 0 (full again + 1 s)", s.countKeys(t, "*}:tb*"))
	}
	s.useClock(t, midnight.Add(10*time.Minute))
	for i, k := range keys {
		if res := s.call(t, i%2, api.id, "/prod/items", k); res.StatusCode != 200 || res.Header.Get("X-RateLimit-Remaining") != "999" {
			t.Errorf("key %d the next day: got %d Remaining %q, want 200 and 999", i, res.StatusCode, res.Header.Get("X-RateLimit-Remaining"))
		}
	}
}

// inParallel runs f(0..n-1) on workers goroutines and waits for all.
func inParallel(workers, n int, f func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// checkTTLs scans the stack's keys: a key whose name contains one of
// limits' markers must have a TTL in (0, limit]; any other key must be
// config state (config:*, key:{...}, cache:gen:*) or a usage change set
// (which the ledger's flush worker empties), without a TTL. It returns how
// many keys matched each marker.
func (s *stack) checkTTLs(t *testing.T, limits map[string]time.Duration) map[string]int {
	t.Helper()
	ctx := context.Background()
	prefix := s.admin.Config.RedisPrefix + ":"
	counts := map[string]int{}
	seen := map[string]bool{} // SCAN may return a key twice while Redis rehashes
	iter := s.admin.rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		name := iter.Val()
		if seen[name] {
			continue
		}
		seen[name] = true
		ttl, err := s.admin.rdb.PTTL(ctx, name).Result()
		if err != nil {
			t.Fatalf("PTTL %s: %v", name, err)
		}
		if ttl == -2 { // expired since SCAN returned it (go-redis: -2 ns)
			continue
		}
		marker := ""
		for m := range limits {
			if strings.Contains(strings.TrimPrefix(name, prefix), m) {
				marker = m
			}
		}
		switch {
		case marker != "":
			counts[marker]++
			if ttl <= 0 || ttl > limits[marker] {
				t.Errorf("%s: TTL %v, want in (0, %v]", name, ttl, limits[marker])
			}
		case isConfigKey(strings.TrimPrefix(name, prefix)) || strings.HasSuffix(name, "}:uc") || strings.HasSuffix(name, "}:uh"):
			if ttl >= 0 {
				t.Errorf("config key, usage change set or its last hold %s: TTL %v, want none (it persists)", name, ttl)
			}
		default:
			t.Errorf("unexpected key %s (TTL %v)", name, ttl)
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("SCAN: %v", err)
	}
	return counts
}

func isConfigKey(name string) bool {
	for _, p := range []string{"config:", "key:{", "cache:gen:"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
