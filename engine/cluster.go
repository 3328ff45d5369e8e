package engine

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// cluster decides batches on Redis Cluster.
type cluster struct {
	e   *Engine
	rdb *redis.ClusterClient
}

func newCluster(e *Engine, rdb *redis.ClusterClient) *cluster { return &cluster{e: e, rdb: rdb} }

func (cl *cluster) decide(ctx context.Context, live []*call) {
	for _, c := range live {
		c.answer(nil, errors.New("redis cluster not supported yet"))
	}
}
