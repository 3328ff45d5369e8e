package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// redisLogEvery is the most often one kind of go-redis log line (same
// format string) is written; the lines in between are counted.
const redisLogEvery = time.Second

// redisLogger is go-redis's logger (redis.SetLogger): its lines (failed
// dials of the connection pool, Sentinel lookups, ...) go to the node's
// slog logger at warn level, so a JSON log stays JSON. go-redis logs every
// failed dial, which during an outage is one line per attempt: each format
// is written at most once per redisLogEvery, with the number of lines
// suppressed since.
type redisLogger struct {
	log  *slog.Logger
	mu   sync.Mutex
	last map[string]time.Time // format → when it was last written
	held map[string]int       // format → lines suppressed since
	now  func() time.Time
}

func newRedisLogger(l *slog.Logger) *redisLogger {
	return &redisLogger{log: l, last: map[string]time.Time{}, held: map[string]int{}, now: time.Now}
}

// Printf implements go-redis's internal.Logging.
func (r *redisLogger) Printf(ctx context.Context, format string, v ...any) {
	r.mu.Lock()
	now := r.now()
	if t, ok := r.last[format]; ok && now.Sub(t) < redisLogEvery {
		r.held[format]++
		r.mu.Unlock()
		return
	}
	suppressed := r.held[format]
	r.last[format], r.held[format] = now, 0
	r.mu.Unlock()
	attrs := []slog.Attr{slog.String("detail", fmt.Sprintf(format, v...))}
	if suppressed > 0 {
		attrs = append(attrs, slog.Int("suppressed", suppressed))
	}
	r.log.LogAttrs(ctx, slog.LevelWarn, "redis client", attrs...)
}
