package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// machine describes where the bench ran: CPU model and count, Go, wrk and
// Redis versions.
func machine(ctx context.Context, s *stack) string {
	cpu := "unknown CPU"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
		_ = f.Close()
	}
	wrkVersion := "wrk ?"
	if out, _ := exec.CommandContext(ctx, s.opts.wrk, "-v").CombinedOutput(); len(out) > 0 {
		wrkVersion = strings.Join(strings.Fields(strings.SplitN(string(out), "\n", 2)[0])[:2], " ")
	}
	redisVersion := "?"
	if info, err := s.rdb.Info(ctx, "server").Result(); err == nil {
		for _, l := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "redis_version:"); ok {
				redisVersion = v
			}
		}
	}
	return fmt.Sprintf("%s/%s, %d CPUs (%s), %s, %s, redis %s (own instance, loopback)",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpu, runtime.Version(), wrkVersion, redisVersion)
}

// print writes the report as aligned text.
func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "tollgate bench, %s\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "machine: %s\n", r.machine)
	fmt.Fprintf(w, "config: key required; plan throttle %d/s burst %d + quota %d/MONTH; stage */* throttle %d/s burst %d; "+
		"method throttle on GET /uncached; caching on GET /cached (1 h) and GET /miss (%d s, keyed by a query parameter new in every request); "+
		"a TOKEN_BUCKET rule per API key on GET /ruled; account %d/s; 256 and 10000 keys on a plan like the main key's\n",
		planRate, planBurst, quotaLimit, stageRate, stageBurst, missTTL, 1_000_000)
	fmt.Fprintf(w, "each run: wrk, 2 threads, %v; paths interleaved, best of %d round(s) per path and level; gateway node 1 of 2 takes the load; access log on; TOLLGATE_REDIS_TIMEOUT %v\n", r.duration, r.rounds, r.redisTimeout)
	fmt.Fprintf(w, "upstream: a fixed 200-byte answer; bare proxy: cmd/bareproxy (pooled buffers, tuned transport); naive peer: cmd/naiveproxy (the same proxy, one EVALSHA of a 3-bucket-plus-quota script per request); load average before the runs: %s\n", r.load)
	if r.cluster {
		fmt.Fprintln(w, "cluster rows: the bench's own Redis Cluster of 3 masters (no replicas) on loopback, a gateway node on it (a second admin publishes to it); "+
			"the naive peer on it keeps its script's keys under one hash tag, so one master decides every request")
	}
	switch r.cacheHit {
	case "Hit":
		fmt.Fprintln(w, "cache: GET /cached answers X-Cache: Hit once stored")
	default:
		fmt.Fprintf(w, "cache: GET /cached answered X-Cache: %q, never Hit: the cache-hit row measures a cached method without a working cache\n", r.cacheHit)
	}
	fmt.Fprintln(w)
	tw := newTable(w, "conns", "path", "req/s", "x bare", "p50", "p99", "non-2xx", "errors", "fail-open", "redis rt/req", "cmds/req", "top-level commands/req", "CPU µs/req by process")
	bare := map[int]float64{}
	for _, x := range r.rows {
		if x.path == pathBare {
			bare[x.conns] = x.wrk.RPS
		}
		tw.row(x.conns, x.path, fmt.Sprintf("%.0f", x.wrk.RPS), ratio(x.wrk.RPS, bare[x.conns]), ms(x.wrk.P50), ms(x.wrk.P99),
			x.wrk.Non2xx, x.wrk.Errors, x.failOpen, fmt.Sprintf("%.2f", x.redis.RoundTrips), fmt.Sprintf("%.2f", x.redis.Commands), x.redis.Top, x.cpu)
	}
	tw.flush()
	r.printCompare(w)
	r.printBest(w)
	r.printLatency(w)
	fmt.Fprintf(w, "\nconfig push (admin 2xx -> both gateways enforce, %d plan throttle changes): p50 %s, p99 %s, max %s (target p99 <= 250ms)\n",
		r.push.N, ms(r.push.P50), ms(r.push.P99), ms(r.push.Max))
}

