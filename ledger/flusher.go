package ledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"tollgate/plans"
)

// UsageSource is where a Flusher takes observed usage from: the limiter
// (implemented on the gateway's Redis engine; cmd wires it).
//
// Drain returns at most limit (>= 1) observations of (key, plan) pairs
// whose usage changed since they were last handed out: the absolute count
// of each UTC day that changed and, for a plan with a quota, its quota
// state (whose Seq only grows). Exactly limit means more may remain;
// none with a nil error means nothing changed.
//
// What Drain hands out stays held under the returned token ("" when there
// is nothing to acknowledge) until Ack(token) says it is durable in the
// ledger. A hold that is never acknowledged must end, and its pairs be
// handed out again, to this or another worker: otherwise a dead worker
// loses usage. A Drain that fails holds nothing it took; the Flusher
// ignores what it returned. Handing a pair out twice is harmless: the
// ledger keeps the greater count and the newer quota state.
//
// Both methods are called from one goroutine per Flusher; several
// Flushers (one per admin node) may share one source's backing store.
type UsageSource interface {
	Drain(ctx context.Context, limit int) (obs []plans.UsageObservation, token string, err error)
	Ack(ctx context.Context, token string) error
}

// Store is where a Flusher writes usage (plans/postgres.DB).
type Store interface {
	// FlushUsage writes b in one transaction, keeping per day the greater
	// count and per (key, plan) the quota state with the higher Seq, and
	// returns the number of day rows that changed.
	FlushUsage(ctx context.Context, b *plans.UsageBatch) (int64, error)
}

// Options configure a Flusher. The zero value is the default.
type Options struct {
	// Interval is the time between flushes; default DefaultInterval. A
	// flush that found more than one cycle's worth starts the next one at
	// once.
	Interval time.Duration
	// DrainLimit is the limit of one Drain call; default 1000.
	DrainLimit int
	// MaxDrains bounds the Drain calls of one flush (so one write holds at
	// most DrainLimit × MaxDrains observations); default 50.
	MaxDrains int
	// Timeout bounds one flush (drains, write and acks); default 30 s.
	Timeout time.Duration
	// StopTimeout bounds the flushes Run makes once its context ended
	// (cmd/tollgate passes TOLLGATE_SHUTDOWN_TIMEOUT); default 30 s.
	StopTimeout time.Duration
	// Logger receives failures (one line per failed flush); nil discards.
	Logger *slog.Logger
	// Now is the clock for the lag metric; default time.Now.
	Now func() time.Time
}

// DefaultInterval is the default time between flushes: the usage a
// limiter Redis loses before it reaches the ledger is at most this plus
// the time one flush takes.
const DefaultInterval = 500 * time.Millisecond

// Flusher moves usage from a UsageSource to a Store: call Run in a
// goroutine, or Flush for one cycle. Its methods are not safe for
// concurrent use, except the metrics (Collectors) and Lag.
type Flusher struct {
	src     UsageSource
	store   Store
	opts    Options
	log     *slog.Logger
	metrics *metrics

	pending     plans.UsageBatch // drained, not yet written
	tokens      []string         // of pending, to acknowledge once written
	drainedAt   time.Time        // when the drain of pending began
	pendingMore bool             // the drain of pending may have left some behind
	synced      atomic.Int64     // unix nanoseconds: everything observed before it is in the ledger
}

// NewFlusher returns a Flusher from src to store. It panics when either is
// nil (a wiring bug).
func NewFlusher(src UsageSource, store Store, opts Options) *Flusher {
	if src == nil || store == nil {
		panic("ledger: NewFlusher needs a source and a store")
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.DrainLimit <= 0 {
		opts.DrainLimit = 1000
	}
	if opts.MaxDrains <= 0 {
		opts.MaxDrains = 50
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 30 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	f := &Flusher{src: src, store: store, opts: opts, log: opts.Logger}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	f.synced.Store(opts.Now().UnixNano())
	f.metrics = newMetrics(f)
	return f
}

// Lag is how far the ledger may be behind the limiter: the time since the
// drain of the last flush that wrote everything the source held (since
// NewFlusher before the first one). Everything the source had observed
// before that moment is in the ledger.
func (f *Flusher) Lag() time.Duration {
	return f.opts.Now().Sub(time.Unix(0, f.synced.Load()))
}

// Run flushes every Options.Interval until ctx ends, then flushes until
// the source holds nothing more (for at most Options.StopTimeout), so
// that a clean stop writes everything counted before it. A flush in
// progress when ctx ends is not cut off (each is bounded by
// Options.Timeout): it ends, then the final flushes drain what was
// counted meanwhile. Failures are logged and counted; the next tick
// retries.
func (f *Flusher) Run(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			f.finalFlush(ctx)
			return
		case <-t.C:
			if ctx.Err() != nil {
				continue // stopped while the timer fired: the final flush runs next
			}
		}
		more, err := f.Flush(context.WithoutCancel(ctx))
		if err != nil {
			f.log.Warn("ledger: usage flush failed; retrying", "err", err, "pending", f.pending.Len(), "in", f.opts.Interval)
		}
		next := f.opts.Interval
		if more && err == nil {
			next = 0
		}
		t.Reset(next)
	}
}

