package main

import (
	"cmp"
	"context"
	"time"

	"tollgate/plans/postgres"
	"tollgate/webhook"
)

// defaultKeyScanEvery is how often an admin node looks for keys whose
// expiry notice is due (Main.keyScanEvery overrides it in tests).
const defaultKeyScanEvery = 5 * time.Second

// startKeyUpkeep starts, on an admin node with TOLLGATE_WEBHOOK_URL, the
// webhook dispatcher (every second) and, unless TOLLGATE_KEY_EXPIRY_NOTICE
// is 0, the scan that enqueues key.expiring notices.
func (m *Main) startKeyUpkeep(ctx context.Context, db *postgres.DB) {
	cfg := m.Config
	if cfg.WebhookURL == "" {
		return
	}
	d := webhook.New(db, webhook.Options{URL: cfg.WebhookURL, Secret: cfg.Secrets.WebhookSecret, Logger: m.Logger})
	m.goRun(func() { d.Run(ctx, time.Second) })
	if cfg.KeyExpiryNotice > 0 {
		m.goRun(func() { m.scanExpiringKeys(ctx, db) })
	}
}

// scanExpiringKeys enqueues the expiry notices that are due until ctx
// ends; the dispatcher sends them.
func (m *Main) scanExpiringKeys(ctx context.Context, db *postgres.DB) {
	t := time.NewTicker(cmp.Or(m.keyScanEvery, defaultKeyScanEvery))
	defer t.Stop()
	for {
		if n, err := db.EnqueueKeyExpiryNotices(ctx, m.Config.KeyExpiryNotice); err != nil && ctx.Err() == nil {
			m.Logger.Warn("looking for expiring keys failed; retrying", "err", err)
		} else if n > 0 {
			m.Logger.Info("key expiry notices enqueued", "keys", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
