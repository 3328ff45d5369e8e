package engine

import (
	"crypto/sha256"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/engine/failopen"
	"tollgate/engine/lease"
	"tollgate/internal/redistest"
	"tollgate/keyspace"
	"tollgate/limit"
	"tollgate/plans"
)

// benchRequests returns requests of n API keys (nodeRequest: plan, stage
// and account buckets, a quota and usage) whose limits never refuse.
func benchRequests(l *Engine, n int) []*keyedRequest {
	reqs := make([]*keyedRequest, n)
	for i := range reqs {
		reqs[i] = nodeRequest(l, fmt.Sprintf("key%06d", i), 1000, 1000, 1_000_000_000)
	}
	return reqs
}

// limitRequests returns the gateway's requests (limit.Request, named by
// scope) of n API keys: plan, stage and account buckets and a quota that
// never refuse.
func limitRequests(n int) []*limit.Request {
	reqs := make([]*limit.Request, n)
	for i := range reqs {
		reqs[i] = &limit.Request{KeyID: fmt.Sprintf("key%06d", i), PlanID: "p1", API: "api1", Stage: "prod",
			Buckets: []limit.Bucket{{Level: limit.LevelPlan, RateLimit: 1000, BurstLimit: 1000},
				{Level: limit.LevelStage, RateLimit: 100, BurstLimit: 10000, Method: "GET", Path: "/items"},
				{Level: limit.LevelAccount, RateLimit: 100, BurstLimit: 10000}},
			Quota: &limit.Quota{Limit: 1_000_000_000, Period: plans.PeriodDay}}
	}
	return reqs
}

