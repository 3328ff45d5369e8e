package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"tollgate/limit"
)

// DefaultLeaseLifetime is a capacity lease's lifetime L when
// Options.LeaseLifetime is 0 (docs/leases.md).
const DefaultLeaseLifetime = 100 * time.Millisecond

// MaxLeaseLifetime is the longest lifetime a lease may have: the contract's
// L ≤ 100 ms (docs/leases.md); a longer Options.LeaseLifetime is cut to it.
const MaxLeaseLifetime = 100 * time.Millisecond

const (
	// leaseMin is the smallest lease a node asks for: a key whose recent
	// rate would spend fewer requests in half a lifetime (under 80 req/s
	// at 100 ms) gets none and is decided per request.
	leaseMin = 4
	// leaseMax is the largest lease a node asks for (the script packs the
	// count in 16 bits).
	leaseMax = 4096
	// leaseEntries bounds the table of (shape → rate, lease): a shape
	// arriving while it is full is decided per request.
	leaseEntries = 64 << 10
	// leaseGiveBackTimeout bounds one give-back run.
	leaseGiveBackTimeout = time.Second
	// leaseIdle is how long a shape with no lease stays in the table after
	// its last request; a sweep drops older ones.
	leaseIdle = 2 * time.Second
	// leaseSlowPause is how long a node asks for no lease after a take's
	// round trip took over half a lifetime.
	leaseSlowPause = time.Second
	// leaseGiveBackBatch is the most leases one give-back run ends (each
	// names at most 5 keys, within the script's 16-bit key indexes).
	leaseGiveBackBatch = 1024
)

// leases is a node's table of capacity leases (docs/leases.md): per
// request shape (the Redis keys of its buckets and quota), the shape's
// recent rate and its open lease. A hot shape's decision takes more than
// one token and unit at once ("decide" with want > 1); the node then admits
// requests of that shape against the rest, without a round trip, until the
// lease is spent or its lifetime ends, and gives back what it did not
// spend (op "unlease", with the usage of what it spent). Safe for
// concurrent use.
type leases struct {
	e    *Engine
	life time.Duration

	mu     sync.Mutex
	m      map[string]*leaseEntry
	ended  []*lease // to give back, by the give-back goroutine
	gen    uint64   // bumped by void: a take in flight across it is ended at once
	swept  time.Time
	closed bool
	// slowUntil: no lease is asked for before it (node clock): a take's
	// round trip took over half a lifetime, so leases would arrive nearly
	// spent (a node whose own queue is that long gains nothing from them,
	// and their units would be out of reach while they go back).
	slowUntil time.Time
	// running is true while the give-back goroutine runs; idle closes
	// when it stops.
	running bool
	idle    chan struct{}
}

// leaseEntry is one shape's rate estimate and open lease.
type leaseEntry struct {
	slot      time.Time // start of the current counting slot (one lifetime long)
	cur, prev int       // requests in the current and the previous slot
	seen      time.Time // the last request
	taking    bool      // a decision that takes a lease is in flight
	open      *lease
}

// lease is capacity a node took for one shape.
type lease struct {
	req     keyedRequest // the shape and the limits it was taken under (own copies)
	version int64        // config version it was taken under
	taken   int32        // tokens of every bucket and units of the quota taken
	left    int32        // not spent yet
	spent   int32        // admitted locally (usage to count)
	expires time.Time    // node clock: the send of the take + lifetime
	sent    time.Time    // node clock: the send of the take
	res     [rLen]int64  // the take's reply (Redis time, headers)
	// keepQuota: the quota's unspent units are not given back (the quota
	// was set meanwhile: UpdateUsage).
	keepQuota bool
	timer     *time.Timer
}

// newLeases returns a lease table of lifetime life (> 0).
func newLeases(e *Engine, life time.Duration) *leases {
	return &leases{e: e, life: min(life, MaxLeaseLifetime), m: map[string]*leaseEntry{}}
}

// leasable reports whether req may be decided on a lease: no rules (rules
// are decided per request) and at least one limit.
func leasable(req *keyedRequest) bool {
	return len(req.Rules) == 0 && (len(req.Buckets) > 0 || req.Quota != nil)
}

// shapeKey names req's shape: its bucket and quota keys.
func shapeKey(buf []byte, req *keyedRequest) []byte {
	for i := range req.Buckets {
		buf = append(append(buf, req.Buckets[i].Key...), 0)
	}
	if req.Quota != nil {
		buf = append(buf, req.Quota.Key...)
	}
	return buf
}

// sameLimits reports whether req asks for the limits l was taken under
// (a lower limit, or any change, voids the lease).
func (l *lease) sameLimits(req *keyedRequest, version int64) bool {
	if version != l.version || len(req.Buckets) != len(l.req.Buckets) || (req.Quota == nil) != (l.req.Quota == nil) ||
		req.UsageKey != l.req.UsageKey {
		return false
	}
	for i := range req.Buckets {
		a, b := &req.Buckets[i], &l.req.Buckets[i]
		if a.RateLimit != b.RateLimit || a.BurstLimit != b.BurstLimit {
			return false
		}
	}
	return req.Quota == nil || *req.Quota == *l.req.Quota
}

