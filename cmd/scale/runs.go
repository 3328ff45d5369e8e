package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"tollgate/engine"
	"tollgate/limit"
	"tollgate/plans"
)

// fourNodes: four gateway nodes on the cluster. The hot key (quota N a
// day) is called from all four at once until well past N: exactly N must
// be admitted. Then other keys call GET /s, whose shared stage bucket has
// a burst of S, until well past S: at most S (and, with no refusal of a
// key's own limits to give back, exactly S) are admitted.
func fourNodes(ctx context.Context, o options, cl *server, prefix string) error {
	p := prefix + "a"
	if _, err := loadKeys(ctx, cl.rdb, p, 0, 1000); err != nil {
		return err
	}
	snap := snapshot(o.quota, o.shared)
	var nodes []*node
	for range 4 {
		n, err := newNode(ctx, cl.url, p, snap)
		if err != nil {
			return err
		}
		defer n.close()
		nodes = append(nodes, n)
	}
	fmt.Println("== four gateway nodes on one Redis Cluster ==")
	hot, err := blast(ctx, nodes, "/"+stageName+"/q", o.quota+2000, func(int) int { return 0 })
	if err != nil {
		return err
	}
	fmt.Printf("hot key, quota %d a day, %d requests from 4 nodes x 16 callers: %d admitted (200), %d refused (429), %d other, %s\n",
		o.quota, hot.sent, hot.ok, hot.refused, hot.other, verdict(hot.ok == int64(o.quota)))
	usage, err := nodes[0].eng.KeyUsage(ctx, keyID(0), hotPlan, nil)
	if err != nil {
		return err
	}
	fmt.Printf("hot key's usage today: %d\n", usage.Today)
	shared, err := blast(ctx, nodes, "/"+stageName+"/s", o.shared+3000, func(i int) int { return 1 + i%999 })
	if err != nil {
		return err
	}
	fmt.Printf("shared stage bucket, burst %d, %d requests of 999 keys from 4 nodes: %d admitted, %d refused, %d other, %s\n\n",
		o.shared, shared.sent, shared.ok, shared.refused, shared.other, verdict(shared.ok <= int64(o.shared)))
	return nil
}

// counts are the outcomes of a blast.
type counts struct{ sent, ok, refused, other int64 }

// blast sends total requests GET path, spread over the nodes, 16 callers
// each, with key(i) for request i.
func blast(ctx context.Context, nodes []*node, path string, total int, key func(i int) int) (counts, error) {
	var c counts
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for _, n := range nodes {
		for range 16 {
			wg.Go(func() {
				for {
					i := int(next.Add(1)) - 1
					if i >= total {
						return
					}
					status, err := n.get(ctx, path, key(i))
					atomic.AddInt64(&c.sent, 1)
					switch {
					case err != nil:
						firstErr.CompareAndSwap(nil, err)
						atomic.AddInt64(&c.other, 1)
					case status == 200:
						atomic.AddInt64(&c.ok, 1)
					case status == 429:
						atomic.AddInt64(&c.refused, 1)
					default:
						atomic.AddInt64(&c.other, 1)
					}
				}
			})
		}
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return c, err
	}
	return c, nil
}

func verdict(ok bool) string {
	if ok {
		return "exact"
	}
	return "WRONG"
}

// manyKeys: one gateway node's memory and key-lookup latency with a
// thousand keys in Redis, then with o.keys, for the same working set of a
// thousand keys (what one node serves at a time).
func manyKeys(ctx context.Context, o options, cl *server, prefix string) error {
	fmt.Println("== keys in Redis vs one node's memory and key-lookup latency ==")
	p := prefix + "b"
	loaded := 0
	for _, n := range []int{1000, o.keys} {
		before := cl.info(ctx, "memory", "used_memory")
		took, err := loadKeys(ctx, cl.rdb, p, loaded, n)
		if err != nil {
			return err
		}
		loaded = n
		redisMB := cl.info(ctx, "memory", "used_memory") / (1 << 20)
		m, err := measureLookups(ctx, cl, p, n)
		if err != nil {
			return err
		}
		fmt.Printf("%8d keys (loaded in %v, Redis memory +%.0f MiB, now %.0f MiB over the masters): node heap %.1f MiB; lookups of a 1000-key working set: cold p50 %v p99 %v, cached p50 %v p99 %v\n",
			n, took.Round(time.Millisecond), redisMB-before/(1<<20), redisMB, m.heapMB, m.cold50, m.cold99, m.warm50, m.warm99)
	}
	fmt.Println()
	return nil
}

