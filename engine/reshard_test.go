package engine

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tollgate/internal/clocktest"
	"tollgate/internal/waittest"
	"tollgate/script"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redistest"
	"tollgate/keyspace"
	"tollgate/limit"
	"tollgate/plans"
)

// migration moves one slot from the master that serves it to another,
// as redis-cli --cluster reshard does: CLUSTER SETSLOT IMPORTING on the
// target, MIGRATING on the source, MIGRATE of its keys one at a time,
// then SETSLOT NODE on every master. Between begin and finish the slot is
// half migrated: requests meet ASK (their keys are all on the target) and
// TRYAGAIN (a multi-key run whose keys are split). Keys of other tests in
// the slot move too, which is what resharding does to them. A test that
// fails midway still finishes the migration at cleanup, so the shared
// cluster is never left with a half-migrated slot.
type migration struct {
	t        *testing.T
	slot     int
	src, dst redis.ClusterNode
	masters  []redis.ClusterNode
	sc, dc   *redis.Client
	done     bool
}

// beginMigration opens the migration of slot to another master.
func beginMigration(t *testing.T, rdb *redis.ClusterClient, slot int) *migration {
	t.Helper()
	ctx := context.Background()
	slots, err := rdb.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatalf("CLUSTER SLOTS: %v", err)
	}
	m := &migration{t: t, slot: slot}
	for _, s := range slots {
		m.masters = append(m.masters, s.Nodes[0])
		if s.Start <= slot && slot <= s.End {
			m.src = s.Nodes[0]
		}
	}
	for _, n := range m.masters {
		if n.ID != m.src.ID {
			m.dst = n
			break
		}
	}
	if m.src.ID == "" || m.dst.ID == "" {
		t.Fatalf("slot %d: no source or target master in %+v", slot, slots)
	}
	m.sc, m.dc = m.node(m.src), m.node(m.dst)
	m.must(m.dc.Do(ctx, "cluster", "setslot", slot, "importing", m.src.ID).Err())
	m.must(m.sc.Do(ctx, "cluster", "setslot", slot, "migrating", m.dst.ID).Err())
	t.Cleanup(m.finish)
	return m
}

func (m *migration) node(n redis.ClusterNode) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: n.Addr})
	m.t.Cleanup(func() { _ = c.Close() })
	return c
}

func (m *migration) must(err error) {
	if err != nil {
		m.t.Helper()
		m.t.Errorf("migrate slot %d from %s to %s: %v", m.slot, m.src.Addr, m.dst.Addr, err)
		m.t.FailNow()
	}
}

// move migrates key to the target. REPLACE: while the slot migrates, the
// source's copy of a key it still holds is the one clients reach; a copy
// the target holds too (a MIGRATE whose reply was lost) is stale.
func (m *migration) move(key string) error {
	host, port, _ := net.SplitHostPort(m.dst.Addr)
	return m.sc.Do(context.Background(), "migrate", host, port, "", 0, 5000, "replace", "keys", key).Err()
}

// moveAll migrates every key left in the slot, pace apart.
func (m *migration) moveAll(pace time.Duration) {
	for {
		keys, err := m.sc.ClusterGetKeysInSlot(context.Background(), m.slot, 1).Result()
		m.must(err)
		if len(keys) == 0 {
			return
		}
		m.must(m.move(keys[0]))
		time.Sleep(pace)
	}
}

// finish moves the keys left and assigns the slot to the target on every
// master. It runs once; cleanup calls it too.
func (m *migration) finish() {
	if m.done {
		return
	}
	m.done = true
	m.moveAll(0)
	ctx := context.Background()
	m.must(m.dc.Do(ctx, "cluster", "setslot", m.slot, "node", m.dst.ID).Err())
	m.must(m.sc.Do(ctx, "cluster", "setslot", m.slot, "node", m.dst.ID).Err())
	for _, n := range m.masters {
		if n.ID != m.src.ID && n.ID != m.dst.ID {
			m.must(m.node(n).Do(ctx, "cluster", "setslot", m.slot, "node", m.dst.ID).Err())
		}
	}
}

// migrateSlot moves slot to another master, its keys pace apart.
func migrateSlot(t *testing.T, rdb *redis.ClusterClient, slot int, pace time.Duration) {
	t.Helper()
	m := beginMigration(t, rdb, slot)
	m.moveAll(pace)
	m.finish()
}

