package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tollgate/internal/clocktest"
	"tollgate/internal/hammertest"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redistest"
	"tollgate/limit"
	"tollgate/plans"
	"tollgate/script"
)

// mustEngineOn returns an Engine on b with a fresh prefix and opts (Prefix
// and a zero Timeout filled in), its scripts loaded.
func mustEngineOn(tb testing.TB, b redistest.Backend, opts Options) *Engine {
	tb.Helper()
	rdb, prefix := b.Open(tb)
	opts.Prefix = prefix
	if opts.Timeout == 0 {
		opts.Timeout = testTimeout
	}
	return mustLoaded(tb, New(rdb, opts))
}

func TestClusterSmoke(t *testing.T) {
	l := mustEngineOn(t, redistest.Backends[1], Options{})
	req := nodeRequest(l, "k1", 0, 2, 3)
	for i, want := range []bool{true, true, false} {
		d, err := l.decideKeyed(t.Context(), req, nil)
		if err != nil || d.Allowed != want {
			t.Fatalf("decision %d: got %+v, %v, want allowed=%v", i+1, d, err, want)
		}
	}
}

// settle waits until the give-backs of decisions made so far landed (on
// Redis Cluster they run after the callers have their answers).
func (e *Engine) settle() { _ = e.Close() }

// A quota of N under concurrent load from many callers is admitted exactly
// N times on both backends, and a shared bucket is never over-admitted:
// after the give-backs landed it has lost exactly one token per admitted
// request, none for a refused one.
func TestConcurrentQuotaAndSharedBucketExact(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		l, _ := mustClockEngineOn(t, b, at(t, "2026-06-15T12:00:00Z"))
		k := l.r.keys
		const quota, stageBurst, callers, each = 37, 200, 16, 8
		stage := keyedBucket{Key: k.StageBucket("a1", "prod", "GET", "/items"), RateLimit: 0.001, BurstLimit: stageBurst, Level: limit.LevelStage}
		acct := keyedBucket{Key: k.AccountBucket(), RateLimit: 0.001, BurstLimit: 10000, Level: limit.LevelAccount}
		mk := func(keyID string, q int32) *keyedRequest {
			return &keyedRequest{
				Buckets:  []keyedBucket{{Key: k.PlanBucket(keyID, "p1"), RateLimit: 0.001, BurstLimit: 1000, Level: limit.LevelPlan}, stage, acct},
				Quota:    &keyedQuota{Key: k.Quota(keyID, "p1"), Limit: q, Period: script.PeriodDay},
				UsageKey: k.Usage(keyID, "p1"),
			}
		}
		var admittedHot, admittedOthers atomic.Int64
		var wg sync.WaitGroup
		for g := range callers {
			wg.Go(func() {
				for i := range each {
					// half the calls are the hot key's (quota 37), the rest
					// spread over keys with a quota of 1, so refusals by a
					// key's own quota come with shared tokens to give back
					req, n := mk("hot", quota), &admittedHot
					if i%2 == 1 {
						req, n = mk(fmt.Sprintf("k%d-%d", g, i), 1), &admittedOthers
					}
					d, err := l.decideKeyed(t.Context(), req, nil)
					if err != nil {
						t.Errorf("decide: %v", err)
						return
					}
					if d.Allowed {
						n.Add(1)
					}
				}
			})
		}
		wg.Wait()
		l.settle()
		hot, others := admittedHot.Load(), admittedOthers.Load()
		if hot != quota || others != callers*each/2 {
			t.Fatalf("admitted: hot key %d, others %d; want exactly %d (its quota) and %d (one each)", hot, others, quota, callers*each/2)
		}
		probe := mustDecide(t, l, &keyedRequest{Buckets: []keyedBucket{{Key: stage.Key, RateLimit: 0.001, BurstLimit: stageBurst, Level: limit.LevelPlan}}})
		if got, want := probe.Plan.Remaining, int64(stageBurst)-(hot+others)-1; got != want {
			t.Errorf("stage tokens after %d admitted and a probe: got %d, want %d (given back exactly)", hot+others, got, want)
		}
		used, err := l.quotaStateErr(t, "hot", "p1", plans.Quota{Limit: quota, Period: plans.PeriodDay})
		if err != nil || used.Remaining != quota-hot {
			t.Errorf("hot key's quota: got remaining %d (%v), want %d", used.Remaining, err, quota-hot)
		}
	})
}

