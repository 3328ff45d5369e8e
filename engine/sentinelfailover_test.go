package engine

import (
	"strings"
	"testing"
	"time"

	"tollgate/internal/redistest"
	"tollgate/internal/redisurl"
	"tollgate/internal/waittest"
	"tollgate/limit"
	"tollgate/plans"
)

// When the primary that Sentinel names dies and Sentinel promotes its
// replica, the engine decides again through the same client
// (redis-sentinel://, production options): the failover client follows
// Sentinel to the new primary, and the key's quota and usage the replica
// had carry on.
func TestSentinelFailoverDecidesAgainThroughTheSameClient(t *testing.T) {
	t.Parallel()
	s := redistest.MustSentinel(t)
	rdb, err := redisurl.Open(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	l := mustLoaded(t, New(rdb, Options{Prefix: "t", Timeout: 50 * time.Millisecond}))
	req := &limit.Request{KeyID: "k1", PlanID: "p1", Quota: &limit.Quota{Limit: 1000, Period: plans.PeriodDay}}
	for range 3 {
		if d, err := l.Decide(t.Context(), req); err != nil || !d.Allowed {
			t.Fatalf("before the failover: %+v, %v", d, err)
		}
	}
	// the decisions replicated (what a failover loses is another test's: failover_test.go)
	s.Primary.WaitReplicated(t, s.Replica)
	s.Primary.Kill(t)
	waittest.Until(t, "Sentinel promotes the replica", time.Minute, func() bool {
		info, _ := s.Replica.Client.Info(t.Context(), "replication").Result()
		return strings.Contains(info, "role:master")
	})
	promoted := time.Now()
	// decisions meanwhile fail (the primary is gone): as the gateway would, keep asking
	waittest.Until(t, "a decision on the promoted replica through the same client", time.Minute, func() bool {
		d, err := l.Decide(t.Context(), req)
		return err == nil && d.Allowed
	})
	t.Logf("decided again %v after the promotion", time.Since(promoted).Round(time.Millisecond))
	u, err := l.KeyUsage(t.Context(), "k1", "p1", req.Quota)
	if err != nil || u.Today < 4 || u.Quota.Remaining > 996 {
		t.Fatalf("after the failover: %+v, %v, want the replica's counts carried on", u, err)
	}
}