// admit decides req on its shape's open lease, at node time now: ok when
// the lease had a token and unit left for it (then d is the decision).
// Otherwise it returns the lease to take, in req.Want: more than 1 when
// the shape is hot and no take is in flight (the caller then decides req
// centrally and hands the outcome to taken, with gen, the table's
// generation now).
func (ls *leases) admit(req *keyedRequest, version int64, now time.Time) (d limit.Decision, ok bool, gen uint64) {
	var buf [256]byte
	k := shapeKey(buf[:0], req)
	ls.mu.Lock()
	defer ls.mu.Unlock()
	gen = ls.gen
	if ls.closed {
		return d, false, gen
	}
	en := ls.m[string(k)]
	if en == nil {
		if now.Sub(ls.swept) > leaseIdle {
			ls.sweep(now)
		}
		if len(ls.m) >= leaseEntries {
			return d, false, gen
		}
		en = &leaseEntry{slot: now}
		ls.m[string(k)] = en
	}
	rate := en.count(now, ls.life)
	if l := en.open; l != nil {
		if l.left > 0 && now.Before(l.expires) && l.sameLimits(req, version) {
			l.left--
			l.spent++
			d = l.decision(now)
			if l.left == 0 {
				ls.end(en, l)
			}
			return d, true, gen
		}
		ls.end(en, l)
	}
	if !en.taking && !now.Before(ls.slowUntil) {
		if want := rate * ls.life.Seconds() / 2; want >= leaseMin {
			en.taking = true
			req.Want = uint16(min(want, leaseMax))
		}
	}
	return d, false, gen
}

// count counts a request at now and returns the shape's recent rate
// (requests per second over the current and the previous slot).
func (en *leaseEntry) count(now time.Time, slot time.Duration) float64 {
	el := now.Sub(en.slot)
	if el >= slot {
		if el >= 2*slot {
			en.prev = 0
		} else {
			en.prev = en.cur
		}
		en.cur, en.slot, el = 0, now, 0
	}
	en.cur++
	en.seen = now
	return float64(en.prev+en.cur) / (slot + el).Seconds()
}

// decision is the decision of a request admitted on l at node time now
// (l.left already counts it): the take's, with the node's unspent part
// of the lease counted as remaining and now moved on by the time since.
func (l *lease) decision(now time.Time) limit.Decision {
	d := parseDecision(&l.res, &l.req)
	d.Now = d.Now.Add(now.Sub(l.sent))
	credit(&d, int64(l.left))
	return d
}

// credit counts n tokens and units a node holds on a lease as remaining in
// d's header states.
func credit(d *limit.Decision, n int64) {
	if d.Plan != nil {
		d.Plan.Remaining += n
	}
	if d.Quota != nil {
		d.Quota.Remaining += n
	}
}

// taken hands the outcome of a decision that asked for a lease (req.Want >
// 1), sent at node time sent, to the table: res is the script's reply
// (nil: the decision was not sent), err its error. An admitted decision
// that took more than one opens the shape's lease with the rest, and d's
// remaining counts them. gen is the table's generation when the take was
// asked for: a void since ends the new lease at once.
func (ls *leases) taken(req *keyedRequest, version int64, sent time.Time, gen uint64, res *[rLen]int64, d *limit.Decision, err error) {
	var buf [256]byte
	k := shapeKey(buf[:0], req)
	ls.mu.Lock()
	defer ls.mu.Unlock()
	en := ls.m[string(k)]
	if en != nil {
		en.taking = false
	}
	if now := time.Now(); res != nil && now.Sub(sent) > ls.life/2 {
		ls.slowUntil = now.Add(leaseSlowPause)
	}
	if res == nil || err != nil || !d.Allowed || res[rGranted] <= 1 {
		return
	}
	l := &lease{version: version, taken: int32(res[rGranted]), left: int32(res[rGranted] - 1), sent: sent,
		expires: sent.Add(ls.life), res: *res}
	l.req = *req
	l.req.Buckets = append([]keyedBucket(nil), req.Buckets...)
	if req.Quota != nil {
		q := *req.Quota
		l.req.Quota = &q
	}
	credit(d, int64(l.left))
	if en == nil || ls.closed || gen != ls.gen {
		ls.end(nil, l)
		return
	}
	if en.open != nil {
		ls.end(en, en.open)
	}
	en.open = l
	l.timer = time.AfterFunc(time.Until(l.expires), func() {
		ls.mu.Lock()
		if en.open == l {
			ls.end(en, l)
		}
		ls.mu.Unlock()
	})
}