// With the shared bucket plentiful, the hot key's quota binds: exactly N
// admitted however the calls interleave.
func TestConcurrentQuotaAdmitsExactlyN(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		l := mustEngineOn(t, b, Options{})
		req := nodeRequest(l, "hot", 1000, 10000, 50)
		admitted := hammertest.Count(20, 6, func(int, int) bool {
			d, err := l.decideKeyed(t.Context(), req, nil)
			if err != nil {
				t.Errorf("decide: %v", err)
			}
			return err == nil && d.Allowed
		})
		if n := admitted; n != 50 {
			t.Fatalf("quota 50 under 120 concurrent calls: admitted %d, want exactly 50", n)
		}
	})
}

// A binding shared bucket is never over-admitted, also while requests
// refused by their own quota (whose shared tokens go back afterwards)
// compete for it; once the give-backs landed it has lost exactly one
// token per admitted request.
func TestBindingSharedBucketNeverOverAdmitted(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, b redistest.Backend) {
		l, _ := mustClockEngineOn(t, b, at(t, "2026-06-15T12:00:00Z"))
		k := l.r.keys
		const burst = 30
		stage := keyedBucket{Key: k.StageBucket("a1", "prod", "GET", "/x"), RateLimit: 0.001, BurstLimit: burst, Level: limit.LevelStage}
		n := hammertest.Count(10, 10, func(g, i int) bool {
			keyID := fmt.Sprintf("k%d-%d", g, i)
			q := int32(1 - i%2) // every other key has no quota left: refused by its own limit
			req := &keyedRequest{Buckets: []keyedBucket{stage},
				Quota: &keyedQuota{Key: k.Quota(keyID, "p1"), Limit: q, Period: script.PeriodDay}, UsageKey: k.Usage(keyID, "p1")}
			d, err := l.decideKeyed(t.Context(), req, nil)
			if err != nil {
				t.Errorf("decide: %v", err)
			}
			return err == nil && d.Allowed
		})
		l.settle()
		if n > burst {
			t.Fatalf("shared bucket of burst %d admitted %d", burst, n)
		}
		probe := mustDecide(t, l, &keyedRequest{Buckets: []keyedBucket{{Key: stage.Key, RateLimit: 0.001, BurstLimit: burst, Level: limit.LevelPlan}}})
		if left := int64(burst) - n; probe.Plan.Remaining != max(left-1, 0) || probe.Allowed != (left > 0) {
			t.Errorf("after %d admitted: probe got allowed=%v remaining %d, want %v and %d", n, probe.Allowed, probe.Plan.Remaining, left > 0, max(left-1, 0))
		}
	})
}

// A phase 1 that takes its whole deadline (a slow reply) leaves phase 2
// its own deadline: the decision is made, and charged once, rather than
// failing with the shared tokens taken.
func TestSlowPhaseOneLeavesPhaseTwoItsOwnDeadline(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.MustCluster(t)
	c := clocktest.New(at(t, "2026-06-15T12:00:00Z"))
	l := mustLoaded(t, New(rdb, Options{Prefix: prefix, Timeout: 200 * time.Millisecond, Clock: c.Now}))
	rdb.AddHook(&stallFirstScriptPipeline{}) // phase 1 returns only after its deadline
	const burst = 50
	stage := keyedBucket{Key: l.r.keys.StageBucket("a1", "prod", "GET", "/x"), RateLimit: 0.001, BurstLimit: burst, Level: limit.LevelStage}
	req := &keyedRequest{Buckets: []keyedBucket{stage},
		Quota: &keyedQuota{Key: l.r.keys.Quota("k1", "p1"), Limit: 10, Period: script.PeriodDay}, UsageKey: l.r.keys.Usage("k1", "p1")}
	if d, err := l.decideKeyed(t.Context(), req, nil); err != nil || !d.Allowed || d.Quota.Remaining != 9 {
		t.Fatalf("decision whose phase 1 took its deadline: got %+v, %v, want admitted with 9 left", d, err)
	}
	l.settle()
	probe := mustDecide(t, l, &keyedRequest{Buckets: []keyedBucket{{Key: stage.Key, RateLimit: 0.001, BurstLimit: burst, Level: limit.LevelPlan}}})
	if probe.Plan.Remaining != burst-2 {
		t.Fatalf("stage bucket after the decision and a probe: got %d tokens left, want %d (one each)", probe.Plan.Remaining, burst-2)
	}
}

// stallFirstScriptPipeline is a go-redis hook that lets the first
// pipeline holding a script run go through, then holds its reply until
// the pipeline's context is done.
type stallFirstScriptPipeline struct{ done atomic.Bool }

func (h *stallFirstScriptPipeline) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *stallFirstScriptPipeline) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return next
}
func (h *stallFirstScriptPipeline) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if len(cmds) > 0 && cmds[0].Name() == "evalsha" && h.done.CompareAndSwap(false, true) {
			<-ctx.Done()
		}
		return err
	}
}
