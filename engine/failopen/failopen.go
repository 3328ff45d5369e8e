// Package failopen is the limiter layer of fail-open charges
// (docs/behaviour.md, "What an outage costs"): with the gateway's failure
// mode "open", a request whose limits could not be decided is admitted
// without them, and this layer keeps its quota, customer quota and usage
// units until the engine can count them (Charger.Charge), so that quotas
// and usage count every admitted request, exactly once.
//
// The same pending charges carry a node's settles (Charges.Settle: a
// settled cost's difference from its reservation, a usage count once the
// response is known; docs/cost.md), in either failure mode: sent at once,
// batched with those waiting, and tried again with backoff when a try
// fails, exactly once too.
//
// A pending charge names the run that may have decided its request anyway
// (limit.UndecidedError.Run: a run whose reply was lost), and the earlier
// try of itself whose reply was lost; the engine drops it when that try
// ran, and counts it as decided when that run ran, so a request is never
// counted twice. Charges wait while the key's slot awaits its restore
// after the limiter lost its data, and are counted after it. They are
// tried as soon as a decision succeeds again, and every Interval while any
// is pending, so they are counted within about a second of the limiter
// answering whether or not more traffic arrives. Buckets are not charged
// for admissions: they refill with time, and charging them after an
// outage would refuse later requests for it.
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
	// succeeds, and the longest backoff after a failed try; 0 means
	// DefaultInterval.
	Interval time.Duration
	// MaxPending bounds the pending charges (by key, plan, runs, kind and
	// day); a request beyond it is not charged (counted in Dropped). 0
	// means DefaultMaxPending.
	MaxPending int
	// Logger receives what Close could not charge; nil means
	// slog.Default().
	Logger *slog.Logger
}

// minBackoff is the first wait after a failed try (it doubles up to
// Options.Interval): a settle whose reply was lost once is tried again
// well within the second docs/cost.md promises.
const minBackoff = 10 * time.Millisecond

// ErrFull is the error of a settle that was not kept: MaxPending charges
// are pending.
var ErrFull = errors.New("failopen: too many pending charges")

// Charges holds the pending charges of a node: fail-open admissions and
// settles. Create it with New; Layer stacks it on a decider (failure
// mode open), Settle takes settles. Safe for concurrent use.
type Charges struct {
	charger Charger
	opts    Options

	mu       sync.Mutex
	pending  map[pendingKey]*pendingCharge
	running  bool
	kick     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	requests atomic.Int64 // pending, in the map
	sending  atomic.Int64 // taken from the map by a Charge in flight
	dropped  atomic.Int64
	failures atomic.Int64 // Charge calls that failed
}

// pendingCharge is charges merged into one, and the requests they are.
type pendingCharge struct {
	ch limit.Charge
	n  int64
}

// pendingKey merges charges: one key's plan and customer, the runs that
// may have decided them (or counted them: an earlier try), what they are,
// the UTC day of their admission and the start of its quota period and
// of its customer quota's (an anchored or zoned period may start within a
// UTC day, and the customer's runs on the plan's calendar, not the key's).
type pendingKey struct {
	keyID, planID, customerID      string
	run, customerRun, prev         int64
	kind                           limit.ChargeKind
	done                           limit.Parts
	customerTaken, bucket, counted bool
	day, period, customerPeriod    int64
}

// keyOf returns the pendingKey of ch.
func keyOf(ch *limit.Charge) pendingKey {
	k := pendingKey{keyID: ch.Req.KeyID, planID: ch.Req.PlanID, customerID: ch.Req.CustomerID, run: ch.Run,
		customerRun: ch.CustomerRun, prev: ch.Prev, kind: ch.Kind, done: ch.Done, customerTaken: ch.CustomerTaken,
		bucket: ch.Bucket, counted: ch.Requests > 0, day: ch.At.Unix() / 86400}
	if q := ch.Req.Quota; q != nil {
		start, _ := q.Calendar().Bounds(ch.At)
		k.period = start.Unix()
	}
	if q := ch.Req.CustomerQuota; q != nil {
		start, _ := q.Calendar().Bounds(ch.At)
		k.customerPeriod = start.Unix()
	}
	return k
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
	return &Charges{charger: charger, opts: opts, pending: map[pendingKey]*pendingCharge{},
		kick: make(chan struct{}, 1), stop: make(chan struct{})}
}

// Layer stacks the charges on next (limit.Layer).
func (c *Charges) Layer(next limit.Decider) limit.Decider { return &decider{c: c, next: next} }

type decider struct {
	c    *Charges
	next limit.Decider
}

// Decide asks next; when it fails for its caller (who admits the request:
// failure mode open), the request's quota, customer quota and usage units
// become a pending charge. A request decided limit.Request.Uncounted (a
// settled cost, tollgate:quota-counts=non-5xx) is charged by its settle
// instead, which knows its cost (Settle, with Settlement.Undecided). A
// decision that succeeds starts the pending charges on their way.
func (d *decider) Decide(ctx context.Context, req *limit.Request) (limit.Decision, error) {
	dec, err := d.next.Decide(ctx, req)
	c := d.c
	switch {
	case err == nil:
		if c.requests.Load() > 0 {
			c.kickNow()
		}
	case ctx.Err() == nil && !errors.Is(err, limit.ErrNotRestored):
		c.add(req, err)
	}
	return dec, err
}