// end ends lease l of entry en (nil: not installed): it is queued for the
// give-back. Under ls.mu.
func (ls *leases) end(en *leaseEntry, l *lease) {
	if en != nil && en.open == l {
		en.open = nil
	}
	if l.timer != nil {
		l.timer.Stop()
	}
	ls.ended = append(ls.ended, l)
	if !ls.running {
		ls.running = true
		ls.idle = make(chan struct{})
		go ls.giveBack()
	}
}

// sweep drops entries idle for leaseIdle with nothing open. Under ls.mu.
func (ls *leases) sweep(now time.Time) {
	ls.swept = now
	for k, en := range ls.m {
		if en.open == nil && !en.taking && now.Sub(en.seen) > leaseIdle {
			delete(ls.m, k)
		}
	}
}

// void ends every open lease that match selects (nil: all), and any take
// in flight when match is nil or selects nothing in particular: the
// generation moves on. keepQuota keeps the quota units of the ended leases
// (the quota was set since).
func (ls *leases) void(match func(*lease) bool, keepQuota bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.gen++
	for _, en := range ls.m {
		if l := en.open; l != nil && (match == nil || match(l)) {
			l.keepQuota = keepQuota
			ls.end(en, l)
		}
	}
}

// giveBack sends the ended leases, one run of op "unlease" for all that
// are queued, until none is left; then it stops.
func (ls *leases) giveBack() {
	for {
		ls.mu.Lock()
		n := min(len(ls.ended), leaseGiveBackBatch)
		batch := append([]*lease(nil), ls.ended[:n]...)
		ls.ended = ls.ended[n:]
		if len(batch) == 0 {
			ls.running = false
			close(ls.idle)
			ls.mu.Unlock()
			return
		}
		ls.mu.Unlock()
		if err := ls.e.unlease(batch); err != nil {
			spent := 0
			for _, l := range batch {
				spent += int(l.spent)
			}
			slog.Default().LogAttrs(context.Background(), slog.LevelWarn,
				"engine: giving back capacity leases failed; their unspent tokens are lost until the buckets refill, and the usage of their requests is not counted",
				slog.Int("leases", len(batch)), slog.Int("requests", spent), slog.String("error", err.Error()))
		}
	}
}

// close ends every lease, stops taking new ones and waits until the
// give-backs were sent.
func (ls *leases) close() {
	ls.void(nil, false)
	ls.mu.Lock()
	ls.closed = true
	idle, running := ls.idle, ls.running
	ls.mu.Unlock()
	if running {
		<-idle
	}
}

// unlease gives back the unspent part of each lease of batch and counts
// the usage of what was spent, in one run of op "unlease" (single
// primary). The run is sent once (a charging run: see onceCmd); when it
// fails, the unspent tokens and units are lost (never over-admitted) and
// so is the usage of the spent requests (docs/leases.md states the bound).
func (e *Engine) unlease(batch []*lease) error {
	a := argsPool.Get().(*batchArgs)
	defer argsPool.Put(a)
	a.reset()
	le := binary.LittleEndian
	for _, l := range batch {
		// indexes first: usage after the states, as in op "decide"
		var qIdx, uIdx uint16
		if q := l.req.Quota; q != nil {
			qIdx = index(&a.state, a.stateIdx, q.Key)
		}
		if l.req.UsageKey != "" {
			uIdx = index(&a.usage, a.usageIdx, l.req.UsageKey)
		}
		s := append(a.spec, uint8(len(l.req.Buckets)))
		s = le.AppendUint16(s, qIdx)
		s = le.AppendUint16(s, uIdx)
		s = le.AppendUint32(s, uint32(l.spent))
		if qIdx > 0 {
			g := l.left
			if l.keepQuota {
				g = 0
			}
			s = le.AppendUint32(s, uint32(g))
			s = le.AppendUint64(s, math.Float64bits(float64(l.res[rQuotaStart])))
		}
		for i := range l.req.Buckets {
			s = le.AppendUint16(s, index(&a.state, a.stateIdx, l.req.Buckets[i].Key))
			s = le.AppendUint32(s, uint32(l.taken))
			s = le.AppendUint32(s, uint32(l.left))
			s = le.AppendUint64(s, math.Float64bits(float64(l.res[rNow])))
		}
		a.spec = s
	}
	keys := append(append(a.keys[:0], a.state...), a.usage...)
	changes := ""
	if len(a.usage) > 0 {
		keys = append(keys, e.changes0)
		changes = strconv.Itoa(len(keys))
	}
	a.keys = keys
	e.trips.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), max(e.timeout, leaseGiveBackTimeout))
	defer cancel()
	if err := e.runOnce(ctx, e.rdb, keys, []any{opUnlease, e.clockArg(), len(a.state), a.spec, changes}).Err(); err != nil {
		return fmt.Errorf("engine: lease give-back: %w", err)
	}
	return nil
}