// BenchmarkDecide measures one decision as the gateway asks for it
// (Decide: names resolved, refusal memory consulted) over a plan, stage
// and account bucket, a quota and usage counting, against the real Redis
// (run with -benchmem). Requests rotate over 1000 API keys so the plan
// state stays warm but buckets do not all refuse.
func BenchmarkDecide(b *testing.B) {
	l := mustLimiter(b)
	reqs := limitRequests(1000)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := l.Decide(b.Context(), reqs[i%len(reqs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkDecideAnchored is BenchmarkDecide with a MONTH quota anchored
// to the 15th in Asia/Tokyo: the period goes to the script as a table
// (script.PeriodBounds), kept per calendar while it holds the estimate.
func BenchmarkDecideAnchored(b *testing.B) {
	l := mustLimiter(b)
	reqs := limitRequests(1000)
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range reqs {
		r.Quota = &limit.Quota{Limit: 1_000_000_000, Period: plans.PeriodMonth, Anchor: 15, Zone: tokyo}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := l.Decide(b.Context(), reqs[i%len(reqs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkDecideParallel is BenchmarkDecide from GOMAXPROCS goroutines.
func BenchmarkDecideParallel(b *testing.B) {
	l := mustLimiter(b)
	reqs := benchRequests(l, 1000)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := l.decideKeyed(b.Context(), reqs[i%len(reqs)], nil); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// BenchmarkKeys measures the key builder for the names one keyed request
// needs (plan bucket, plan method bucket, quota, usage); stage and account
// bucket names are built once per snapshot.
func BenchmarkKeys(b *testing.B) {
	k := keyspace.Space{Prefix: "tg"}
	b.ReportAllocs()
	for b.Loop() {
		_ = k.PlanBucket("a1b2c3d4e5", "pl0001")
		_ = k.PlanMethodBucket("a1b2c3d4e5", "pl0001", "api0000001", "prod", "GET", "/pets/{petId}")
		_ = k.Quota("a1b2c3d4e5", "pl0001")
		_ = k.Usage("a1b2c3d4e5", "pl0001")
	}
}

// BenchmarkDecideConcurrent is BenchmarkDecide from 16 goroutines per
// CPU, as a busy gateway calls it: concurrent decisions share pipelined
// round trips (batch.go), so the time per decision falls below one round
// trip.
func BenchmarkDecideConcurrent(b *testing.B) {
	l := mustLimiter(b)
	reqs := limitRequests(1000)
	b.ReportAllocs()
	b.SetParallelism(16)
	var next atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)
			if _, err := l.Decide(b.Context(), reqs[i%int64(len(reqs))]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkScriptBatch runs the limiter script on batches of 100 decisions over
// 100 API keys (plan bucket, shared stage and account buckets, quota and
// usage each), as a busy gateway with many partners sends them, and
// reports the Redis time per decision (redis-µs/decision, from INFO
// commandstats: script and the commands it calls). Run it alone: other
// scripts on the same Redis count too.
func BenchmarkScriptBatch(b *testing.B) {
	l := mustLimiter(b)
	reqs := benchRequests(l, 100)
	usec := func() float64 {
		info, err := l.r.rdb.Info(b.Context(), "commandstats").Result()
		if err != nil {
			b.Fatal(err)
		}
		for _, line := range strings.Split(info, "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:"); ok {
				for _, f := range strings.Split(rest, ",") {
					if v, ok := strings.CutPrefix(f, "usec="); ok {
						n, _ := strconv.ParseFloat(v, 64)
						return n
					}
				}
			}
		}
		return 0
	}
	now := time.Now()
	before := usec()
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Millisecond)
		runBatch(b, l, now, reqs)
	}
	b.ReportMetric((usec()-before)/float64(b.N*len(reqs)), "redis-µs/decision")
}

// BenchmarkDecideRun sends runs of op "decide" of n decisions each (n
// distinct API keys of 1000 in turn: plan, stage and account buckets, a
// quota and usage, nothing refusing), shaped as a node sends them (its run
// window, Redis TIME; the restore check left out), one after the other to
// a redis-server of its own, and reports the server's CPU per run and per
// decision: what a run costs whatever it carries (the round trip, the
// library's definitions, TIME, the run window, the MGET) against what each
// decision adds (docs/benchmarks.md, "What the many-keys rows pay Redis").
// With TOLLGATE_BENCH_REDIS set (host:port) it sends them to that server
// instead, e.g. one run under callgrind to count its instructions.
func BenchmarkDecideRun(b *testing.B) {
	var rdb *redis.Client
	if addr := os.Getenv("TOLLGATE_BENCH_REDIS"); addr != "" {
		rdb = redis.NewClient(&redis.Options{Addr: addr})
		b.Cleanup(func() { _ = rdb.Close() })
	} else {
		rdb = redistest.MustServerProcess(b).Client
	}
	for _, n := range []int{1, 3, 8, 32, 100} {
		b.Run(fmt.Sprintf("decisions=%d", n), func(b *testing.B) {
			l := mustLoaded(b, New(rdb, Options{Prefix: redistest.MustPrefix(b), Timeout: testTimeout}))
			reqs := benchRequests(l, 1000)
			a := newRunArgs()
			i := 0
			b.ResetTimer()
			cpu := serverCPU(b, []*redis.Client{rdb})
			for b.Loop() {
				a.reset()
				for range n {
					a.addDecision(reqs[i%len(reqs)], nil, rulesAt{}, customerAt{}, 0)
					i++
				}
				keys, args, _ := a.build(l.r.decideOpts(0, ""))
				if err := runOnce(b.Context(), l.r.rdb, keys, args).Err(); err != nil {
					b.Fatal(err)
				}
			}
			used := float64(serverCPU(b, []*redis.Client{rdb})-cpu) / 1e3
			b.ReportMetric(used/float64(b.N), "redis-cpu-µs/run")
			b.ReportMetric(used/float64(b.N*n), "redis-cpu-µs/decision")
		})
	}
}

// BenchmarkResolve measures resolving a gateway request into Redis names
// (Decide before any round trip: per-key names built, the stage bucket's
// and the account's taken from the engine's cache), from GOMAXPROCS
// goroutines; no Redis.
func BenchmarkResolve(b *testing.B) {
	l := New(nil, Options{Prefix: "tg"})
	reqs := limitRequests(1000)
	b.ReportAllocs()
	var next atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			var kr keyedRequest
			var bs [4]keyedBucket
			var q keyedQuota
			l.res.resolve(reqs[next.Add(1)%int64(len(reqs))], &kr, bs[:0], &q, nil)
		}
	})
}

// BenchmarkDecideHotKey is one hot API key (plan, stage and account
// buckets, a quota and usage that never refuse) decided from 8 and 32
// goroutines, as a gateway under 8 and 32 connections on one key, on one
// primary and on Redis Cluster, with capacity leases off and on
// (docs/leases.md); trips/op is the Redis round trips (decisions, lease
// give-backs and, on Redis Cluster, each phase's pipeline) per admitted
// decision.
func BenchmarkDecideHotKey(b *testing.B) {
	for _, backend := range redistest.Backends {
		for _, callers := range []int{8, 32} {
			b.Run(fmt.Sprintf("%s/callers=%d", backend.Name, callers), func(b *testing.B) {
				benchHot(b, backend, callers, func() *limit.Request { return hotRequest(1e6, 1<<30, 1<<30) })
			})
		}
	}
}

// BenchmarkDecideHotRuleKey is BenchmarkDecideHotKey for a request that a
// rate-limit rule also limits (never refusing: a TOKEN_BUCKET rule, a
// fixed or a sliding window of an hour), from 8 and 32 goroutines on one
// primary and on Redis Cluster (docs/leases.md, "Rate-limit rules").
func BenchmarkDecideHotRuleKey(b *testing.B) {
	for _, backend := range redistest.Backends {
		for _, rule := range []limit.Rule{
			{Name: "tb", Algorithm: limit.TokenBucket, RateLimit: 1e6, BurstLimit: 1 << 30},
			{Name: "fw", Algorithm: limit.FixedWindow, Limit: 1 << 30, Window: time.Hour},
			{Name: "sw", Algorithm: limit.SlidingWindow, Limit: 1 << 30, Window: time.Hour},
		} {
			rule.Counter, rule.Value, rule.Private = "rule1", "ip=192.0.2.1", true
			for _, callers := range []int{8, 32} {
				b.Run(fmt.Sprintf("%s/rule=%s/callers=%d", backend.Name, rule.Name, callers), func(b *testing.B) {
					benchHot(b, backend, callers, func() *limit.Request {
						r := hotRequest(1e6, 1<<30, 1<<30)
						r.Rules = []limit.Rule{rule}
						return r
					})
				})
			}
		}
	}
}

// benchHot decides req's requests on backend from callers goroutines,
// leases off and on, reporting trips/op.
func benchHot(b *testing.B, backend redistest.Backend, callers int, req func() *limit.Request) {
	for _, lc := range []struct {
		name string
		life time.Duration
	}{{"leases=off", 0}, {"leases=on", lease.DefaultLifetime}} {
		b.Run(lc.name, func(b *testing.B) {
			rdb, prefix := backend.Open(b)
			l := mustLoaded(b, New(rdb, Options{Prefix: prefix, Timeout: testTimeout}))
			b.Cleanup(func() { _ = l.Close() })
			var top limit.Decider = l
			if lc.life > 0 {
				leases := lease.New(l, lease.Options{Lifetime: lc.life})
				b.Cleanup(leases.Close)
				top = limit.Stack(l, leases.Layer)
			}
			b.ReportAllocs()
			b.SetParallelism(max(1, callers/runtime.GOMAXPROCS(0)))
			before := l.r.trips.Load()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					d, err := top.Decide(b.Context(), req())
					if err != nil || !d.Allowed {
						b.Fatal(d, err)
					}
				}
			})
			b.ReportMetric(float64(l.r.trips.Load()-before)/float64(b.N), "trips/op")
		})
	}
}

// BenchmarkSettledCost is a settled cost as the gateway runs it: a
// decision that reserves one unit (uncounted) over 1000 API keys, then its
// settle charging one more and counting the request, from 8 and 32
// goroutines on one primary. settle=none decides alone; settle=each runs
// every settle on its own (Engine.Settle, one run each); settle=batched
// hands it to the node's pending charges (engine/failopen, as cmd wires
// it), which send every settle waiting in one run. trips/op is the Redis
// round trips per request, decision and settle (docs/cost.md).
func BenchmarkSettledCost(b *testing.B) {
	for _, callers := range []int{8, 32} {
		for _, mode := range []string{"none", "each", "batched"} {
			b.Run(fmt.Sprintf("callers=%d/settle=%s", callers, mode), func(b *testing.B) {
				l := mustLimiter(b)
				b.Cleanup(func() { _ = l.Close() })
				pending := failopen.New(l, failopen.Options{})
				b.Cleanup(pending.Close)
				reqs := limitRequests(1000)
				for _, r := range reqs {
					r.Uncounted = true
					for i := range r.Buckets { // never refusing
						r.Buckets[i].RateLimit, r.Buckets[i].BurstLimit = 1e9, 1<<30
					}
				}
				b.ReportAllocs()
				b.SetParallelism(max(1, callers/runtime.GOMAXPROCS(0)))
				var next atomic.Int64
				before := l.r.trips.Load()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						req := reqs[next.Add(1)%int64(len(reqs))]
						d, err := l.Decide(b.Context(), req)
						if err != nil || !d.Allowed {
							b.Fatal(d, err)
						}
						s := limit.Settlement{Req: req, PeriodStart: d.Quota.Reset.Add(-d.Quota.Window), At: d.Now, Charge: 1, Count: true, Units: 2}
						switch mode {
						case "each":
							err = l.Settle(b.Context(), s)
						case "batched":
							err = pending.Settle(b.Context(), s)
						}
						if err != nil {
							b.Fatal(err)
						}
					}
				})
				for p, _ := pending.Pending(); p > 0; p, _ = pending.Pending() {
					runtime.Gosched() // the last settles land
				}
				b.ReportMetric(float64(l.r.trips.Load()-before)/float64(b.N), "trips/op")
			})
		}
	}
}

