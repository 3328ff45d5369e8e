// Package redistest gives each test its own keyspace on the real Redis
// server that tests run against (TOLLGATE_TEST_REDIS_URL, default
// redis://127.0.0.1:6379/0) and on the real Redis Cluster
// (TOLLGATE_TEST_REDIS_CLUSTER_URL, see ClusterURL), and starts private
// servers for fault tests (MustServer). Tests never FLUSHDB: each gets a unique key
// prefix and its keys are deleted at cleanup, so tests may run in parallel.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redisurl"
)

// URL returns the Redis URL tests use.
func URL() string {
	if u := os.Getenv("TOLLGATE_TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// MustClient returns a client of the test Redis and a fresh key prefix
// ("t" + 12 hex characters) to use instead of "tg". It fails the test when
// Redis does not answer (a missing service never skips). At cleanup it
// deletes every key under the prefix and closes the client.
func MustClient(tb testing.TB) (*redis.Client, string) {
	tb.Helper()
	opt, err := redis.ParseURL(URL())
	if err != nil {
		tb.Fatalf("redistest: parse %s: %v", URL(), err)
	}
	opt.ContextTimeoutEnabled = true // as production clients (cmd/tollgate)
	c := redis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		tb.Fatalf("redistest: Redis at %s does not answer: %v", URL(), err)
	}
	prefix := MustPrefix(tb)
	tb.Cleanup(func() {
		DeletePrefix(context.Background(), c, prefix)
		_ = c.Close()
	})
	return c, prefix
}

// MustPrefix returns a fresh unique key prefix.
func MustPrefix(tb testing.TB) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "t" + hex.EncodeToString(b[:])
}

// DeletePrefix deletes every key that starts with prefix + ":", one
// UNLINK per key in pipelines (on a Redis Cluster node a multi-key UNLINK
// would cross slots).
func DeletePrefix(ctx context.Context, c *redis.Client, prefix string) {
	iter := c.Scan(ctx, 0, prefix+":*", 1000).Iterator()
	pipe := c.Pipeline()
	for iter.Next(ctx) {
		pipe.Unlink(ctx, iter.Val())
		if pipe.Len() == 500 {
			_, _ = pipe.Exec(ctx)
		}
	}
	_, _ = pipe.Exec(ctx)
}

// MustServer starts a redis-server of the test's own on a free loopback
// port, with no persistence and the extra arguments (e.g. "--maxmemory",
// "4mb"), and returns its address ("127.0.0.1:port") and a client of it;
// both are stopped at cleanup. For fault tests that stop, flush or
// reconfigure a server: never the shared one.
func MustServer(tb testing.TB, args ...string) (string, *redis.Client) {
	tb.Helper()
	port := FreePort(tb)
	addr := net.JoinHostPort("127.0.0.1", port)
	cmd := exec.Command("redis-server", append([]string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", tb.TempDir()}, args...)...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		tb.Fatalf("redistest: start redis-server: %v", err)
	}
	tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	tb.Cleanup(func() { _ = c.Close() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if c.Ping(context.Background()).Err() == nil {
			return addr, c
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: redis-server on %s did not answer: %s", addr, out.String())
		}
	}
}

// ClusterURL returns the Redis Cluster URL tests use
// (TOLLGATE_TEST_REDIS_CLUSTER_URL; default the three masters that
// scripts/cluster.sh starts, which `make test` runs first).
func ClusterURL() string {
	if u := os.Getenv("TOLLGATE_TEST_REDIS_CLUSTER_URL"); u != "" {
		return u
	}
	return "redis-cluster://127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103"
}

// MustCluster returns a client of the test Redis Cluster and a fresh key
// prefix, as MustClient. It fails the test when the cluster does not
// answer or is not ok (a missing service never skips). At cleanup it
// deletes every key under the prefix on every master and closes the
// client.
func MustCluster(tb testing.TB) (*redis.ClusterClient, string) {
	tb.Helper()
	u, err := redisurl.Open(ClusterURL())
	if err != nil {
		tb.Fatalf("redistest: %s: %v", ClusterURL(), err)
	}
	c, ok := u.(*redis.ClusterClient)
	if !ok {
		tb.Fatalf("redistest: %s is not a redis-cluster:// URL", ClusterURL())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := c.ClusterInfo(ctx).Result()
	if err != nil || !strings.Contains(info, "cluster_state:ok") {
		tb.Fatalf("redistest: Redis Cluster at %s does not answer or is not ok (run scripts/cluster.sh): %v %s", ClusterURL(), err, info)
	}
	prefix := MustPrefix(tb)
	tb.Cleanup(func() {
		_ = c.ForEachMaster(context.Background(), func(ctx context.Context, m *redis.Client) error {
			DeletePrefix(ctx, m, prefix)
			return nil
		})
		_ = c.Close()
	})
	return c, prefix
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("redistest: find a free port: %v", err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// MustClusterServer starts a Redis Cluster of the test's own: masters
// redis-servers in cluster mode (MustServer with the extra arguments args,
// each with a free cluster bus port) that share the 16384 slots in equal
// ranges, and returns a cluster client of it and a client of each master
// (all closed at cleanup). For fault tests on the Redis Cluster path that
// flush or reconfigure a master: never the shared cluster.
func MustClusterServer(tb testing.TB, masters int, args ...string) (*redis.ClusterClient, []*redis.Client) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	addrs := make([]string, masters)
	nodes := make([]*redis.Client, masters)
	bus := make([]string, masters) // cluster bus ports
	for i := range masters {
		bus[i] = FreePort(tb)
		addrs[i], nodes[i] = MustServer(tb, append([]string{"--cluster-enabled", "yes", "--cluster-port", bus[i],
			"--cluster-config-file", "nodes.conf"}, args...)...)
		first, last := i*16384/masters, (i+1)*16384/masters-1
		if err := nodes[i].Do(ctx, "cluster", "addslotsrange", first, last).Err(); err != nil {
			tb.Fatalf("redistest: CLUSTER ADDSLOTSRANGE %d %d on %s: %v", first, last, addrs[i], err)
		}
		if i > 0 {
			host, port, _ := net.SplitHostPort(addrs[0])
			if err := nodes[i].Do(ctx, "cluster", "meet", host, port, bus[0]).Err(); err != nil {
				tb.Fatalf("redistest: CLUSTER MEET from %s: %v", addrs[i], err)
			}
		}
	}
	want := fmt.Sprintf("cluster_known_nodes:%d", masters)
	for _, n := range nodes {
		for {
			info, err := n.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, want) {
				break
			}
			if ctx.Err() != nil {
				tb.Fatalf("redistest: the cluster of %v is not ok: %v %s", addrs, err, info)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ContextTimeoutEnabled: true})
	tb.Cleanup(func() { _ = c.Close() })
	return c, nodes
}
