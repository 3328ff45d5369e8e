package main

import (
	"context"
	"fmt"
	"time"

	"tollgate/ledger"
	"tollgate/plans/postgres"
	"tollgate/usage"
)

// Bounds of TOLLGATE_USAGE_FLUSH_INTERVAL.
const (
	minFlushInterval = 100 * time.Millisecond
	maxFlushInterval = time.Minute
)

// checkFlushInterval refuses a flush interval outside 100ms..1m (0 means
// the default, 500ms).
func checkFlushInterval(d time.Duration) error {
	if d != 0 && (d < minFlushInterval || d > maxFlushInterval) {
		return fmt.Errorf("TOLLGATE_USAGE_FLUSH_INTERVAL %v must be between %v and %v", d, minFlushInterval, maxFlushInterval)
	}
	return nil
}

// startFlusher runs the usage ledger's flush worker (package ledger) from
// m.UsageSource (by default the limiter's, limiter.Source) into db
// until ctx ends; Close waits for its final flush (up to
// Config.ShutdownTimeout) before it closes db.
func (m *Main) startFlusher(ctx context.Context, db *postgres.DB, limiter *usage.Limiter) {
	if m.UsageSource == nil {
		m.UsageSource = limiter.Source()
	}
	f := ledger.NewFlusher(m.UsageSource, db, ledger.Options{Interval: m.Config.UsageFlushInterval, StopTimeout: m.Config.ShutdownTimeout, Logger: m.Logger})
	m.registry.MustRegister(f.Collectors()...)
	m.goRun(func() { f.Run(ctx) })
}

// restoreEvery is how often an admin node checks whether the limiter Redis
// lost its data and needs the ledger written back (usage.Restore): while
// it does, gateways answer keyed requests 503.
const restoreEvery = time.Second

// restoreTimeout bounds one restore.
const restoreTimeout = 30 * time.Second

// runRestore calls restore every restoreEvery until ctx ends.
func (m *Main) runRestore(ctx context.Context, db *postgres.DB, limiter *usage.Limiter) {
	t := time.NewTicker(restoreEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.restore(ctx, db, limiter)
		}
	}
}

// restore writes the ledger back into every slot of the limiter Redis that
// lost its data (usage.Restore), logging what it did or why it failed.
func (m *Main) restore(ctx context.Context, db *postgres.DB, limiter *usage.Limiter) {
	ctx, cancel := context.WithTimeout(ctx, restoreTimeout)
	defer cancel()
	start := time.Now()
	n, err := limiter.Restore(ctx, db)
	switch {
	case err != nil && ctx.Err() == nil:
		m.Logger.Warn("usage ledger: restoring the limiter Redis failed; gateways refuse keyed requests of the lost slots until it succeeds", "err", err)
	case n > 0:
		m.Logger.Info("usage ledger: limiter Redis restored from the ledger", "slots", n, "took", time.Since(start))
	}
}