// BenchmarkDecideManyKeys is many API keys taken in turn (each request the
// next key of a list of 256 or 10,000, as the gateway's many-keys rows of
// make bench send them: plan, stage and account buckets, a quota and usage
// that never refuse), decided through the lease layer (as cmd stacks it)
// from 8 and 32 goroutines on a redis-server of its own. Each key is far
// below a lease's rate, so nearly every decision goes to Redis. work=0
// callers decide back to back; work=gateway callers hash 64 KiB between
// decisions (CPU of their own, as a gateway's request has besides its
// decision). trips/op is the Redis round trips per decision (1/trips/op
// the decisions a run carries), µs/decision the mean time a caller waits
// for its decision (p99-µs/decision: its 99th percentile), node-cpu-µs/op and redis-cpu-µs/op the CPU time of
// the test process and of the server per decision (docs/leases.md, "Many
// keys").
func BenchmarkDecideManyKeys(b *testing.B) {
	for _, keys := range []int{256, 10_000} {
		reqs := manyKeyRequests(keys)
		srv := redistest.MustServerProcess(b)
		for _, work := range []int{0, 64 << 10} {
			for _, callers := range []int{8, 32} {
				name := fmt.Sprintf("keys=%d/work=0/callers=%d", keys, callers)
				if work > 0 {
					name = fmt.Sprintf("keys=%d/work=gateway/callers=%d", keys, callers)
				}
				b.Run(name, func(b *testing.B) { benchManyKeys(b, srv.Client, []*redis.Client{srv.Client}, reqs, work, callers) })
			}
		}
	}
}

