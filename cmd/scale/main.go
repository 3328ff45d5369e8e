// Command scale produces the figures of docs/scale.md from real runs on
// this machine: exactness with four gateway nodes on one Redis Cluster,
// gateway memory and key-lookup latency with a thousand and with a
// million API keys, and decision throughput on the cluster side by side
// with one primary in the same run.
//
// The gateway nodes run in this process, each a gateway.Server over HTTP
// (httptest, loopback) with its own engine, its own Redis clients and its
// own key cache (push.Reader), as separate processes would have them; key
// records are written straight into Redis by push.LoadKeyRecords (no
// admin, no PostgreSQL). The primary is a redis-server this command starts
// on a free port and stops at the end; the cluster is the one
// scripts/cluster.sh starts. Everything it writes is under a fresh key
// prefix, deleted at the end.
//
//	scale [-cluster redis-cluster://127.0.0.1:7101,...] [-keys 1000000] [-quota 2000]
//	      [-shared 3000] [-duration 3s] [-callers 32]
package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// options are the command's flags.
type options struct {
	cluster  string
	keys     int
	quota    int
	shared   int
	duration time.Duration
	callers  int
}

func main() {
	var o options
	flag.StringVar(&o.cluster, "cluster", envOr("TOLLGATE_TEST_REDIS_CLUSTER_URL", "redis-cluster://127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103"), "Redis Cluster URL (scripts/cluster.sh starts one)")
	flag.IntVar(&o.keys, "keys", 1_000_000, "API keys loaded for the memory and lookup figures")
	flag.IntVar(&o.quota, "quota", 2000, "quota of the hot key in the four-node run")
	flag.IntVar(&o.shared, "shared", 3000, "burst of the shared stage bucket in the four-node run")
	flag.DurationVar(&o.duration, "duration", 3*time.Second, "length of each throughput run")
	flag.IntVar(&o.callers, "callers", 32, "concurrent callers of each throughput run")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	prefix := "scale" + rand.Text()[:8]
	cl, err := openCluster(ctx, o.cluster)
	if err != nil {
		return err
	}
	defer cl.close(prefix)
	primary, stopPrimary, err := startPrimary(ctx)
	if err != nil {
		return err
	}
	defer stopPrimary()
	fmt.Printf("machine: %s\ncluster: %s (%d masters); primary: %s (its own redis-server)\n\n", machine(), o.cluster, len(cl.masters), primary.url)
	if err := fourNodes(ctx, o, cl, prefix); err != nil {
		return fmt.Errorf("four nodes: %w", err)
	}
	if err := manyKeys(ctx, o, cl, prefix); err != nil {
		return fmt.Errorf("many keys: %w", err)
	}
	if err := throughput(ctx, o, cl, primary, prefix); err != nil {
		return fmt.Errorf("throughput: %w", err)
	}
	return nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
