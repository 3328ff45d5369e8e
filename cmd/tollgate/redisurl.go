package main

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// openLimiterRedis is openRedis for TOLLGATE_REDIS_URL. It refuses Redis
// Cluster: the limiter script touches a key's own state and the shared
// stage and account buckets in one call, which Cluster rejects (CROSSSLOT)
// until the split of DESIGN.md section 9 (shared buckets taken first, given
// back on refusal) is built. Refusing at start beats a gateway that fails
// open on every request.
func openLimiterRedis(raw string) (redis.UniversalClient, error) {
	if strings.HasPrefix(raw, "redis-cluster://") {
		return nil, fmt.Errorf("TOLLGATE_REDIS_URL: Redis Cluster is not supported for the limiter yet; use redis://, rediss:// or redis-sentinel:// (the cache Redis may be a cluster)")
	}
	return openRedis(raw)
}

// openRedis returns a client for a Redis URL of one of the schemes of
// DESIGN.md section 1: redis:// and rediss:// (one server, go-redis's
// ParseURL), redis-cluster://h1:p1?addr=h2:p2 (Redis Cluster; one seed is
// enough), and redis-sentinel://[user:pass@]h1:p1[,h2:p2]/db?master=name
// (a primary found through Sentinel). Errors name the URL's scheme or field;
// they never include the password. Every client honours context deadlines
// (ContextTimeoutEnabled), so TOLLGATE_REDIS_TIMEOUT bounds a decision even
// when Redis stalls: without it go-redis waits for its own 3 s read timeout.
func openRedis(raw string) (redis.UniversalClient, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return nil, fmt.Errorf("redis url: missing scheme (want redis://, rediss://, redis-cluster:// or redis-sentinel://)")
	}
	switch scheme {
	case "redis", "rediss":
		opt, err := redis.ParseURL(raw)
		if err != nil {
			return nil, fmt.Errorf("redis url: %w", err)
		}
		opt.ContextTimeoutEnabled = true
		return redis.NewClient(opt), nil
	case "redis-cluster":
		opt, err := redis.ParseClusterURL("redis://" + rest)
		if err != nil {
			return nil, fmt.Errorf("redis-cluster url: %w", err)
		}
		opt.ContextTimeoutEnabled = true
		return redis.NewClusterClient(opt), nil
	case "redis-sentinel":
		return openSentinel(rest)
	}
	return nil, fmt.Errorf("redis url: scheme %q is not one of redis, rediss, redis-cluster, redis-sentinel", scheme)
}

func openSentinel(rest string) (redis.UniversalClient, error) {
	// url.Parse refuses several hosts, so split them off first:
	// [user:pass@]h1:p1,h2:p2[/db][?master=name].
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	opt := &redis.FailoverOptions{ContextTimeoutEnabled: true}
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		user, err := url.Parse("redis://" + authority[:at+1] + "x")
		if err != nil {
			return nil, fmt.Errorf("redis-sentinel url: cannot parse the user info")
		}
		opt.Username = user.User.Username()
		opt.Password, _ = user.User.Password()
		authority = authority[at+1:]
	}
	opt.SentinelAddrs = strings.Split(authority, ",")
	u, err := url.Parse("redis://x" + tail)
	if err != nil {
		return nil, fmt.Errorf("redis-sentinel url: cannot parse the path or query")
	}
	if opt.MasterName = u.Query().Get("master"); opt.MasterName == "" {
		return nil, fmt.Errorf("redis-sentinel url: the master query parameter is required")
	}
	if db := strings.Trim(u.Path, "/"); db != "" {
		n, err := strconv.Atoi(db)
		if err != nil {
			return nil, fmt.Errorf("redis-sentinel url: database %q is not a number", db)
		}
		opt.DB = n
	}
	return redis.NewFailoverClient(opt), nil
}
