// Command naiveproxy is the benchmark's peer (make bench,
// docs/benchmarks.md): the design a Go team would build instead of tollgate,
// the bare proxy of cmd/bareproxy behind one EVALSHA per request of a
// small script deciding three token buckets and a monthly quota
// (naive.go), with go-redis. Keys are given on the command
// line; limits default to the bench's configuration. No access log.
// With -cluster it decides on a Redis Cluster the way such a team would:
// the script's keys share one hash tag, so every decision runs on the
// master that owns that slot.
//
//	naiveproxy -addr 127.0.0.1:8082 -upstream http://127.0.0.1:8080 -redis 127.0.0.1:6379 -keys k1,k2
//	naiveproxy -cluster 127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103 -keys k1,k2
package main

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/benchproxy"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8082", "listen address")
	upstream := flag.String("upstream", "http://127.0.0.1:8080", "upstream URL (scheme and host)")
	redisAddr := flag.String("redis", "127.0.0.1:6379", "Redis address")
	cluster := flag.String("cluster", "", "comma-separated Redis Cluster node addresses (instead of -redis)")
	keys := flag.String("keys", "", "comma-separated API keys (x-api-key) to admit")
	conns := flag.Int("conns", 1024, "concurrent requests to keep upstream and Redis connections for")
	var l limits
	flag.Float64Var(&l.PlanRate, "plan-rate", 1e6, "plan bucket rate (tokens/s)")
	flag.Float64Var(&l.PlanBurst, "plan-burst", 1e6, "plan bucket burst")
	flag.Float64Var(&l.StageRate, "stage-rate", 1e6, "stage method bucket rate")
	flag.Float64Var(&l.StageBurst, "stage-burst", 5e5, "stage method bucket burst")
	flag.Float64Var(&l.AccountRate, "account-rate", 1e6, "account bucket rate")
	flag.Float64Var(&l.AccountBurst, "account-burst", 1e6, "account bucket burst")
	flag.Int64Var(&l.Quota, "quota", 2_000_000_000, "monthly quota per key")
	flag.Parse()
	u, err := url.Parse(*upstream)
	if err != nil || u.Host == "" {
		fmt.Fprintf(os.Stderr, "naiveproxy: -upstream %q: want http://host:port\n", *upstream)
		os.Exit(2)
	}
	var rdb redis.UniversalClient
	tag := ""
	if *cluster != "" {
		rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(*cluster, ","), PoolSize: *conns, MinIdleConns: 8})
		tag = "{naive}"
	} else {
		rdb = redis.NewClient(&redis.Options{Addr: *redisAddr, PoolSize: *conns, MinIdleConns: 8})
	}
	defer rdb.Close()
	h := newNaive(rdb, tag, strings.Split(*keys, ","), l, benchproxy.New(u, *conns))
	if err := benchproxy.Serve(*addr, h); err != nil {
		fmt.Fprintln(os.Stderr, "naiveproxy:", err)
		os.Exit(1)
	}
}
