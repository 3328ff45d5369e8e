package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Paths of the report, in the order they run at each concurrency level.
const (
	pathBare         = "bare proxy"
	pathNaive        = "naive EVALSHA proxy"
	pathUncached     = "gateway uncached"
	pathSettled      = "gateway settled cost"
	pathManyKeys     = "gateway uncached, 256 keys"
	pathMoreKeys     = "gateway uncached, 10000 keys"
	pathRule         = "gateway TOKEN_BUCKET rule"
	pathMiss         = "gateway cache miss"
	pathCached       = "gateway cache hit"
	pathRefused      = "gateway over-limit 429"
	pathClusterNaive = "cluster: naive EVALSHA proxy"
	pathClusterTG    = "cluster: gateway uncached"
)

// The processes whose CPU a row counts: those of its side (all but wrk,
// the admin nodes and the idle gateway node). The other side's are left
// out: the idle cluster nodes' housekeeping is not a single Redis path's
// cost.
var (
	singleCPU  = []string{"gateway0", "proxy", "naive", "redis", "upstream"}
	clusterCPU = []string{"gateway-cluster", "naive-cluster", "cluster0", "cluster1", "cluster2", "upstream"}
)

// row is one wrk run of the report.
type row struct {
	path  string
	conns int
	wrk   wrkResult
	redis redisPerRequest
	cpu   string  // CPU µs per request by process
	cpuUS float64 // their sum
	// allocs is the heap allocations of the gateway node per request
	// (go_memstats_mallocs_total; 0 for the bare proxy and the peers)
	allocs float64
	// rtPerAdmitted is the Redis round trips per admitted (2xx) request.
	rtPerAdmitted float64
	// failOpen is how many requests gateway0 admitted without a limiter
	// decision (tollgate_limiter_errors_total: Redis did not answer within
	// TOLLGATE_REDIS_TIMEOUT); such requests did less than the full work.
	failOpen int64
}

// report is everything bench prints.
type report struct {
	machine      string
	duration     time.Duration
	rounds       int // runs per path and level; the best is reported
	redisTimeout time.Duration
	cacheHit     string // X-Cache of the second call to /cached
	cluster      bool   // the cluster rows ran
	rows         []row
	halfRate     float64 // offered rate of the latency runs (half the uncached path's saturation)
	latency      []row   // the runs at halfRate
	load         string  // the machine's load average before the runs (/proc/loadavg)
	push         pushResult
}

// loads returns the wrk target of each path, with the Redis it counts and
// the gateway node whose metrics it reads.
func (s *stack) loads() map[string]load {
	host := s.fix.apiID + ".execute-api.localhost"
	gw := "http://" + s.gateways[0] + "/" + stageName
	one := []*redis.Client{s.rdb}
	m := map[string]load{
		pathBare:     {url: "http://" + s.proxy + "/uncached", redis: one},
		pathNaive:    {url: "http://" + s.naive + "/uncached", key: s.fix.mainKey, redis: one},
		pathUncached: {url: gw + "/uncached", host: host, key: s.fix.mainKey, redis: one, metrics: s.metrics},
		pathSettled:  {url: gw + "/uncached", host: host, key: s.fix.settledKey, redis: one, metrics: s.metrics},
		pathManyKeys: {url: gw + "/uncached", host: host, keys: s.fix.manyKeys, redis: one, metrics: s.metrics},
		pathMoreKeys: {url: gw + "/uncached", host: host, keys: s.fix.moreKeys, redis: one, metrics: s.metrics},
		pathRule:     {url: gw + "/ruled", host: host, key: s.fix.mainKey, redis: one, metrics: s.metrics},
		pathMiss:     {url: gw + "/miss", host: host, key: s.fix.mainKey, missQuery: "n", redis: one, metrics: s.metrics},
		pathCached:   {url: gw + "/cached", host: host, key: s.fix.mainKey, redis: one, metrics: s.metrics},
		pathRefused:  {url: gw + "/uncached", host: host, key: s.fix.overKey, redis: one, metrics: s.metrics},
	}
	if s.clusterGateway != "" {
		m[pathClusterNaive] = load{url: "http://" + s.clusterNaive + "/uncached", key: s.fix.mainKey, redis: s.crdbs}
		m[pathClusterTG] = load{url: "http://" + s.clusterGateway + "/" + stageName + "/uncached", host: host, key: s.fix.mainKey,
			redis: s.crdbs, metrics: s.clusterMetrics}
	}
	return m
}

