package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrRedisDown is the error (wrapped) of a decision that was not sent
// because Redis is down: the last run of this node failed without a reply
// (connection refused or broken, or no reply within the run's deadline).
// For Options.Timeout after such a failure, and while a run that tries
// Redis again is in flight (with a deadline of Options.Timeout), decisions
// fail at once with it instead of waiting; then the next batch tries Redis
// again. The caller's failure
// mode decides; with Options.FailOpen the request is charged later.
var ErrRedisDown = errors.New("redis is down")

// runStarted counts a run in flight.
func (e *Engine) runStarted() { e.inFlight.Add(1) }

// runEnded ends a run that decided live: Redis is up again when any call
// was answered by Redis (a decision, or an error reply), down otherwise.
func (e *Engine) runEnded(live []*call) {
	replied := false
	for _, c := range live {
		if c.err == nil || isReply(c.err) {
			replied = true
			break
		}
	}
	if replied {
		e.downAt.Store(0)
	} else {
		e.downAt.Store(time.Now().UnixNano())
	}
	e.inFlight.Add(-1)
}

// isReply reports whether err is an error reply of Redis (it answered).
func isReply(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// down returns ErrRedisDown, wrapped with how long ago the last run
// failed, when a decision is not to be sent now (see ErrRedisDown), nil
// when it is.
func (e *Engine) down(now time.Time) error {
	at := e.downAt.Load()
	if at == 0 {
		return nil
	}
	since := now.Sub(time.Unix(0, at))
	if since < e.timeout || e.inFlight.Load() > 0 {
		return fmt.Errorf("%w (last run failed %v ago)", ErrRedisDown, since.Round(time.Millisecond))
	}
	return nil
}

// abandon gives up on c for its caller, who left: while c is queued, or
// once sent unless it has along commands (their replies are read by the
// caller, so it waits for the run). It reports whether c was abandoned;
// if not, c is or will be answered.
func (c *call) abandon() bool {
	if c.state.CompareAndSwap(callQueued, callAbandoned) {
		return true
	}
	return c.along == nil && c.state.CompareAndSwap(callSent, callAbandoned)
}

// maxChargeKeys bounds the pending charges: distinct (quota, usage) keys
// with requests admitted without a decision and not charged yet. A
// request of a key beyond it is not charged (counted in
// Engine.DroppedCharges).
const maxChargeKeys = 10000

// charges holds the quota and usage units of requests admitted without a
// decision (Options.FailOpen), by key, until Redis answers again; then
// each flush puts up to a batch's free places of them at the head of its
// batch, as decisions without buckets under a quota limit that always
// admits: the quota and usage count them, in the period and day current
// when they land. Buckets are not charged: they refill with time, and
// charging them after an outage would refuse later requests for it.
type charges struct {
	mu      sync.Mutex
	pending map[string]*pendingCharge
	units   atomic.Int64 // sum of pending n
	dropped atomic.Int64
}

// pendingCharge is the units of one key not charged yet.
type pendingCharge struct {
	req keyedRequest
	q   keyedQuota
	n   int64
}

// add queues one unit of req's quota and usage (nothing when it has
// neither).
func (ch *charges) add(req *keyedRequest) {
	if req.Quota == nil && req.UsageKey == "" {
		return
	}
	id := req.UsageKey
	if req.Quota != nil {
		id += "\x00" + req.Quota.Key
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	p := ch.pending[id]
	if p == nil {
		if len(ch.pending) >= maxChargeKeys {
			ch.dropped.Add(1)
			return
		}
		if ch.pending == nil {
			ch.pending = map[string]*pendingCharge{}
		}
		p = &pendingCharge{req: keyedRequest{UsageKey: req.UsageKey}}
		if q := req.Quota; q != nil {
			p.q = keyedQuota{Key: q.Key, Limit: math.MaxInt32, Period: q.Period, Offset: q.Offset}
			p.req.Quota = &p.q
		}
		ch.pending[id] = p
	}
	p.n++
	ch.units.Add(1)
}

// take returns up to limit charge calls under clock, none unless Redis
// answered the last run.
func (ch *charges) take(limit int, clock string, answering bool) []*call {
	if limit <= 0 || !answering || ch.units.Load() == 0 {
		return nil
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	var out []*call
	for id, p := range ch.pending {
		for p.n > 0 && len(out) < limit {
			out = append(out, &call{ctx: context.Background(), req: &p.req, clock: clock, done: make(chan struct{}), charge: true})
			p.n--
			ch.units.Add(-1)
		}
		if p.n == 0 {
			delete(ch.pending, id)
		}
		if len(out) == limit {
			break
		}
	}
	return out
}

// settleCall ends c after its batch: a charge that failed goes back to
// the pending charges; with Options.FailOpen a request whose decision
// failed, and whose caller is still there (so admits it), is charged. A
// run that failed after it was sent may still have run in Redis (a lost
// reply): then a request it admitted is counted twice.
func (e *Engine) settleCall(c *call) {
	switch {
	case c.charge:
		if c.err != nil {
			e.charges.add(c.req)
		}
	case e.failOpen && c.answered && !c.lost && c.err != nil && c.ctx.Err() == nil:
		e.charges.add(c.req)
	}
}

// PendingCharges returns the units of quota and usage of requests
// admitted without a decision that are not charged yet, and how many were
// dropped because maxChargeKeys keys were pending.
func (e *Engine) PendingCharges() (pending, dropped int64) {
	return e.charges.units.Load(), e.charges.dropped.Load()
}
