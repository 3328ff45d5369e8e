package gateway

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redistest"
	"tollgate/plans"
)

// tripCounter is a go-redis hook counting single commands and pipelines
// sent (round trips). The cache store's memory guard (INFO memory, at most
// every 2 s in the background, not per request) is left out.
type tripCounter struct{ cmds, pipes, piped atomic.Int64 } // piped: commands in pipelines

func (c *tripCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *tripCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() != "info" {
			c.cmds.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (c *tripCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.pipes.Add(1)
		c.piped.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// TestCacheOneRoundTripPerServer: a hit costs one pipeline on the limiter
// Redis (decision and generation, plus the entry when the cache shares
// it) and, with a cache Redis of its own, one pipeline there; nothing else.
func TestCacheOneRoundTripPerServer(t *testing.T) {
	for _, separate := range []bool{false, true} {
		t.Run(map[bool]string{false: "shared", true: "separate"}[separate], func(t *testing.T) {
			u := newUpstream(t)
			env := newCacheEnv(t)
			var lim, cch tripCounter
			env.rdb.AddHook(&lim)
			var cacheRDB redis.UniversalClient
			if separate {
				c, _ := redistest.MustClient(t)
				c.AddHook(&cch)
				cacheRDB = c
			}
			tg := env.gateway(t, cacheSnapshot(cachedStage(map[string]plans.MethodSetting{"*/*": caching(300)}), nil,
				res{"/items", methods(keyedProxy(u, "/items"), "GET")}), cacheRDB)
			tg.get(t, "/prod/items") // fill
			lim.cmds.Store(0)
			lim.pipes.Store(0)
			cch.cmds.Store(0)
			cch.pipes.Store(0)
			want(t, "hit", tg.get(t, "/prod/items"), 200, "Hit", "")
			if c, p := lim.cmds.Load(), lim.pipes.Load(); c != 0 || p != 1 {
				t.Errorf("limiter Redis: got %d commands and %d pipelines, want 0 and 1", c, p)
			}
			wantPipes := int64(0)
			if separate {
				wantPipes = 1
			}
			if c, p := cch.cmds.Load(), cch.pipes.Load(); c != 0 || p != wantPipes {
				t.Errorf("cache Redis: got %d commands and %d pipelines, want 0 and %d", c, p, wantPipes)
			}
		})
	}
}
