package main

import (
	"context"
	"fmt"
	"time"

	"tollgate/engine"
	"tollgate/ledger"
	"tollgate/plans/postgres"
)

// Bounds of TOLLGATE_USAGE_FLUSH_INTERVAL.
const (
	minFlushInterval = 100 * time.Millisecond
	maxFlushInterval = time.Minute
)

// checkFlushInterval refuses a flush interval outside 100ms..1m (0 means
// the default, 5s).
func checkFlushInterval(d time.Duration) error {
	if d != 0 && (d < minFlushInterval || d > maxFlushInterval) {
		return fmt.Errorf("TOLLGATE_USAGE_FLUSH_INTERVAL %v must be between %v and %v", d, minFlushInterval, maxFlushInterval)
	}
	return nil
}

// startFlusher runs the usage ledger's flush worker (package ledger) from
// m.UsageSource (by default the limiter's, limiter.UsageSource) into db
// until ctx ends; Close waits for its final flush (up to
// Config.ShutdownTimeout) before it closes db.
func (m *Main) startFlusher(ctx context.Context, db *postgres.DB, limiter *engine.Engine) {
	if m.UsageSource == nil {
		m.UsageSource = limiter.UsageSource()
	}
	f := ledger.NewFlusher(m.UsageSource, db, ledger.Options{Interval: m.Config.UsageFlushInterval, StopTimeout: m.Config.ShutdownTimeout, Logger: m.Logger})
	m.registry.MustRegister(f.Collectors()...)
	m.goRun(func() { f.Run(ctx) })
}