// finalFlush flushes until the source holds nothing more, a flush fails,
// or Options.StopTimeout passes.
func (f *Flusher) finalFlush(ctx context.Context) {
	final, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.opts.StopTimeout)
	defer cancel()
	for {
		more, err := f.Flush(final)
		if err != nil {
			f.log.Warn("ledger: final usage flush failed; what the limiter still holds is flushed by the next admin node", "err", err)
			return
		}
		if !more {
			return
		}
	}
}

// Flush runs one cycle: unless a failed write left observations pending,
// it drains the source (up to MaxDrains calls); then it writes everything
// pending in one transaction and acknowledges it. more reports that the
// source may hold more than this cycle took: its drain stopped at
// MaxDrains, or the cycle only wrote what an earlier one had drained
// (the source may have changed since). On error the observations stay
// pending for the next call.
func (f *Flusher) Flush(ctx context.Context) (more bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
	defer cancel()
	carried := f.pending.Len() > 0 || len(f.tokens) > 0
	if !carried {
		f.drainedAt = f.opts.Now()
		f.pendingMore, err = f.drain(ctx)
		f.metrics.pending.Set(float64(f.pending.Len()))
		if err != nil {
			f.pendingMore = true // a drain cut short may have left pairs behind
			f.metrics.errors.WithLabelValues(stepDrain).Inc()
			return false, err
		}
	}
	if err := f.write(ctx); err != nil {
		return false, err
	}
	f.metrics.pending.Set(0)
	if !f.pendingMore { // everything the source held at drainedAt is in the ledger
		f.synced.Store(f.drainedAt.UnixNano())
		f.metrics.lastSync.Set(float64(f.drainedAt.UnixNano()) / 1e9)
	}
	return f.pendingMore || carried, nil
}

// drain takes observations from the source into pending until a short
// page or MaxDrains calls; it reports whether the last page was full.
// Invalid observations are dropped, logged and counted.
func (f *Flusher) drain(ctx context.Context) (bool, error) {
	for range f.opts.MaxDrains {
		obs, token, err := f.src.Drain(ctx, f.opts.DrainLimit)
		if err != nil {
			return false, fmt.Errorf("ledger: drain usage: %w", err)
		}
		if token != "" {
			f.tokens = append(f.tokens, token)
		}
		for _, o := range obs {
			if err := o.Validate(); err != nil {
				f.metrics.dropped.Inc()
				f.log.Error("ledger: invalid usage observation dropped", "err", err)
				continue
			}
			f.pending.Add(o)
		}
		if len(obs) < f.opts.DrainLimit {
			return false, nil
		}
	}
	return true, nil
}

// write stores pending, then acknowledges its tokens and empties it. An
// Ack that fails is logged and counted only: the ledger has the data, and
// the source hands it out again, which is harmless.
func (f *Flusher) write(ctx context.Context) error {
	if f.pending.Len() > 0 {
		changed, err := f.store.FlushUsage(ctx, &f.pending)
		if err != nil {
			f.metrics.errors.WithLabelValues(stepWrite).Inc()
			return fmt.Errorf("ledger: write usage: %w", err)
		}
		f.metrics.changed.Add(float64(changed))
	}
	var ackErr error
	for _, tok := range f.tokens {
		if err := f.src.Ack(ctx, tok); err != nil {
			f.metrics.errors.WithLabelValues(stepAck).Inc()
			ackErr = errors.Join(ackErr, err)
		}
	}
	if ackErr != nil {
		f.log.Warn("ledger: usage acknowledged in part; the source hands the rest out again", "err", ackErr)
	}
	f.pending, f.tokens = plans.UsageBatch{}, nil
	return nil
}
