package webhook

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"tollgate/plans"
)

// Outbox is the durable queue of webhooks (implemented by plans/postgres).
type Outbox interface {
	// ClaimWebhooks returns up to n due undelivered webhooks and counts a
	// try for each; they are not due again for lease.
	ClaimWebhooks(ctx context.Context, n int, lease time.Duration) ([]plans.Webhook, error)
	// WebhookDelivered marks one delivered.
	WebhookDelivered(ctx context.Context, id string) error
	// WebhookFailed makes one due again after wait, noting reason.
	WebhookFailed(ctx context.Context, id string, wait time.Duration, reason string) error
	// PruneWebhooks deletes webhooks delivered more than delivered ago and
	// undelivered ones created more than undelivered ago.
	PruneWebhooks(ctx context.Context, delivered, undelivered time.Duration) (int64, error)
}

// Options configure a Dispatcher. URL is required; the zero value of every
// other field is its default.
type Options struct {
	URL    string
	Secret []byte
	// Client sends the POSTs; nil means one with Timeout per try.
	Client *http.Client
	// Timeout bounds one try; 0 means 10 s.
	Timeout time.Duration
	// Logger receives failed tries; nil discards.
	Logger *slog.Logger
	// Now stamps the signatures; nil means time.Now.
	Now func() time.Time
	// Backoff is the wait after a failed try (1-based); nil means Backoff.
	Backoff func(try int) time.Duration
}

// Retention of the outbox: delivered webhooks are kept a week (to look
// at), undelivered ones are retried for 30 days and then dropped.
const (
	keepDelivered   = 7 * 24 * time.Hour
	keepUndelivered = 30 * 24 * time.Hour
	pruneEvery      = time.Hour
	claimBatch      = 50
)

// Dispatcher sends the outbox's due webhooks. Create it with New.
type Dispatcher struct {
	box       Outbox
	opts      Options
	client    *http.Client
	log       *slog.Logger
	now       func() time.Time
	lastPrune time.Time
}

// New returns a Dispatcher delivering box's webhooks to opts.URL.
func New(box Outbox, opts Options) *Dispatcher {
	d := &Dispatcher{box: box, opts: opts, client: opts.Client, log: opts.Logger, now: opts.Now}
	if opts.Timeout <= 0 {
		d.opts.Timeout = 10 * time.Second
	}
	if d.client == nil {
		d.client = &http.Client{Timeout: d.opts.Timeout}
	}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	if d.now == nil {
		d.now = time.Now
	}
	if d.opts.Backoff == nil {
		d.opts.Backoff = Backoff
	}
	return d
}

// Backoff is the wait after the try-th failed try (1-based): 5 s, doubling
// to at most an hour.
func Backoff(try int) time.Duration {
	wait := 5 * time.Second
	for i := 1; i < try && wait < time.Hour; i++ {
		wait *= 2
	}
	return min(wait, time.Hour)
}

// Run delivers due webhooks every interval until ctx ends, and prunes the
// outbox hourly.
func (d *Dispatcher) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := d.DeliverDue(ctx); err != nil && ctx.Err() == nil {
			d.log.Warn("webhooks: reading the outbox failed; retrying", "err", err)
		}
		if d.now().Sub(d.lastPrune) >= pruneEvery {
			d.lastPrune = d.now()
			if _, err := d.box.PruneWebhooks(ctx, keepDelivered, keepUndelivered); err != nil && ctx.Err() == nil {
				d.log.Warn("webhooks: pruning the outbox failed", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// DeliverDue sends every webhook due now, a batch at a time, and returns
// how many reached a 2xx. A failed try is rescheduled after
// Options.Backoff.
// Errors come from the Outbox.
func (d *Dispatcher) DeliverDue(ctx context.Context) (int, error) {
	n := 0
	for {
		ws, err := d.box.ClaimWebhooks(ctx, claimBatch, 2*d.opts.Timeout)
		if err != nil {
			return n, err
		}
		for _, w := range ws {
			if err := d.send(ctx, w); err != nil {
				d.log.Warn("webhook delivery failed; retrying", "id", w.ID, "type", w.Type, "try", w.Attempts, "err", err)
				if err := d.box.WebhookFailed(ctx, w.ID, d.opts.Backoff(w.Attempts), err.Error()); err != nil {
					return n, err
				}
				continue
			}
			if err := d.box.WebhookDelivered(ctx, w.ID); err != nil {
				return n, err
			}
			n++
		}
		if len(ws) < claimBatch {
			return n, nil
		}
	}
}

// send makes one try: a signed POST that must answer 2xx.
func (d *Dispatcher) send(ctx context.Context, w plans.Webhook) error {
	ctx, cancel := context.WithTimeout(ctx, d.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.opts.URL, bytes.NewReader(w.Body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "tollgate-webhook")
	req.Header.Set(SignatureHeader, Sign(d.opts.Secret, d.now(), w.Body))
	resp, err := d.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("receiver answered %s", resp.Status)
	}
	return nil
}
