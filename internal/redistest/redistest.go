// Package redistest gives each test its own keyspace on the real Redis
// server that tests run against (TOLLGATE_TEST_REDIS_URL, default
// redis://127.0.0.1:6379/0). Tests never FLUSHDB: each gets a unique key
// prefix and its keys are deleted at cleanup, so tests may run in parallel.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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

// DeletePrefix deletes every key that starts with prefix + ":".
func DeletePrefix(ctx context.Context, c *redis.Client, prefix string) {
	iter := c.Scan(ctx, 0, prefix+":*", 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 500 {
			c.Unlink(ctx, batch...)
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		c.Unlink(ctx, batch...)
	}
}
