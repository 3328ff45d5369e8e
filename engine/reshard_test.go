package engine

import (
	"context"
	"encoding/binary"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redistest"
	"tollgate/keyspace"
	"tollgate/limit"
	"tollgate/plans"
)

// migrateSlot moves slot from the master that serves it to another one,
// as redis-cli --cluster reshard does: CLUSTER SETSLOT IMPORTING on the
// target, MIGRATING on the source, MIGRATE of its keys one at a time
// (pace apart, so that requests meet a half-moved slot: ASK, TRYAGAIN),
// then SETSLOT NODE on every master. Keys of other tests in the slot move
// too, which is what resharding does to them.
func migrateSlot(t *testing.T, rdb *redis.ClusterClient, slot int, pace time.Duration) {
	t.Helper()
	ctx := context.Background()
	slots, err := rdb.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatalf("CLUSTER SLOTS: %v", err)
	}
	var src redis.ClusterNode
	var masters []redis.ClusterNode
	for _, s := range slots {
		masters = append(masters, s.Nodes[0])
		if s.Start <= slot && slot <= s.End {
			src = s.Nodes[0]
		}
	}
	var dst redis.ClusterNode
	for _, m := range masters {
		if m.ID != src.ID {
			dst = m
			break
		}
	}
	if src.ID == "" || dst.ID == "" {
		t.Fatalf("slot %d: no source or target master in %+v", slot, slots)
	}
	node := func(n redis.ClusterNode) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: n.Addr})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	sc, dc := node(src), node(dst)
	must := func(err error) {
		if err != nil {
			t.Fatalf("migrate slot %d from %s to %s: %v", slot, src.Addr, dst.Addr, err)
		}
	}
	must(dc.Do(ctx, "cluster", "setslot", slot, "importing", src.ID).Err())
	must(sc.Do(ctx, "cluster", "setslot", slot, "migrating", dst.ID).Err())
	host, port, _ := net.SplitHostPort(dst.Addr)
	for {
		keys, err := sc.ClusterGetKeysInSlot(ctx, slot, 1).Result()
		must(err)
		if len(keys) == 0 {
			break
		}
		// REPLACE: while the slot migrates, the source's copy of a key it
		// still holds is the one clients reach; a copy the target holds too
		// (a MIGRATE whose reply was lost) is stale.
		must(sc.Do(ctx, "migrate", host, port, "", 0, 5000, "replace", "keys", keys[0]).Err())
		time.Sleep(pace)
	}
	must(dc.Do(ctx, "cluster", "setslot", slot, "node", dst.ID).Err())
	must(sc.Do(ctx, "cluster", "setslot", slot, "node", dst.ID).Err())
	seen := map[string]bool{src.ID: true, dst.ID: true}
	for _, m := range masters {
		if !seen[m.ID] {
			seen[m.ID] = true
			must(node(m).Do(ctx, "cluster", "setslot", slot, "node", dst.ID).Err())
		}
	}
}

// Resharding under load: the slot of a key's own state and the slot of
// its stage bucket move to another master while callers keep deciding.
// MOVED, ASK and TRYAGAIN cost no error, no lost and no double count: the
// quota admits exactly its limit, usage counts every admission once, and
// the stage bucket lost exactly one token per admission.
func TestReshardMidLoad(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.MustCluster(t)
	c := &fakeClock{t: at(t, "2026-06-15T12:00:00Z")}
	l := mustLoaded(t, New(rdb, Options{Prefix: prefix, Timeout: testTimeout, Clock: c.Now}))
	keyID, stageName := "rk"+prefix, "rs"+prefix // hash tags of this test alone
	const quota, stageBurst = 300, 100000
	req := &limit.Request{KeyID: keyID, PlanID: "p1", API: "a1", Stage: stageName,
		Buckets: []limit.Bucket{{Level: limit.LevelPlan, RateLimit: 1000, BurstLimit: 100000},
			{Level: limit.LevelStage, RateLimit: 0.001, BurstLimit: stageBurst, Method: "GET", Path: "/x"},
			{Level: limit.LevelAccount, RateLimit: 100000, BurstLimit: 100000}},
		Quota: &limit.Quota{Limit: quota, Period: plans.PeriodDay}}
	home := keyspace.Slot(l.keys.Quota(keyID, "p1"))
	stageSlot := keyspace.Slot(l.keys.StageBucket("a1", stageName, "GET", "/x"))

	var sent, admitted, failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				sent.Add(1)
				d, err := l.Decide(context.Background(), req)
				switch {
				case err != nil:
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				case d.Allowed:
					admitted.Add(1)
				}
				if d.Remembered { // the quota ran out: keep asking Redis
					l.ForgetAll()
				}
			}
		})
	}
	for sent.Load() < 50 { // the slots hold live state before they move
		time.Sleep(time.Millisecond)
	}
	migrateSlot(t, rdb, home, 5*time.Millisecond)
	migrateSlot(t, rdb, stageSlot, 5*time.Millisecond)
	for sent.Load() < 2*quota { // and take load after
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	l.settle()
	t.Logf("%d decisions, %d runs sent again after TRYAGAIN and the like", sent.Load(), l.cluster.resent.Load())
	if n := failed.Load(); n != 0 {
		t.Fatalf("decisions failed during the reshard: %d of %d (first: %v)", n, sent.Load(), firstErr.Load())
	}
	if n := admitted.Load(); n != quota {
		t.Fatalf("admitted: got %d of %d sent, want exactly the quota %d", n, sent.Load(), quota)
	}
	usage, err := l.Usage(t.Context(), keyID, "p1", c.Now(), c.Now())
	if err != nil || usage["2026-06-15"] != quota {
		t.Errorf("usage: got %v (%v), want %d", usage, err, quota)
	}
	probe, err := l.Decide(t.Context(), &limit.Request{API: "a1", Stage: stageName,
		Buckets: []limit.Bucket{{Level: limit.LevelStage, RateLimit: 0.001, BurstLimit: stageBurst, Method: "GET", Path: "/x"}}})
	if err != nil || !probe.Allowed {
		t.Fatalf("stage probe: got %+v, %v", probe, err)
	}
	tokens, err := l.rdb.Get(t.Context(), l.keys.StageBucket("a1", stageName, "GET", "/x")).Bytes()
	if err != nil || len(tokens) != 33 {
		t.Fatalf("stage bucket state: got %q, %v", tokens, err)
	}
	if left := stateTokens(tokens); left != float64(stageBurst-quota-1) {
		t.Errorf("stage bucket tokens: got %v, want %d (one per admission and the probe)", left, stageBurst-quota-1)
	}
}

// stateTokens reads the tokens of a bucket state (limits.lua: "\1" then
// little-endian doubles tokens, time, rate, burst).
func stateTokens(state []byte) float64 {
	return math.Float64frombits(binary.LittleEndian.Uint64(state[1:9]))
}