// printCompare prints, per level, every path against the bare proxy and
// the naive peer (on the cluster: the naive peer on the same cluster),
// with its CPU per request against the bare proxy's, the gateway's heap
// allocations per request and the Redis round trips per admitted request;
// then the targets.
func (r *report) printCompare(w io.Writer) {
	at := map[string]map[int]row{}
	var levels []int
	for _, x := range r.rows {
		if at[x.path] == nil {
			at[x.path] = map[int]row{}
		}
		if _, ok := at[pathBare][x.conns]; !ok && x.path == pathBare {
			levels = append(levels, x.conns)
		}
		at[x.path][x.conns] = x
	}
	fmt.Fprintln(w, "\nside by side (x bare, x naive: req/s ratios; CPU x bare: CPU µs per request over the bare proxy's;")
	fmt.Fprintln(w, "allocs/req: the gateway node's heap allocations per request; rt/adm: Redis round trips per admitted request):")
	tw := newTable(w, "conns", "path", "req/s", "x bare", "x naive", "CPU µs/req", "CPU x bare", "allocs/req", "rt/adm")
	type check struct {
		what string
		ok   bool
	}
	var checks []check
	target := func(c int, what string, got, want float64) {
		checks = append(checks, check{fmt.Sprintf("%d conns: %s %.2f >= %.2f", c, what, got, want), got >= want})
	}
	for _, c := range levels {
		bare, naive := at[pathBare][c], at[pathNaive][c]
		for _, x := range r.rows {
			if x.conns != c || x.path == pathBare {
				continue
			}
			peer := naive
			if x.path == pathClusterTG {
				peer = at[pathClusterNaive][c]
			}
			vsNaive := "-"
			if x.path != pathNaive && x.path != pathClusterNaive {
				vsNaive = ratio(x.wrk.RPS, peer.wrk.RPS)
			}
			allocs := "-"
			if x.allocs > 0 {
				allocs = fmt.Sprintf("%.0f", x.allocs)
			}
			tw.row(c, x.path, rps(x), ratio(x.wrk.RPS, bare.wrk.RPS), vsNaive, fmt.Sprintf("%.0f", x.cpuUS),
				ratio(x.cpuUS, bare.cpuUS), allocs, fmt.Sprintf("%.3f", x.rtPerAdmitted))
		}
		tg := at[pathUncached][c]
		target(c, "one hot key x bare", tg.wrk.RPS/bare.wrk.RPS, 0.85)
		target(c, "one hot key x naive", tg.wrk.RPS/naive.wrk.RPS, 1.3)
		target(c, "256 keys x bare", at[pathManyKeys][c].wrk.RPS/bare.wrk.RPS, 0.80)
		target(c, "10000 keys x bare", at[pathMoreKeys][c].wrk.RPS/bare.wrk.RPS, 0.70)
		target(c, "TOKEN_BUCKET rule x bare", at[pathRule][c].wrk.RPS/bare.wrk.RPS, 0.80)
		target(c, "cache miss x bare", at[pathMiss][c].wrk.RPS/bare.wrk.RPS, 0.80)
		if cn, ok := at[pathClusterNaive][c]; ok {
			target(c, "cluster: tollgate x naive on the cluster", at[pathClusterTG][c].wrk.RPS/cn.wrk.RPS, 1.3)
		}
		if tg.cpuUS > 0 {
			checks = append(checks, check{fmt.Sprintf("%d conns: one hot key CPU per request x bare %.2f <= 1.15", c, tg.cpuUS/bare.cpuUS),
				tg.cpuUS <= 1.15*bare.cpuUS})
		}
	}
	tw.flush()
	fmt.Fprintln(w, "targets:")
	for _, c := range checks {
		fmt.Fprintf(w, "  %-66s %s\n", c.what, verdict(c.ok))
	}
}

// rps formats a run's req/s.
func rps(x row) string { return fmt.Sprintf("%.0f", x.wrk.RPS) }

// printBest prints each path's best rate over the concurrency levels
// against the bare proxy's best, with the targets.
func (r *report) printBest(w io.Writer) {
	best, cpu, runs := map[string]float64{}, map[string]float64{}, map[string]float64{}
	for _, x := range r.rows {
		best[x.path] = max(best[x.path], x.wrk.RPS)
		cpu[x.path] += x.cpuUS
		runs[x.path]++
	}
	fmt.Fprintln(w, "\nsaturation (best req/s over the levels) against the bare proxy's best; and the CPU ratio,")
	fmt.Fprintln(w, "bare proxy's CPU per request (all processes but wrk, mean over the levels) over the path's,")
	fmt.Fprintln(w, "which other work on the machine disturbs less:")
	for _, t := range []struct {
		path   string
		target float64
	}{{pathCached, 1.3}, {pathRefused, 2}} {
		got := best[t.path] / best[pathBare]
		byCPU := (cpu[pathBare] / runs[pathBare]) / (cpu[t.path] / runs[t.path])
		fmt.Fprintf(w, "  %-28s %8.0f req/s  %5.2fx  CPU %4.0f µs/req %5.2fx  (target >= %.2fx: %s)\n",
			t.path, best[t.path], got, cpu[t.path]/runs[t.path], byCPU, t.target, verdict(got >= t.target))
	}
}

// printLatency prints the fixed-rate runs and the p99 each path adds to
// the bare proxy's.
func (r *report) printLatency(w io.Writer) {
	if len(r.latency) == 0 {
		return
	}
	fmt.Fprintf(w, "\nlatency at a fixed rate of half of tollgate's own saturation (the uncached path's best; %.0f req/s offered, open loop, latency from each request's due time):\n", r.halfRate)
	base := r.latency[0].wrk.P99
	for _, x := range r.latency {
		added := x.wrk.P99 - base
		fmt.Fprintf(w, "  %-24s %8.0f req/s  p50 %s  p99 %s  added p99 %s", x.path, x.wrk.RPS, ms(x.wrk.P50), ms(x.wrk.P99), ms(added))
		if x.path != pathBare && x.path != pathNaive {
			fmt.Fprintf(w, "  (target <= 1ms: %s)", verdict(added <= time.Millisecond))
		}
		fmt.Fprintln(w)
	}
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func ratio(v, base float64) string {
	if base == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", v/base)
}

// ms formats d in milliseconds with two decimals.
func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }
