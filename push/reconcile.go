package push

import (
	"context"
	"fmt"
	"time"

	"tollgate/plans"
)

// recordBatch is how many key records one pipeline writes during a full
// republish.
const recordBatch = 500

// Reconcile repairs Redis when its published config is behind the Source:
//
//   - watermark absent (Redis was flushed, or restarted without its data):
//     republish the snapshot and every key record (oldest first), append a
//     reload entry to the stream, and set the watermark last;
//   - watermark behind Source.ConfigVersion: publish the missing changes as
//     Publish does, falling back to the full republish when the Source no
//     longer has them.
//
// Why a watermark that is behind does not trigger a full republish: one
// that is present but behind is the normal state between an admin commit and its
// Publish, so a full republish there would rewrite every key record (up to
// millions) whenever a reconciler tick lands in that window. The
// incremental path restores exactly what the missing changes wrote, and the
// full path still runs whenever Redis lost its state (no watermark) or the
// change log has a hole.
func (p *Publisher) Reconcile(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	w, ok, err := p.watermark(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return p.republishAll(ctx)
	}
	v, err := p.src.ConfigVersion(ctx)
	if err != nil {
		return fmt.Errorf("push: read config version: %w", err)
	}
	if w >= v {
		return nil
	}
	return p.publish(ctx)
}

// republishAll writes the current snapshot and every key record, then a
// reload entry, then the watermark at the Source version read first (so
// changes committed meanwhile are published by the next Publish).
func (p *Publisher) republishAll(ctx context.Context) error {
	v, err := p.src.ConfigVersion(ctx)
	if err != nil {
		return fmt.Errorf("push: read config version: %w", err)
	}
	p.log.Info("push: republishing the whole config", "version", v)
	if _, err := p.writeSnapshot(ctx, v); err != nil {
		return err
	}
	if err := p.writeAllKeys(ctx); err != nil {
		return err
	}
	if err := p.xadd(ctx, reloadValues(v)); err != nil {
		return err
	}
	_, err = raiseWatermark(ctx, p.rdb, p.keys.Version(), v)
	return err
}

// writeAllKeys writes every key record of the Source in pipelined batches,
// in the Source's order.
func (p *Publisher) writeAllKeys(ctx context.Context) error {
	batch := make([]casWrite, 0, recordBatch)
	err := p.src.AllKeyRecords(ctx, func(hash string, rec *plans.KeyRecord) error {
		batch = append(batch, p.recordWrite(hash, rec, rec.Version))
		if len(batch) < recordBatch {
			return nil
		}
		err := runCASBatch(ctx, p.rdb, batch)
		batch = batch[:0]
		return err
	})
	if err != nil {
		return fmt.Errorf("push: republish key records: %w", err)
	}
	return runCASBatch(ctx, p.rdb, batch)
}

// RunReconciler calls Reconcile every interval (default 1s when every ≤ 0)
// until ctx is done, logging failures: an error once when a failure starts
// and once more when it recovers, so an outage does not flood the log.
func (p *Publisher) RunReconciler(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	failing := false
	for {
		err := p.Reconcile(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil && !failing:
			p.log.Error("push: reconcile failed", "err", err)
		case err == nil && failing:
			p.log.Info("push: reconcile recovered")
		}
		failing = err != nil
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
