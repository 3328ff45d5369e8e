package postgres

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/plans"
)

// EnqueueWebhook stores w in the webhook outbox, due now, unless a webhook
// with the same dedupeKey is there already (then it does nothing: several
// admin nodes may detect one event). Errors: KindUnavailable.
func (db *DB) EnqueueWebhook(ctx context.Context, w plans.Webhook, dedupeKey string) error {
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		return enqueue(ctx, tx, now, w, dedupeKey)
	})
}

func enqueue(ctx context.Context, tx pgx.Tx, now time.Time, w plans.Webhook, dedupeKey string) error {
	_, err := tx.Exec(ctx, `INSERT INTO webhook_outbox (id, dedupe_key, type, body, created_at, next_attempt_at)
		VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (dedupe_key) DO NOTHING`, w.ID, dedupeKey, w.Type, string(w.Body), now)
	return err
}

type webhookRow struct {
	ID       string `db:"id"`
	Type     string `db:"type"`
	Body     string `db:"body"`
	Attempts int    `db:"attempts"`
}

// ClaimWebhooks returns up to n undelivered webhooks that are due, oldest
// due first, and counts a try for each; they are not due again for lease,
// so another admin node does not send them meanwhile (SKIP LOCKED: nodes
// claim disjoint sets). Errors: KindUnavailable.
func (db *DB) ClaimWebhooks(ctx context.Context, n int, lease time.Duration) ([]plans.Webhook, error) {
	var out []plans.Webhook
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		rows, _ := tx.Query(ctx, `UPDATE webhook_outbox SET next_attempt_at = $1::timestamptz + $3 * interval '1 millisecond', attempts = attempts + 1
			WHERE id IN (SELECT id FROM webhook_outbox WHERE delivered_at IS NULL AND next_attempt_at <= $1
				ORDER BY next_attempt_at LIMIT $2 FOR UPDATE SKIP LOCKED)
			RETURNING id, type, body, attempts`, now, n, lease.Milliseconds())
		rs, err := pgx.CollectRows(rows, pgx.RowToStructByName[webhookRow])
		out = make([]plans.Webhook, len(rs))
		for i, r := range rs {
			out[i] = plans.Webhook{ID: r.ID, Type: r.Type, Body: []byte(r.Body), Attempts: r.Attempts}
		}
		return err
	})
	return out, err
}

// WebhookDelivered marks webhook id delivered. Errors: KindUnavailable.
func (db *DB) WebhookDelivered(ctx context.Context, id string) error {
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		_, err := tx.Exec(ctx, `UPDATE webhook_outbox SET delivered_at = $2, last_error = '' WHERE id = $1`, id, now)
		return err
	})
}

// WebhookFailed makes webhook id due again after wait and notes why its
// try failed. Errors: KindUnavailable.
func (db *DB) WebhookFailed(ctx context.Context, id string, wait time.Duration, reason string) error {
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		_, err := tx.Exec(ctx, `UPDATE webhook_outbox SET next_attempt_at = $2, last_error = $3
			WHERE id = $1 AND delivered_at IS NULL`, id, now.Add(wait), reason)
		return err
	})
}

// PruneWebhooks deletes webhooks delivered more than delivered ago, and
// undelivered ones created more than undelivered ago (given up); it
// returns how many. Errors: KindUnavailable.
func (db *DB) PruneWebhooks(ctx context.Context, delivered, undelivered time.Duration) (int64, error) {
	var n int64
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		tag, err := tx.Exec(ctx, `DELETE FROM webhook_outbox WHERE delivered_at < $1 OR (delivered_at IS NULL AND created_at < $2)`,
			now.Add(-delivered), now.Add(-undelivered))
		n = tag.RowsAffected()
		return err
	})
	return n, err
}

type expiringRow struct {
	ID         string    `db:"id"`
	Name       string    `db:"name"`
	CustomerID string    `db:"customer_id"`
	ExpiresAt  time.Time `db:"expires_at"`
}

// EnqueueKeyExpiryNotices enqueues a plans.EventKeyExpiring webhook for
// every key that expires within the next within and has no notice for
// that expiry yet (a changed expiry gets a notice of its own); it returns
// how many it enqueued. Errors: KindUnavailable.
func (db *DB) EnqueueKeyExpiryNotices(ctx context.Context, within time.Duration) (int, error) {
	n := 0
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		rows, _ := tx.Query(ctx, `SELECT a.id, a.name, a.customer_id, a.expires_at FROM api_keys a
			WHERE a.expires_at > $1 AND a.expires_at <= $2 AND NOT EXISTS (SELECT 1 FROM webhook_outbox o
				WHERE o.dedupe_key = $3 || a.id || ':' || (extract(epoch FROM a.expires_at) * 1000000)::bigint)
			ORDER BY a.expires_at LIMIT 1000`, now, now.Add(within), plans.EventKeyExpiring+":")
		keys, err := pgx.CollectRows(rows, pgx.RowToStructByName[expiringRow])
		if err != nil {
			return err
		}
		for _, k := range keys {
			w := plans.NewKeyExpiring(now, k.ID, k.Name, k.CustomerID, k.ExpiresAt)
			if err := enqueue(ctx, tx, now, w, expiryDedupeKey(k.ID, k.ExpiresAt)); err != nil {
				return err
			}
		}
		n = len(keys)
		return nil
	})
	return n, err
}

// expiryDedupeKey names the notice of key id's expiry at t (the SQL of
// EnqueueKeyExpiryNotices builds the same).
func expiryDedupeKey(id string, t time.Time) string {
	return plans.EventKeyExpiring + ":" + id + ":" + strconv.FormatInt(t.UnixMicro(), 10)
}