// lookupFigures are one node's figures for one key count.
type lookupFigures struct {
	heapMB                         float64
	cold50, cold99, warm50, warm99 time.Duration
}

// measureLookups starts a fresh node and looks up a working set of 1000
// keys drawn from the n loaded: once from Redis (cold), then three times
// from its local cache; it reports the latencies and the heap in use
// after a GC.
func measureLookups(ctx context.Context, cl *server, prefix string, n int) (lookupFigures, error) {
	var f lookupFigures
	runtime.GC()
	nd, err := newNode(ctx, cl.url, prefix, snapshot(1, 1))
	if err != nil {
		return f, err
	}
	defer nd.close()
	r := rand.New(rand.NewPCG(uint64(n), 9))
	set := make([]string, 1000)
	for i := range set {
		set[i] = plans.HashKey(keyValue(r.IntN(n)), nil)
	}
	var cold, warm []time.Duration
	for pass := range 4 {
		for _, h := range set {
			start := time.Now()
			rec, err := nd.reader.Lookup(ctx, h)
			if err != nil || rec == nil {
				return f, fmt.Errorf("lookup: %v, %v", rec, err)
			}
			if pass == 0 {
				cold = append(cold, time.Since(start))
			} else {
				warm = append(warm, time.Since(start))
			}
		}
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	f.heapMB = float64(ms.HeapAlloc) / (1 << 20)
	f.cold50, f.cold99 = percentile(cold, 50), percentile(cold, 99)
	f.warm50, f.warm99 = percentile(warm, 50), percentile(warm, 99)
	return f, nil
}

// percentile returns the p-th percentile of ds (sorted in place).
func percentile(ds []time.Duration, p int) time.Duration {
	slices.Sort(ds)
	return ds[(len(ds)-1)*p/100].Round(100 * time.Nanosecond)
}

// throughput decides keyed requests (plan bucket, stage bucket, account
// bucket, quota: every level) with o.callers callers for o.duration, on
// one primary and on the cluster, one after the other in this run.
func throughput(ctx context.Context, o options, cl, primary *server, prefix string) error {
	fmt.Printf("== decisions per second, %d callers for %v, 10000 keys, every level ==\n", o.callers, o.duration)
	for _, s := range []struct {
		name string
		srv  *server
	}{{"one primary", primary}, {"three-master cluster", cl}} {
		eng := engine.New(s.srv.rdb, engine.Options{Prefix: prefix + "c", Timeout: time.Second})
		if err := eng.Load(ctx); err != nil {
			return err
		}
		cpu0 := s.srv.cpu(ctx)
		n, errs, lat := decideFor(ctx, eng, o.callers, o.duration)
		cpu := s.srv.cpu(ctx) - cpu0
		fmt.Printf("%-22s %8.0f decisions/s  p50 %v  p99 %v  errors %d  Redis CPU %.1f µs per decision (over %d server(s))\n",
			s.name, float64(n)/o.duration.Seconds(), percentile(lat, 50), percentile(lat, 99), errs, cpu*1e6/float64(max(n, 1)), len(s.srv.masters))
	}
	return nil
}

// decideFor runs callers loops of Decide for d and returns the decisions,
// the errors and the latencies.
func decideFor(ctx context.Context, eng *engine.Engine, callers int, d time.Duration) (int64, int64, []time.Duration) {
	var n, errs atomic.Int64
	var mu sync.Mutex
	var all []time.Duration
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(c), 1))
			var lat []time.Duration
			for time.Now().Before(deadline) {
				k := r.IntN(10000)
				req := &limit.Request{KeyID: keyID(k), PlanID: hotPlan, API: apiID, Stage: stageName, Version: 1,
					Buckets: []limit.Bucket{{Level: limit.LevelPlan, RateLimit: 1e6, BurstLimit: 1e6},
						{Level: limit.LevelStage, RateLimit: 1e9, BurstLimit: 1e9, Method: "GET", Path: "/q"},
						{Level: limit.LevelAccount, RateLimit: 1e9, BurstLimit: 1e9}},
					Quota: &limit.Quota{Limit: 1e9, Period: plans.PeriodDay}}
				start := time.Now()
				if _, err := eng.Decide(ctx, req); err != nil {
					errs.Add(1)
				}
				lat = append(lat, time.Since(start))
				n.Add(1)
			}
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return n.Load(), errs.Load(), all
}
