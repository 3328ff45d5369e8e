// Package redisscript loads Lua scripts on every primary a go-redis client
// reaches, so the first calls do not pay a NOSCRIPT round trip.
package redisscript

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// shardRunner is what Cluster and Ring clients offer to reach every primary.
type shardRunner interface {
	ForEachShard(ctx context.Context, fn func(ctx context.Context, c *redis.Client) error) error
}

// Load runs SCRIPT LOAD of scripts on every shard of rdb (every primary of
// a Cluster or Ring client, else the one server). The first failure is
// returned, wrapped.
func Load(ctx context.Context, rdb redis.UniversalClient, scripts ...*redis.Script) error {
	load := func(ctx context.Context, c redis.Scripter) error {
		for _, s := range scripts {
			if err := s.Load(ctx, c).Err(); err != nil {
				return fmt.Errorf("load script: %w", err)
			}
		}
		return nil
	}
	if sr, ok := rdb.(shardRunner); ok {
		return sr.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error { return load(ctx, c) })
	}
	return load(ctx, rdb)
}

// IsNoScript reports whether err is Redis's NOSCRIPT reply (the server
// does not have the script: restarted, flushed, or a new shard). go-redis
// falls back to EVAL by itself only outside pipelines.
func IsNoScript(err error) bool {
	return err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT"))
}

// Reload loads s on every shard of rdb (Load) when err is Redis's NOSCRIPT
// reply, and reports whether the command that got it should be sent again
// (it did not run). Any other err, and nil, report false and nothing is
// loaded. A failed load is returned, wrapped; then nothing is sent again.
// It is the one answer to NOSCRIPT of every script call site: go-redis
// falls back to EVAL by itself only outside pipelines and NoRetry
// commands.
func Reload(ctx context.Context, rdb redis.UniversalClient, s *redis.Script, err error) (bool, error) {
	if !IsNoScript(err) {
		return false, nil
	}
	if lerr := Load(ctx, rdb, s); lerr != nil {
		return false, fmt.Errorf("reload script: %w", lerr)
	}
	return true, nil
}
