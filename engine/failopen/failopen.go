// Package failopen is the limiter layer of fail-open charges
// (docs/behaviour.md, "What an outage costs"): with the gateway's failure
// mode "open", a request whose limits could not be decided is admitted
// without them, and this layer keeps its quota and usage units until the
// engine can count them (Charger.Charge), so that quotas and usage count
// every admitted request, exactly once.
//
// A pending charge names the run that may have decided its request anyway
// (limit.UndecidedError.Run: a run whose reply was lost); the engine drops
// it when that run did run, so a request is never counted twice. Charges
// wait while the key's slot awaits its restore after the limiter lost its
// data, and are counted after it. They are tried as soon as a decision
// succeeds again, and every Interval while any is pending, so they are
// counted within about a second of the limiter answering whether or not
// more traffic arrives. Buckets are not charged: they refill with time,
// and charging them after an outage would refuse later requests for it.
package failopen

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"tollgate/limit"
)

// Defaults of Options.
const (
	DefaultInterval   = 100 * time.Millisecond
	DefaultMaxPending = 10000
)

// batch is the most pending charges one Charge call takes.
const batch = 1000

// closeTimeout bounds the last try of Close.
const closeTimeout = 2 * time.Second

// Charger counts charges: the engine below the layers. It returns the
// charges it did not count, to try again.
type Charger interface {
	Charge(ctx context.Context, charges []limit.Charge) ([]limit.Charge, error)
}

// Options configures Charges; the zero value gives the defaults.
type Options struct {
	// Interval is how often pending charges are tried while no decision
	// succeeds; 0 means DefaultInterval.
	Interval time.Duration
	// MaxPending bounds the pending charges (by key, plan, run and day); a
	// request beyond it is not charged (counted in Dropped). 0 means
	// DefaultMaxPending.
	MaxPending int
	// Logger receives what Close could not charge; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Charges holds the pending fail-open charges of a node. Create it with
// New; Layer stacks it on a decider. Safe for concurrent use.
type Charges struct {
	charger Charger
	opts    Options

	mu      sync.Mutex
	pending map[pendingKey]*limit.Charge
	running bool
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	units   atomic.Int64 // pending, in the map
	sending atomic.Int64 // taken from the map by a Charge in flight
	dropped atomic.Int64
}

// pendingKey merges charges: one key's plan, the run that may have decided
// them, and the UTC day of their admission (every quota period starts at
// a UTC midnight, so one day is one period).
type pendingKey struct {
	keyID, planID string
	run           int64
	day           int64
}

// New returns Charges that count through charger.
func New(charger Charger, opts Options) *Charges {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = DefaultMaxPending
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Charges{charger: charger, opts: opts, pending: map[pendingKey]*limit.Charge{},
		kick: make(chan struct{}, 1), stop: make(chan struct{})}
}

// Layer stacks the charges on next (limit.Layer).
func (c *Charges) Layer(next limit.Decider) limit.Decider { return &decider{c: c, next: next} }

type decider struct {
	c    *Charges
	next limit.Decider
}

// Decide asks next; when it fails for its caller (who admits the request:
// failure mode open), the request's quota and usage units become a
// pending charge. A decision that succeeds starts the pending charges on
// their way.
func (d *decider) Decide(ctx context.Context, req *limit.Request) (limit.Decision, error) {
	dec, err := d.next.Decide(ctx, req)
	c := d.c
	switch {
	case err == nil:
		if c.units.Load() > 0 {
			select {
			case c.kick <- struct{}{}:
			default:
			}
		}
	case ctx.Err() == nil && !errors.Is(err, limit.ErrNotRestored):
		c.add(req, err)
	}
	return dec, err
}

// add keeps one unit of req's quota and usage, undecided because of err.
func (c *Charges) add(req *limit.Request, err error) {
	if req.KeyID == "" || (req.Quota == nil && req.Uncounted) {
		return
	}
	ch := limit.Charge{Units: req.Units(), Requests: 1, At: time.Now()}
	var ue *limit.UndecidedError
	if errors.As(err, &ue) {
		ch.Run = ue.Run
		if !ue.At.IsZero() {
			ch.At = ue.At
		}
	}
	r := &limit.Request{KeyID: req.KeyID, PlanID: req.PlanID, Uncounted: req.Uncounted}
	if req.Quota != nil {
		q := *req.Quota
		r.Quota = &q
	}
	ch.Req = r
	c.put(ch)
}

// put merges ch into the pending charges and starts the loop that sends
// them.
func (c *Charges) put(ch limit.Charge) {
	k := pendingKey{keyID: ch.Req.KeyID, planID: ch.Req.PlanID, run: ch.Run, day: ch.At.Unix() / 86400}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.pending[k]; p != nil {
		p.Units += ch.Units
		p.Requests += ch.Requests
	} else {
		if len(c.pending) >= c.opts.MaxPending {
			c.dropped.Add(int64(ch.Units))
			return
		}
		c.pending[k] = &ch
	}
	c.units.Add(int64(ch.Units))
	if !c.running {
		c.running = true
		c.done = make(chan struct{})
		go c.loop(c.done)
	}
}

// take removes up to n pending charges.
func (c *Charges) take(n int) []limit.Charge {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]limit.Charge, 0, min(n, len(c.pending)))
	for k, p := range c.pending {
		if len(out) == n {
			break
		}
		out = append(out, *p)
		c.units.Add(-int64(p.Units))
		delete(c.pending, k)
	}
	return out
}

// loop sends the pending charges when kicked and every Interval, until
// none is pending or Close.
func (c *Charges) loop(done chan struct{}) {
	defer close(done)
	t := time.NewTicker(c.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-c.kick:
		case <-t.C:
		}
		c.send(context.Background())
		c.mu.Lock()
		if len(c.pending) == 0 {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
	}
}

// send tries every pending charge once; what is not counted stays
// pending. It reports the last error.
func (c *Charges) send(ctx context.Context) error {
	var last error
	c.mu.Lock()
	rounds := (len(c.pending) + batch - 1) / batch
	c.mu.Unlock()
	for range rounds {
		chs := c.take(batch)
		if len(chs) == 0 {
			break
		}
		var n int64
		for _, ch := range chs {
			n += int64(ch.Units)
		}
		c.sending.Add(n)
		kept, err := c.charger.Charge(ctx, chs)
		for _, ch := range kept {
			c.put(ch)
		}
		c.sending.Add(-n)
		if err != nil {
			last = err
			break // not answering: the next tick tries again
		}
	}
	return last
}

// Pending returns the units of quota and usage admitted without a decision
// and not counted yet (a Charge in flight included), and how many were
// dropped because MaxPending charges were pending.
func (c *Charges) Pending() (pending, dropped int64) {
	return c.sending.Load() + c.units.Load(), c.dropped.Load()
}

// Close stops the loop and tries the pending charges one last time; what
// it cannot count is lost (logged: the node's last outage admissions).
func (c *Charges) Close() {
	c.mu.Lock()
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	done := c.done
	c.mu.Unlock()
	if done != nil {
		<-done
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	if c.units.Load() == 0 {
		return
	}
	err := c.send(ctx)
	if n := c.units.Load(); n > 0 {
		c.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "engine: requests admitted while the limiter did not answer were not charged before the node stopped",
			slog.Int64("requests", n), slog.Any("error", err))
	}
}