// manyKeyRequests returns requests of keys keys on a plan that never
// refuses, one per key.
func manyKeyRequests(keys int) []*limit.Request {
	reqs := make([]*limit.Request, keys)
	for i := range reqs {
		reqs[i] = hotRequest(1e6, 1<<30, 1<<30)
		reqs[i].KeyID = fmt.Sprintf("key%05d", i)
	}
	return reqs
}

// BenchmarkDecideManyKeysCluster is BenchmarkDecideManyKeys (callers
// deciding back to back) on a three-master Redis Cluster of its own:
// trips/op counts each phase's pipeline, redis-cpu-µs/op the three
// masters' CPU.
func BenchmarkDecideManyKeysCluster(b *testing.B) {
	for _, keys := range []int{256, 10_000} {
		reqs := manyKeyRequests(keys)
		cc, masters := redistest.MustClusterServer(b, 3)
		for _, callers := range []int{8, 32} {
			b.Run(fmt.Sprintf("keys=%d/callers=%d", keys, callers), func(b *testing.B) { benchManyKeys(b, cc, masters, reqs, 0, callers) })
		}
	}
}

// benchManyKeys decides reqs in turn on rdb (whose servers are servers)
// from callers goroutines, each hashing work bytes between its decisions,
// reporting round trips, waits and CPU per decision.
func benchManyKeys(b *testing.B, rdb redis.UniversalClient, servers []*redis.Client, reqs []*limit.Request, work, callers int) {
	l := mustLoaded(b, New(rdb, Options{Prefix: redistest.MustPrefix(b), Timeout: testTimeout}))
	b.Cleanup(func() { _ = l.Close() })
	leases := lease.New(l, lease.Options{})
	b.Cleanup(leases.Close)
	top := limit.Stack(l, leases.Layer)
	buf := make([]byte, work)
	b.ReportAllocs()
	b.SetParallelism(max(1, callers/runtime.GOMAXPROCS(0)))
	var next atomic.Int64
	var mu sync.Mutex
	var waits []time.Duration
	b.ResetTimer()
	trips, node, redisCPU := l.r.trips.Load(), processCPU(b), serverCPU(b, servers)
	b.RunParallel(func(pb *testing.PB) {
		var w []time.Duration
		for pb.Next() {
			if work > 0 {
				_ = sha256.Sum256(buf)
			}
			start := time.Now()
			d, err := top.Decide(b.Context(), reqs[next.Add(1)%int64(len(reqs))])
			if err != nil || !d.Allowed {
				b.Fatal(d, err)
			}
			w = append(w, time.Since(start))
		}
		mu.Lock()
		waits = append(waits, w...)
		mu.Unlock()
	})
	n := float64(b.N)
	b.ReportMetric(float64(l.r.trips.Load()-trips)/n, "trips/op")
	slices.Sort(waits)
	var sum time.Duration
	for _, w := range waits {
		sum += w
	}
	b.ReportMetric(float64(sum.Microseconds())/n, "µs/decision")
	b.ReportMetric(float64(waits[len(waits)*99/100].Microseconds()), "p99-µs/decision")
	b.ReportMetric(float64(processCPU(b)-node)/1e3/n, "node-cpu-µs/op")
	b.ReportMetric(float64(serverCPU(b, servers)-redisCPU)/1e3/n, "redis-cpu-µs/op")
}

// processCPU returns the CPU time the test process used so far.
func processCPU(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// serverCPU returns the CPU time redis-servers used so far (INFO cpu),
// summed.
func serverCPU(b *testing.B, servers []*redis.Client) time.Duration {
	var total float64
	for _, rdb := range servers {
		info, err := rdb.Info(b.Context(), "cpu").Result()
		if err != nil {
			b.Fatal(err)
		}
		for _, line := range strings.Split(info, "\n") {
			for _, f := range []string{"used_cpu_sys:", "used_cpu_user:"} {
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), f); ok {
					s, _ := strconv.ParseFloat(v, 64)
					total += s
				}
			}
		}
	}
	return time.Duration(total * 1e9)
}