// order returns the paths in the order they run at each level.
func (s *stack) order() []string {
	o := []string{pathBare, pathNaive, pathUncached, pathSettled, pathManyKeys, pathMoreKeys, pathRule, pathMiss, pathCached, pathRefused}
	if s.clusterGateway != "" {
		o = append(o, pathClusterNaive, pathClusterTG)
	}
	return o
}

// measure runs every load, the latency runs and the push latency.
func (s *stack) measure(ctx context.Context) (*report, error) {
	rep := &report{machine: machine(ctx, s), duration: s.opts.duration, rounds: s.opts.rounds, redisTimeout: s.opts.redisTimeout,
		load: loadAverage(), cluster: s.clusterGateway != ""}
	rep.cacheHit = s.cacheCheck(ctx)
	loads := s.loads()
	order := s.order()
	for _, p := range order { // warm connections, key caches and the cache entry
		if _, err := runWrk(ctx, s.opts.wrk, s.dir, loads[p], 16, time.Second, 0); err != nil {
			return nil, err
		}
	}
	for ci, c := range s.opts.conns {
		best := make([]row, len(order))
		for round := range s.opts.rounds {
			for i, p := range order {
				var prof chan error
				if s.opts.pprof != "" && round == 0 && ci == 0 && loads[p].metrics != "" {
					prof = make(chan error, 1)
					go func() { prof <- s.profile(ctx, p, loads[p].metrics) }()
				}
				r, err := s.loadRow(ctx, p, loads[p], c, s.opts.duration, 0)
				if prof != nil {
					if perr := <-prof; perr != nil && err == nil {
						err = fmt.Errorf("profile %s: %w", p, perr)
					}
				}
				if err != nil {
					return nil, err
				}
				if r.wrk.RPS > best[i].wrk.RPS {
					best[i] = r
				}
			}
		}
		rep.rows = append(rep.rows, best...)
	}
	if err := s.measureLatency(ctx, rep, loads); err != nil {
		return nil, err
	}
	push, err := measurePush(ctx, s.sdk, s.fix, s.gateways, s.opts.changes)
	if err != nil {
		return nil, fmt.Errorf("push latency: %w", err)
	}
	rep.push = push
	return rep, nil
}

// profileName is the file of path's profile: its words joined by '-'
// ("gateway-uncached-many-keys.pprof").
func profileName(path string) string {
	return strings.Join(strings.FieldsFunc(path, func(r rune) bool { return r == ' ' || r == ',' }), "-") + ".pprof"
}

