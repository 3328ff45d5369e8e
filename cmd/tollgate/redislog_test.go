package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// One kind of go-redis line is written at most once per second, with the
// count of lines held back since; other kinds are not held back by it.
func TestRedisLoggerHoldsBackRepeats(t *testing.T) {
	logs := &logBuffer{}
	now := time.Unix(1000, 0)
	rl := newRedisLogger(slog.New(slog.NewJSONHandler(logs, nil)))
	rl.now = func() time.Time { return now }
	ctx := context.Background()
	for range 5 {
		rl.Printf(ctx, "redis: connection pool: failed to dial after %d attempts: %v", 5, "refused")
	}
	rl.Printf(ctx, "sentinel: GetMasterAddrByName name=%q failed: %s", "m", "x")
	now = now.Add(redisLogEvery)
	rl.Printf(ctx, "redis: connection pool: failed to dial after %d attempts: %v", 5, "refused")
	lines := jsonLines(t, logs.String())
	if len(lines) != 3 {
		t.Fatalf("got %d lines, want 3:\n%s", len(lines), logs.String())
	}
	for i, want := range []struct {
		detail     string
		suppressed any
	}{{"failed to dial", nil}, {"sentinel", nil}, {"failed to dial", float64(4)}} {
		l := lines[i]
		if l["msg"] != "redis client" || l["level"] != "WARN" || !strings.Contains(l["detail"].(string), want.detail) || l["suppressed"] != want.suppressed {
			t.Errorf("line %d: got %v, want a WARN 'redis client' line with detail %q and suppressed %v", i, l, want.detail, want.suppressed)
		}
	}
}
