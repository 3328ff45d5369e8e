// Package redisurl opens a go-redis client from a Redis URL of one of the
// schemes tollgate accepts (TOLLGATE_REDIS_URL, TOLLGATE_CACHE_REDIS_URL,
// docs/operations.md): one server, Redis Cluster or Sentinel. cmd and the
// test helpers open every Redis client through it.
package redisurl

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Open returns a client for a Redis URL: redis:// and rediss:// (one
// server, go-redis's ParseURL), redis-cluster://[user:pass@]h1:p1[,h2:p2...]
// (Redis Cluster; more seeds also as ?addr=h3:p3, one seed is enough; the
// query takes go-redis's cluster options, e.g. max_redirects),
// rediss-cluster:// (the same over TLS: every node's certificate is checked
// against the host the client dials for it, as the cluster announces it,
// with the system's roots), and
// redis-sentinel://[user:pass@]h1:p1[,h2:p2]/db?master=name (a primary
// found through Sentinel). Errors name the URL's scheme or field; they
// never include the password. Every client honours context deadlines
// (ContextTimeoutEnabled), so the engine's deadlines bound a decision and
// a cache read even when Redis stalls: without it go-redis waits for its
// own 3 s read timeout.
func Open(raw string) (redis.UniversalClient, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return nil, fmt.Errorf("redis url: missing scheme (want redis://, rediss://, redis-cluster://, rediss-cluster:// or redis-sentinel://)")
	}
	switch scheme {
	case "redis", "rediss":
		opt, err := redis.ParseURL(raw)
		if err != nil {
			return nil, fmt.Errorf("redis url: %w", err)
		}
		opt.ContextTimeoutEnabled = true
		return redis.NewClient(opt), nil
	case "redis-cluster", "rediss-cluster":
		return openCluster(scheme, rest)
	case "redis-sentinel":
		return openSentinel(rest)
	}
	return nil, fmt.Errorf("redis url: scheme %q is not one of redis, rediss, redis-cluster, rediss-cluster, redis-sentinel", scheme)
}

// openCluster parses [user:pass@]h1:p1[,h2:p2...][?query] of scheme
// redis-cluster or rediss-cluster (TLS): go-redis's ParseClusterURL takes
// one host, so the others become addr parameters.
func openCluster(scheme, rest string) (redis.UniversalClient, error) {
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	user := ""
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		user, authority = authority[:at+1], authority[at+1:]
	}
	hosts := strings.Split(authority, ",")
	if hosts[0] == "" {
		return nil, fmt.Errorf("%s url: no host", scheme)
	}
	var extra []string
	for _, h := range hosts[1:] {
		if h == "" {
			return nil, fmt.Errorf("%s url: empty host in the host list", scheme)
		}
		extra = append(extra, "addr="+url.QueryEscape(h))
	}
	if len(extra) > 0 {
		sep := "?"
		if strings.Contains(tail, "?") {
			sep = "&"
		}
		tail += sep + strings.Join(extra, "&")
	}
	base := "redis://"
	if scheme == "rediss-cluster" {
		base = "rediss://"
	}
	opt, err := redis.ParseClusterURL(base + user + hosts[0] + tail)
	if err != nil {
		return nil, fmt.Errorf("%s url: %w", scheme, err)
	}
	if opt.TLSConfig != nil {
		// go-redis names the first seed as every node's server name: each
		// node's client checks its own host instead (the seed's when the
		// cluster announces a node without one).
		seed := opt.TLSConfig.ServerName
		opt.NewClient = func(o *redis.Options) *redis.Client {
			if o.TLSConfig != nil {
				o.TLSConfig = o.TLSConfig.Clone()
				if host, _, _ := net.SplitHostPort(o.Addr); host != "" {
					o.TLSConfig.ServerName = host
				} else {
					o.TLSConfig.ServerName = seed
				}
			}
			return redis.NewClient(o)
		}
	}
	opt.ContextTimeoutEnabled = true
	// A master that dies answers no MOVED: without a reload the client
	// keeps sending its slots to it until the 60 s default reload. Reloaded
	// every second in the background (one CLUSTER SLOTS), a replica's
	// promotion is followed within about a second (docs/scale.md,
	// "Failover").
	opt.ClusterStateReloadInterval = ClusterReloadInterval
	return redis.NewClusterClient(opt), nil
}

// ClusterReloadInterval is how often a Redis Cluster client reloads the
// slot map in the background.
const ClusterReloadInterval = time.Second

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
