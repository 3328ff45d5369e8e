package engine

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"tollgate/internal/redistest"
	"tollgate/internal/redisurl"
	"tollgate/internal/waittest"
	"tollgate/keyspace"
	"tollgate/limit"
	"tollgate/plans"
	"tollgate/usage"
)

// When a Redis Cluster master dies and its replica takes over, keyed
// traffic of its slots is decided again within 2 s of the promotion: a
// master that does not answer sends no MOVED, so the engine reloads the
// slot map on the connection errors themselves (and every second in the
// background), not only on MOVED. The quota and usage the replica had
// carry on, and the admin's usage flush follows the new master as fast.
func TestClusterFailoverDecidesAgainWithinTwoSecondsOfThePromotion(t *testing.T) {
	t.Parallel()
	_, masters, replicas := redistest.MustClusterWithReplicas(t, 3, 1, "--cluster-node-timeout", "1000")
	rdb, err := redisurl.Open("redis-cluster://" + masters[0].Addr) // production options
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	l := mustLoaded(t, New(rdb, Options{Prefix: "t", Timeout: 50 * time.Millisecond}))
	adminRDB, err := redisurl.Open("redis-cluster://" + masters[0].Addr) // an admin node's own client
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = adminRDB.Close() })
	admin := usage.New(adminRDB, usage.Options{Prefix: "t"})
	if _, _, err := admin.Source().Drain(t.Context(), 100); err != nil {
		t.Fatalf("the usage flush before the failover: %v", err)
	}
	// a key of the first master's slots (0..5460)
	keyID := ""
	for i := 0; keyID == ""; i++ {
		if k := fmt.Sprintf("k%d", i); keyspace.Slot(l.r.keys.Quota(k, "p1")) < 5000 {
			keyID = k
		}
	}
	req := &limit.Request{KeyID: keyID, PlanID: "p1", Quota: &limit.Quota{Limit: 1000, Period: plans.PeriodDay}}
	for range 3 {
		if d, err := l.Decide(t.Context(), req); err != nil || !d.Allowed {
			t.Fatalf("before the failover: %+v, %v", d, err)
		}
	}
	// the decisions replicated (what a failover loses is another test's: failover_test.go)
	masters[0].WaitReplicated(t, replicas[0])
	masters[0].Kill(t)
	// decisions meanwhile fail (the slot's master is gone): as the gateway would, keep asking
	stop := make(chan struct{})
	decided := make(chan time.Time, 1)
	go waittest.Poll(time.Minute, func() bool {
		select {
		case <-stop:
			return true
		default:
		}
		if d, err := l.Decide(t.Context(), req); err == nil && d.Allowed {
			decided <- time.Now()
			return true
		}
		return false
	})
	t.Cleanup(func() { close(stop) })
	waittest.Until(t, "the replica promoted", 20*time.Second, func() bool {
		info, _ := replicas[0].Client.Info(t.Context(), "replication").Result()
		return strings.Contains(info, "role:master")
	})
	promoted := time.Now()
	select {
	case at := <-decided:
		if after := at.Sub(promoted); after > 2*time.Second {
			t.Fatalf("decided again %v after the promotion, want within 2 s", after)
		} else {
			t.Logf("decided again %v after the promotion", after.Round(time.Millisecond))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no decision within 10 s of the promotion")
	}
	// the admin's side, on its own client, follows the new master as fast:
	// its flush drains the key's usage and its clock (Redis TIME) answers
	var drained int
	follows := func() bool {
		obs, _, derr := admin.Source().Drain(t.Context(), 100)
		if drained, err = len(obs), derr; err != nil || drained == 0 {
			return false
		}
		_, err = admin.Now(t.Context())
		return err == nil
	}
	if _, ok := waittest.Poll(2*time.Second-time.Since(promoted), follows); !ok {
		t.Fatalf("the admin's usage flush still fails %v after the promotion: %d drained, %v", time.Since(promoted).Round(time.Millisecond), drained, err)
	}
	u, err := l.KeyUsage(t.Context(), keyID, "p1", req.Quota)
	if err != nil || u.Today < 4 || u.Quota.Remaining > 996 {
		t.Fatalf("after the failover: %+v, %v, want the replica's counts carried on", u, err)
	}
}