// kickNow starts a try of the pending charges.
func (c *Charges) kickNow() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// add keeps req's units of its quota, customer quota and usage, undecided
// because of err.
func (c *Charges) add(req *limit.Request, err error) {
	if req.KeyID == "" || req.Uncounted {
		return
	}
	ch := limit.Charge{Units: req.Units(), Requests: 1, At: time.Now()}
	var ue *limit.UndecidedError
	if errors.As(err, &ue) {
		ch.Run, ch.CustomerRun, ch.CustomerTaken = ue.Run, ue.CustomerRun, ue.CustomerTaken
		if !ue.At.IsZero() {
			ch.At = ue.At
		}
	}
	r := &limit.Request{KeyID: req.KeyID, PlanID: req.PlanID, CustomerID: req.CustomerID}
	if req.Quota != nil {
		q := *req.Quota
		r.Quota = &q
	}
	if req.CustomerQuota != nil {
		q := *req.CustomerQuota
		r.CustomerQuota = &q
	}
	ch.Req = r
	c.put(ch, 1)
}

// Settle keeps the settle s (limit.Settlement.AsCharge) until it is
// counted, exactly once, and starts a try at once: one Charge call takes
// every charge pending, so concurrent settles share a run (one per slot).
// A try that fails is tried again after a backoff (10 ms, doubling up to
// Interval), then every Interval, and as soon as a decision succeeds. It
// returns ErrFull, keeping nothing, when MaxPending charges are pending.
// s.Req must not change afterwards.
func (c *Charges) Settle(_ context.Context, s limit.Settlement) error {
	if !c.put(s.AsCharge(), 1) {
		return ErrFull
	}
	c.kickNow()
	return nil
}

// put merges ch, n requests, into the pending charges and starts the loop
// that sends them. It reports false when ch was dropped (MaxPending).
func (c *Charges) put(ch limit.Charge, n int64) bool {
	k := keyOf(&ch)
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.pending[k]; p != nil {
		p.ch.Units += ch.Units
		p.ch.Requests += ch.Requests
		p.ch.Reserved += ch.Reserved
		p.n += n
	} else {
		if len(c.pending) >= c.opts.MaxPending {
			c.dropped.Add(n)
			return false
		}
		c.pending[k] = &pendingCharge{ch: ch, n: n}
	}
	c.requests.Add(n)
	if !c.running {
		c.running = true
		c.done = make(chan struct{})
		go c.loop(c.done)
	}
	return true
}

// take removes about n pending charges: up to n, and then every other
// charge that names the same earlier try (prev) as one taken. The charges
// of one failed try must go in one Charge call: the run that counts the
// first of them enters the try in the run window, and a later run would
// take the rest for counted already.
func (c *Charges) take(n int) []pendingCharge {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]pendingCharge, 0, min(n, len(c.pending)))
	prevs := map[int64]struct{}{}
	for k, p := range c.pending {
		if len(out) == n {
			break
		}
		out = append(out, *p)
		c.requests.Add(-p.n)
		delete(c.pending, k)
		if k.prev != 0 {
			prevs[k.prev] = struct{}{}
		}
	}
	if len(prevs) == 0 || len(c.pending) == 0 {
		return out
	}
	for k, p := range c.pending {
		if _, ok := prevs[k.prev]; ok {
			out = append(out, *p)
			c.requests.Add(-p.n)
			delete(c.pending, k)
		}
	}
	return out
}

// loop sends the pending charges when kicked and every Interval, until
// none is pending or Close; after a failed try it tries again once its
// backoff has passed (minBackoff, doubling up to Interval).
func (c *Charges) loop(done chan struct{}) {
	defer close(done)
	t := time.NewTicker(c.opts.Interval)
	defer t.Stop()
	var backoff time.Duration
	for {
		if backoff == 0 {
			select {
			case <-c.stop:
				return
			case <-c.kick:
			case <-t.C:
			}
		} else {
			w := time.NewTimer(backoff)
			select {
			case <-c.stop:
				w.Stop()
				return
			case <-w.C:
			}
		}
		if err := c.send(context.Background()); err != nil {
			backoff = min(max(2*backoff, minBackoff), c.opts.Interval)
		} else {
			backoff = 0
		}
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
		ps := c.take(batch)
		if len(ps) == 0 {
			break
		}
		var n int64
		chs := make([]limit.Charge, len(ps))
		for i, p := range ps {
			chs[i] = p.ch
			n += p.n
		}
		c.sending.Add(n)
		kept, err := c.charger.Charge(ctx, chs)
		for _, ch := range kept {
			c.put(ch, weight(ps, chs, ch))
		}
		c.sending.Add(-n)
		if err != nil {
			c.failures.Add(1)
			last = err
			break // not answering: the next tick tries again
		}
	}
	return last
}

// weight returns the requests the kept charge ch stands for: those of the
// sent charge of the same request (by Req), else 1.
func weight(ps []pendingCharge, chs []limit.Charge, ch limit.Charge) int64 {
	for i := range chs {
		if chs[i].Req == ch.Req {
			return ps[i].n
		}
	}
	return 1
}

// Pending returns the requests admitted without a decision, or settled,
// whose charge is not counted yet (a Charge in flight included), and how
// many were dropped because MaxPending charges were pending.
func (c *Charges) Pending() (pending, dropped int64) {
	return c.sending.Load() + c.requests.Load(), c.dropped.Load()
}

// Failures returns how many tries of pending charges failed so far (they
// were tried again).
func (c *Charges) Failures() int64 { return c.failures.Load() }

// Close stops the loop and tries the pending charges one last time; what
// it cannot count is lost (logged: the node's last outage admissions and
// settles).
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
	if c.requests.Load() == 0 {
		return
	}
	err := c.send(ctx)
	if n := c.requests.Load(); n > 0 {
		c.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "engine: requests admitted while the limiter did not answer, or settled, were not charged before the node stopped",
			slog.Int64("requests", n), slog.Any("error", err))
	}
}
