package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redisurl"
)

// server is one Redis deployment the runs use: its URL, a client, and a
// client per primary (for INFO).
type server struct {
	url     string
	rdb     redis.UniversalClient
	masters []*redis.Client
}

// openCluster connects to the cluster at url and to each of its masters.
func openCluster(ctx context.Context, url string) (*server, error) {
	u, err := redisurl.Open(url)
	if err != nil {
		return nil, err
	}
	cc, ok := u.(*redis.ClusterClient)
	if !ok {
		return nil, fmt.Errorf("%s is not a redis-cluster:// URL", url)
	}
	s := &server{url: url, rdb: cc}
	err = cc.ForEachMaster(ctx, func(_ context.Context, m *redis.Client) error {
		s.masters = append(s.masters, redis.NewClient(&redis.Options{Addr: m.Options().Addr}))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w (scripts/cluster.sh starts one)", url, err)
	}
	return s, nil
}

// startPrimary starts a redis-server on a free loopback port (no
// persistence, noeviction, as a limiter Redis runs) and returns it with a
// function that stops it.
func startPrimary(ctx context.Context) (*server, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	_, port, _ := net.SplitHostPort(addr)
	dir, err := os.MkdirTemp("", "tollgate-scale-")
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command("redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--maxmemory-policy", "noeviction", "--dir", dir)
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start redis-server: %w", err)
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); _ = os.RemoveAll(dir) }
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	for deadline := time.Now().Add(10 * time.Second); c.Ping(ctx).Err() != nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			stop()
			return nil, nil, fmt.Errorf("redis-server on %s does not answer", addr)
		}
	}
	return &server{url: "redis://" + addr + "/0", rdb: c, masters: []*redis.Client{c}}, stop, nil
}

// close deletes every key under prefix (on every master) and closes the
// clients.
func (s *server) close(prefix string) {
	ctx := context.Background()
	for _, m := range s.masters {
		iter := m.Scan(ctx, 0, prefix+"*", 5000).Iterator()
		pipe := m.Pipeline() // one UNLINK per key: a multi-key UNLINK would cross slots
		for iter.Next(ctx) {
			if pipe.Unlink(ctx, iter.Val()); pipe.Len() == 5000 {
				_, _ = pipe.Exec(ctx)
			}
		}
		_, _ = pipe.Exec(ctx)
		_ = m.Close()
	}
	_ = s.rdb.Close()
}

// info sums the numeric field name of INFO section over the masters.
func (s *server) info(ctx context.Context, section, name string) float64 {
	var sum float64
	for _, m := range s.masters {
		text, err := m.Info(ctx, section).Result()
		if err != nil {
			continue
		}
		for line := range strings.Lines(text) {
			if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && k == name {
				f, _ := strconv.ParseFloat(v, 64)
				sum += f
			}
		}
	}
	return sum
}

// cpu returns the Redis CPU seconds (user + sys) used so far, summed over
// the masters.
func (s *server) cpu(ctx context.Context) float64 {
	return s.info(ctx, "cpu", "used_cpu_user") + s.info(ctx, "cpu", "used_cpu_sys")
}

// machine describes this machine.
func machine() string {
	return fmt.Sprintf("%d CPUs, %s %s/%s", runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