// A key whose own state is half migrated (its quota key moved, its plan
// bucket, usage hash, the slot's usage change set and the node's run
// window not yet) meets
// TRYAGAIN, and the engine sends the run again until it can run (here 1.5 s,
// longer than a run's deadline); once all
// of them moved (the slot still migrating) it meets ASK and decides on the
// target. Neither costs an
// error, a lost count or a double count. Deterministic: the test moves
// the keys itself, and moves the last two only after a run was sent again.
func TestHalfMigratedSlotCostsNoErrorAndNoDoubleCount(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.MustCluster(t)
	c := clocktest.New(at(t, "2026-06-15T12:00:00Z"))
	l := mustLoaded(t, New(rdb, Options{Prefix: prefix, Timeout: testTimeout, Clock: c.Now}))
	k, keyID := l.r.keys, "hk"+prefix // a slot of this test alone (other branches run it too)
	req := &limit.Request{KeyID: keyID, PlanID: "p1", API: "a1", Stage: "prod",
		Buckets: []limit.Bucket{{Level: limit.LevelPlan, RateLimit: 0.001, BurstLimit: 100},
			{Level: limit.LevelStage, RateLimit: 0.001, BurstLimit: 1000, Method: "GET", Path: "/x"}},
		Quota: &limit.Quota{Limit: 10, Period: plans.PeriodDay}}
	decide := func(step string, wantQuota int64) {
		t.Helper()
		d, err := l.Decide(t.Context(), req)
		if err != nil || !d.Allowed || d.Quota.Remaining != wantQuota || d.Plan.Remaining != 100-(10-wantQuota) {
			t.Fatalf("%s: got %+v, %v, want admitted with quota and plan bucket %d and %d left", step, d, err, wantQuota, 100-(10-wantQuota))
		}
	}
	decide("before the migration", 9)
	m := beginMigration(t, rdb, keyspace.Slot(k.Quota(keyID, "p1")))
	m.must(m.move(k.Quota(keyID, "p1")))
	moved := make(chan struct{})
	go func() {
		defer close(moved)
		waittest.Poll(time.Minute, func() bool { // TRYAGAIN met: the run is sent again until...
			return l.r.resent.Load() > 0 || t.Context().Err() != nil
		})
		// ...the slot stayed half migrated for longer than a run's deadline
		// (1 s): the run is still sent again, under deadlines of its own
		first := time.Now()
		for time.Since(first) < 1500*time.Millisecond && t.Context().Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		slot := keyspace.Slot(k.Usage(keyID, "p1"))
		for _, key := range []string{k.PlanBucket(keyID, "p1"), k.Usage(keyID, "p1"), k.UsageChanges(slot), k.RunWindow(slot, l.r.node)} { // ...the rest of the key's state moved too
			if err := m.move(key); err != nil {
				t.Errorf("move %s: %v", key, err)
			}
		}
	}()
	t.Cleanup(func() { <-moved }) // before the migration's own cleanup finishes it
	decide("with the key's state split over two masters (TRYAGAIN)", 8)
	<-moved
	decide("with the key's state on the target while its slot migrates (ASK)", 7)
	m.finish()
	decide("after the migration (MOVED)", 6)
	usage, err := l.usageOn(t, keyID, "p1", c.Now())
	if err != nil || usage["2026-06-15"] != 4 {
		t.Fatalf("usage: got %v (%v), want 4 (each admission once)", usage, err)
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
	c := clocktest.New(at(t, "2026-06-15T12:00:00Z"))
	l := mustLoaded(t, New(rdb, Options{Prefix: prefix, Timeout: testTimeout, Clock: c.Now}))
	keyID, stageName := "rk"+prefix, "rs"+prefix // hash tags of this test alone
	const quota, stageBurst = 300, 100000
	req := &limit.Request{KeyID: keyID, PlanID: "p1", API: "a1", Stage: stageName,
		Buckets: []limit.Bucket{{Level: limit.LevelPlan, RateLimit: 1000, BurstLimit: 100000},
			{Level: limit.LevelStage, RateLimit: 0.001, BurstLimit: stageBurst, Method: "GET", Path: "/x"},
			{Level: limit.LevelAccount, RateLimit: 100000, BurstLimit: 100000}},
		Quota: &limit.Quota{Limit: quota, Period: plans.PeriodDay}}
	home := keyspace.Slot(l.r.keys.Quota(keyID, "p1"))
	stageSlot := keyspace.Slot(l.r.keys.StageBucket("a1", stageName, "GET", "/x"))

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
			}
		})
	}
	waittest.Until(t, "50 decisions sent", time.Minute, func() bool { return sent.Load() >= 50 }) // the slots hold live state before they move
	migrateSlot(t, rdb, home, 5*time.Millisecond)
	migrateSlot(t, rdb, stageSlot, 5*time.Millisecond)
	waittest.Until(t, "the quota's worth twice sent", time.Minute, func() bool { return sent.Load() >= 2*quota }) // and take load after
	close(stop)
	wg.Wait()
	l.settle()
	t.Logf("%d decisions, %d runs sent again after TRYAGAIN and the like", sent.Load(), l.r.resent.Load())
	if n := failed.Load(); n != 0 {
		t.Fatalf("decisions failed during the reshard: %d of %d (first: %v)", n, sent.Load(), firstErr.Load())
	}
	if n := admitted.Load(); n != quota {
		t.Fatalf("admitted: got %d of %d sent, want exactly the quota %d", n, sent.Load(), quota)
	}
	usage, err := l.usageOn(t, keyID, "p1", c.Now())
	if err != nil || usage["2026-06-15"] != quota {
		t.Errorf("usage: got %v (%v), want %d", usage, err, quota)
	}
	probe, err := l.Decide(t.Context(), &limit.Request{API: "a1", Stage: stageName,
		Buckets: []limit.Bucket{{Level: limit.LevelStage, RateLimit: 0.001, BurstLimit: stageBurst, Method: "GET", Path: "/x"}}})
	if err != nil || !probe.Allowed {
		t.Fatalf("stage probe: got %+v, %v", probe, err)
	}
	state, err := l.r.rdb.Get(t.Context(), l.r.keys.StageBucket("a1", stageName, "GET", "/x")).Result()
	var bucket script.BucketState
	if err == nil {
		_, err = bucket.Decode(state)
	}
	if err != nil {
		t.Fatalf("stage bucket state: got %q, %v", state, err)
	}
	if left := bucket.Tokens; left != float64(stageBurst-quota-1) {
		t.Errorf("stage bucket tokens: got %v, want %d (one per admission and the probe)", left, stageBurst-quota-1)
	}
}