// profile writes a CPU profile of the gateway node serving metrics at
// addr over the next run (the run's length less a second) to
// <opts.pprof>/profileName(path).
func (s *stack) profile(ctx context.Context, path, addr string) error {
	secs := max(1, int((s.opts.duration - time.Second).Seconds()))
	u := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, secs)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", u, res.Status)
	}
	if err := os.MkdirAll(s.opts.pprof, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(s.opts.pprof, profileName(path)))
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, res.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// loadRow runs one load and reads the Redis counters around it: wrk with
// conns connections, or, when rate > 0, the fixed-rate load (runRate).
func (s *stack) loadRow(ctx context.Context, path string, l load, conns int, d time.Duration, rate float64) (row, error) {
	before, err := readCounters(ctx, l.redis)
	if err != nil {
		return row{}, err
	}
	cpuBefore := s.procs.cpuTimes()
	gwBefore := gatewayCounters(ctx, l.metrics)
	var w wrkResult
	if rate > 0 {
		w, err = runRate(ctx, l, rate, d)
	} else {
		w, err = runWrk(ctx, s.opts.wrk, s.dir, l, conns, d, 0)
	}
	if err != nil {
		return row{}, err
	}
	cpuAfter := s.procs.cpuTimes()
	gwAfter := gatewayCounters(ctx, l.metrics)
	after, err := readCounters(ctx, l.redis)
	if err != nil {
		return row{}, err
	}
	labels := singleCPU
	if len(l.redis) > 1 {
		labels = clusterCPU
	}
	cpu, cpuUS := cpuPerRequest(cpuBefore, cpuAfter, w.Requests, labels)
	r := row{path: path, conns: conns, wrk: w, redis: perRequest(before, after, w.Requests), cpu: cpu, cpuUS: cpuUS,
		failOpen: gwAfter.limiterErrors - gwBefore.limiterErrors}
	if l.metrics != "" {
		r.allocs = float64(gwAfter.mallocs-gwBefore.mallocs) / float64(w.Requests)
	}
	if admitted := w.Requests - w.Non2xx; admitted > 0 {
		r.rtPerAdmitted = float64(after.reads-before.reads) / float64(admitted)
	}
	return r, nil
}

// loadAverage returns the first three fields of /proc/loadavg ("" when it
// cannot be read).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// measureLatency offers half of tollgate's own saturation (the uncached
// path's best rate over the levels), at a fixed rate (runRate), to the bare
// proxy, the naive peer, the uncached and the cache-hit paths, and records
// their latencies: what the gateway adds at a rate it serves with room to
// spare, against the bare proxy at that same rate.
func (s *stack) measureLatency(ctx context.Context, rep *report, loads map[string]load) error {
	var sat float64
	for _, r := range rep.rows {
		if r.path == pathUncached {
			sat = max(sat, r.wrk.RPS)
		}
	}
	rep.halfRate = sat / 2
	for _, p := range []string{pathBare, pathNaive, pathUncached, pathCached} {
		r, err := s.loadRow(ctx, p, loads[p], 0, s.opts.duration, rep.halfRate)
		if err != nil {
			return err
		}
		rep.latency = append(rep.latency, r)
	}
	return nil
}

// cacheCheck calls GET /cached until it answers X-Cache: Hit (the entry
// of the first call may be stored after its response), at most 20 times
// 50 ms apart, and returns the last X-Cache value ("" when the gateway
// sends none: the cache is not wired).
func (s *stack) cacheCheck(ctx context.Context) string {
	l := s.loads()[pathCached]
	var got string
	for range 20 {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.url, nil)
		if err != nil {
			return ""
		}
		req.Host = l.host
		req.Header.Set("x-api-key", l.key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return ""
		}
		_ = res.Body.Close()
		if got = res.Header.Get("X-Cache"); got == "Hit" || got == "" {
			return got
		}
		time.Sleep(50 * time.Millisecond)
	}
	return got
}

// gwCounters are the counters of a gateway node's metrics a row reads.
type gwCounters struct {
	limiterErrors int64 // tollgate_limiter_errors_total
	mallocs       int64 // go_memstats_mallocs_total: heap allocations so far
}

// gatewayCounters reads the metrics at addr (zero when addr is "" or they
// cannot be read).
func gatewayCounters(ctx context.Context, addr string) gwCounters {
	if addr == "" {
		return gwCounters{}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return gwCounters{}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return gwCounters{}
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return gwCounters{}
	}
	return gwCounters{limiterErrors: metricValue(string(body), "tollgate_limiter_errors_total"),
		mallocs: metricValue(string(body), "go_memstats_mallocs_total")}
}

// metricValue returns the value of an unlabelled metric in Prometheus
// text format, 0 when absent.
func metricValue(text, name string) int64 {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int64(f)
		}
	}
	return 0
}
