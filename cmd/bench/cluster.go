package main

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterMasters is the number of masters of the bench's Redis Cluster.
const clusterMasters = 3

// startCluster runs the bench's own Redis Cluster: clusterMasters
// redis-servers on free ports (bus ports chosen free too), no replicas, no
// persistence, joined by redis-cli --cluster create; it returns their
// addresses once every node reports cluster_state:ok, and keeps a client
// per node in s.crdbs for the Redis counters.
func (s *stack) startCluster(ctx context.Context) ([]string, error) {
	var addrs []string
	for i := range clusterMasters {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		bus, err := freeAddr()
		if err != nil {
			return nil, err
		}
		label := fmt.Sprintf("cluster%d", i)
		if err := s.procs.start(label, s.opts.redisServer, nil, "--port", portOf(addr), "--bind", "127.0.0.1",
			"--cluster-enabled", "yes", "--cluster-port", portOf(bus),
			"--cluster-config-file", filepath.Join(s.dir, label+"-nodes.conf"), "--dir", s.dir,
			"--save", "", "--appendonly", "no", "--maxmemory-policy", "noeviction"); err != nil {
			return nil, err
		}
		if err := waitTCP(ctx, addr); err != nil {
			return nil, err
		}
		addrs = append(addrs, addr)
		s.crdbs = append(s.crdbs, redis.NewClient(&redis.Options{Addr: addr}))
	}
	args := append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, s.opts.redisCLI, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("redis-cli %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, c := range s.crdbs {
		for {
			info, err := c.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("the bench's Redis Cluster is not ok after 20 s: %v %q", err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return addrs, nil
}

// startClusterSide runs what the cluster rows load: a second admin node
// (the same database, publishing to the cluster), a gateway node on the
// cluster and the naive peer on the cluster. The config is the one setup
// made; the admin publishes it when it finds the cluster empty.
func (s *stack) startClusterSide(ctx context.Context, env []string) error {
	addrs, err := s.startCluster(ctx)
	if err != nil {
		return err
	}
	env = append(env[:len(env):len(env)], "TOLLGATE_REDIS_URL=redis-cluster://"+strings.Join(addrs, ","))
	tollgate := filepath.Join(s.opts.bin, "tollgate")
	if _, err := s.startTollgate(ctx, "admin-cluster", tollgate, env); err != nil {
		return err
	}
	metrics, err := freeAddr()
	if err != nil {
		return err
	}
	if s.clusterGateway, err = s.startTollgate(ctx, "gateway-cluster", tollgate, append(env, "TOLLGATE_METRICS_ADDR="+metrics)); err != nil {
		return err
	}
	s.clusterMetrics = metrics
	main := s.fix
	main.probeKey = main.mainKey
	for try := 0; ; try++ { // the admin publishes the whole config first
		_, err := waitEnforced(ctx, []string{s.clusterGateway}, main, http.StatusOK, time.Now())
		if err == nil {
			break
		}
		if try == 5 {
			return fmt.Errorf("the gateway on Redis Cluster does not serve the bench API: %w", err)
		}
	}
	args := naiveArgs(s.upstream, "", s.fix)
	args = append(args, "-cluster", strings.Join(addrs, ","))
	s.clusterNaive, err = s.startHTTP(ctx, "naive-cluster", filepath.Join(s.opts.bin, "naiveproxy"), args, s.fix.mainKey)
	return err
}
