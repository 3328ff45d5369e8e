// Command bench measures tollgate against the fastest bare Go reverse
// proxy we could build (the ceiling, cmd/bareproxy) and against the design
// a Go team would build instead (the naive peer, cmd/naiveproxy: the same
// proxy plus one EVALSHA per request), side by side in one run, on
// loopback (make bench; see docs/benchmarks.md).
//
// It starts its own redis-server on a free port (so Redis counters belong
// to the bench alone), a fresh PostgreSQL database, the upstream (a fixed
// 200-byte answer: bareproxy -fixed), the bare proxy, the naive peer, one
// tollgate admin node and two gateway nodes; configures an API through the
// admin API with the AWS SDK; then loads each path with wrk at a few
// concurrency levels and prints requests/s, p50/p99 latency, the ratios
// tollgate/bare, naive/bare and tollgate/naive and the Redis round trips
// per admitted request, the p99 each path adds at a fixed rate of half of
// tollgate's own saturation, and the config push latency over many changes.
// Everything it started is stopped and the database dropped at the end.
//
//	bench [-bin bin] [-wrk wrk] [-duration 3s] [-rounds 2] [-conns 8,32,128] [-changes 100]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// options are the bench's flags.
type options struct {
	bin, wrk, redisServer, redisCLI string
	postgresURL                     string
	duration, redisTimeout          time.Duration
	conns                           []int
	changes, rounds                 int
	logLevel                        string
	keep                            bool
	cluster                         bool   // the Redis Cluster rows
	pprof                           string // directory for gateway0's CPU profiles; "" for none
}

func main() {
	opts, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, opts, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&o.bin, "bin", "bin", "directory holding the tollgate, bareproxy and naiveproxy binaries")
	fs.StringVar(&o.wrk, "wrk", "wrk", "wrk binary")
	fs.StringVar(&o.redisServer, "redis-server", "redis-server", "redis-server binary (the bench runs its own instances)")
	fs.StringVar(&o.redisCLI, "redis-cli", "redis-cli", "redis-cli binary (joins the bench's Redis Cluster)")
	fs.BoolVar(&o.cluster, "cluster", true, "also run tollgate and the naive peer on the bench's own three-master Redis Cluster (the cluster rows)")
	fs.StringVar(&o.postgresURL, "postgres", envOr("TOLLGATE_BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"),
		"PostgreSQL URL of a maintenance database; the bench creates and drops its own database there")
	fs.DurationVar(&o.duration, "duration", 3*time.Second, "length of each wrk run")
	fs.DurationVar(&o.redisTimeout, "redis-timeout", 50*time.Millisecond, "TOLLGATE_REDIS_TIMEOUT of the gateways, by default the production default (decisions that fail open skip the measured work and show in the fail-open column)")
	conns := fs.String("conns", "8,32,128", "comma-separated wrk connection counts")
	fs.IntVar(&o.changes, "changes", 100, "config changes for the push latency measurement")
	fs.IntVar(&o.rounds, "rounds", 2, "rounds over the paths at each level; each path's best run is reported (the machine may be busy with other work)")
	fs.StringVar(&o.logLevel, "log-level", "info", "tollgate log level (info writes the access log, as in production)")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary directory with the process logs")
	fs.StringVar(&o.pprof, "pprof", "", "write a CPU profile of gateway0 during each gateway path's first run at the first -conns level into this directory (<path>.pprof; go tool pprof reads them)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.rounds < 1 {
		return o, fmt.Errorf("-rounds: got %d, want at least 1", o.rounds)
	}
	for _, s := range strings.Split(*conns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return o, fmt.Errorf("-conns: %q is not a positive number", s)
		}
		o.conns = append(o.conns, n)
	}
	return o, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
