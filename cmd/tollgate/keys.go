package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"

	"tollgate/plans/postgres"
	"tollgate/webhook"
)

// defaultKeyScanEvery is how often an admin node looks for keys whose
// expiry notice is due (Main.keyScanEvery overrides it in tests).
const defaultKeyScanEvery = 5 * time.Second

// startKeyUpkeep starts an admin node's key upkeep: at start and hourly,
// forgetting rotation answers after a day, previous values a day after
// their overlap and the portal's expired sessions and invites; with TOLLGATE_WEBHOOK_URL, the webhook dispatcher (every
// second) and, unless TOLLGATE_KEY_EXPIRY_NOTICE is 0, the scan that
// enqueues key.expiring notices.
func (m *Main) startKeyUpkeep(ctx context.Context, db *postgres.DB) {
	m.goRun(func() { every(ctx, pruneEvery, func() { m.pruneKeyRotations(ctx, db) }) })
	cfg := m.Config
	if cfg.WebhookURL == "" {
		return
	}
	d := webhook.New(db, webhook.Options{URL: cfg.WebhookURL, Secret: cfg.Secrets.WebhookSecret, Logger: m.Logger})
	m.goRun(func() { d.Run(ctx, time.Second) })
	if cfg.KeyExpiryNotice > 0 {
		scan := cmp.Or(m.keyScanEvery, defaultKeyScanEvery)
		m.goRun(func() { every(ctx, scan, func() { m.scanExpiringKeys(ctx, db) }) })
	}
}

// pruneKeyRotations prunes rotation answers and ended previous values
// (the reconciler publishes the change), and the developer portal's
// expired sessions and invites.
func (m *Main) pruneKeyRotations(ctx context.Context, db *postgres.DB) {
	if n, err := db.PruneKeyRotations(ctx); err != nil && ctx.Err() == nil {
		m.Logger.Warn("pruning key rotations failed; retrying in an hour", "err", err)
	} else if n > 0 {
		m.Logger.Info("pruned key rotations and ended previous values", "deleted", n)
	}
	if n, err := db.PrunePortal(ctx); err != nil && ctx.Err() == nil {
		m.Logger.Warn("pruning the portal's sessions and invites failed; retrying in an hour", "err", err)
	} else if n > 0 {
		m.Logger.Info("pruned the portal's expired sessions and invites", "deleted", n)
	}
}

// scanExpiringKeys enqueues the expiry notices that are due; the
// dispatcher sends them.
func (m *Main) scanExpiringKeys(ctx context.Context, db *postgres.DB) {
	if n, err := db.EnqueueKeyExpiryNotices(ctx, m.Config.KeyExpiryNotice); err != nil && ctx.Err() == nil {
		m.Logger.Warn("looking for expiring keys failed; retrying", "err", err)
	} else if n > 0 {
		m.Logger.Info("key expiry notices enqueued", "keys", n)
	}
}

// every calls fn at once and then every interval until ctx ends.
func every(ctx context.Context, interval time.Duration, fn func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		fn()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// keysCmd groups `tollgate keys`: API key operations of the admin API.
type keysCmd struct {
	Rotate keysRotateCmd `cmd:"" help:"Give an API key a new value (POST /apikeys/{id}/rotate); the old one keeps working for --overlap. Prints the new value, shown this once."`
}

// keysRotateCmd is `tollgate keys rotate`. It sends one idempotency token
// (--token, else a random one) on every try, so retrying after a network
// failure or a 5xx never mints a second value.
type keysRotateCmd struct {
	adminFlags
	Key     string        `arg:"" help:"API key id."`
	Overlap time.Duration `default:"0s" help:"How long the previous value keeps working (whole seconds, at most 720h)."`
	Token   string        `help:"Idempotency token: the same token on the same key within 24 h answers the same value and mints nothing. Default: a random one, kept across this command's retries."`
	Tries   int           `default:"4" help:"Tries on a network failure, 429 or 5xx."`

	out    io.Writer           `kong:"-"` // standard output unless a test sets it
	getenv func(string) string `kong:"-"` // os.Getenv unless a test sets it
	pause  time.Duration       `kong:"-"` // the first wait between tries (1 s unless a test sets it)
}

// Run rotates the key and prints {"id", "value", "previousValueExpiresAt"}
// as JSON.
func (c *keysRotateCmd) Run(ctx context.Context) error {
	if c.Overlap < 0 || c.Overlap%time.Second != 0 {
		return fmt.Errorf("--overlap must be whole seconds, 0 or more, got %v", c.Overlap)
	}
	getenv := c.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	cl, err := c.client(getenv)
	if err != nil {
		return err
	}
	token := c.Token
	if token == "" {
		token = randomToken()
	}
	in := map[string]any{"overlapSeconds": int64(c.Overlap / time.Second), "idempotencyToken": token}
	var out map[string]any
	wait := cmp.Or(c.pause, time.Second)
	for try := 1; ; try++ {
		err = cl.doJSON(ctx, http.MethodPost, "/apikeys/"+url.PathEscape(c.Key)+"/rotate", in, &out)
		if err == nil || try >= c.Tries || !retryable(err) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait *= 2
	}
	if err != nil {
		return err
	}
	enc := json.NewEncoder(cmp.Or[io.Writer](c.out, os.Stdout))
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// retryable reports whether a failed call may be tried again with the
// same token: no answer, 429 or 5xx.
func retryable(err error) bool {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.Status == http.StatusTooManyRequests || ae.Status >= 500
	}
	return true
}

// randomToken returns 128 random bits in hex.
func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (Go 1.24+)
	return hex.EncodeToString(b)
}
