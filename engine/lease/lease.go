// Package lease is the limiter layer of capacity leases (docs/leases.md):
// a hot request shape (the same key, plan, stage, buckets and TOKEN_BUCKET,
// FIXED_WINDOW and SLIDING_WINDOW rules) takes several units of each of
// its limits in the decision that admits it (limit.Request.Want), and the
// node admits further requests of that shape against the rest, without a
// round trip, for at most the lease lifetime L; then it gives back what it
// did not spend, with the usage of what it did (Unleaser.Unlease).
//
// Exactness (docs/leases.md has the contract and its proof):
//   - a lease never outlives the quota period, the UTC day, nor the
//     window of a window rule it was taken in: the take's reply gives
//     Redis's time, and the node ends the lease before that boundary by
//     its own clock, counted from the take's send (Redis read its time
//     after the send, so the node errs early); the requests spent on it
//     are counted on the take's day;
//   - a refusal while leases may still give units of the refusing level
//     back (limit.Decision.LeaseWait) is not final: the node admits it on
//     its own lease of the shape, or waits for the units to come back and
//     decides once more, so a burst is never under-admitted for units a
//     lease held and did not spend;
//   - a shape is leased only while its requests overlap on the node (two
//     decisions in progress at once within overlapWindow): a caller that
//     waits for each answer is decided in Redis each time and sees
//     X-RateLimit-Remaining fall by one per request, whatever the number
//     of nodes.
package lease

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"tollgate/limit"
	"tollgate/plans"
)

// DefaultLifetime is a lease's lifetime L when Options.Lifetime is 0.
const DefaultLifetime = 100 * time.Millisecond

// MaxLifetime is the longest lifetime a lease may have: the contract's
// L ≤ 100 ms; a longer Options.Lifetime is cut to it.
const MaxLifetime = 100 * time.Millisecond

const (
	// minWant is the smallest lease a node asks for: a shape whose recent
	// rate would spend fewer requests in half a lifetime (under 80 req/s
	// at 100 ms) gets none and is decided per request.
	minWant = 4
	// maxWant is the largest lease a node asks for (the script packs the
	// count in 16 bits).
	maxWant = 4096
	// maxEntries bounds the table of shapes: a shape arriving while it is
	// full is decided per request.
	maxEntries = 64 << 10
	// giveBackTimeout bounds one give-back run.
	giveBackTimeout = time.Second
	// idle is how long a shape with no lease stays in the table after its
	// last request; a sweep drops older ones.
	idle = 2 * time.Second
	// slowPause is how long a node asks for no lease after a take's round
	// trip took over half a lifetime (its leases would arrive nearly
	// spent, and their units be out of reach while they go back).
	slowPause = time.Second
	// giveBackBatch is the most leases one give-back run ends.
	giveBackBatch = 1024
	// overlapWindow is how recently two decisions of a shape must have
	// been in progress at once for the shape to take a lease.
	overlapWindow = time.Second
	// maxBuckets is the most buckets a leased shape has (plan, stage,
	// account).
	maxBuckets = 4
	// maxRules is the most rate-limit rules a leased shape has.
	maxRules = 4
)

// Unleaser gives back ended leases: the engine below the layers.
type Unleaser interface {
	Unlease(ctx context.Context, returns []limit.Return) error
}

// Options configures a Table; the zero value gives the defaults.
type Options struct {
	// Lifetime is L; 0 means DefaultLifetime; at most MaxLifetime.
	Lifetime time.Duration
	// Logger receives failed give-backs; nil means slog.Default().
	Logger *slog.Logger
	// Clock is the node's clock; nil means time.Now. Tests step one.
	Clock func() time.Time
}

// Table is a node's capacity leases: per request shape, the shape's recent
// rate and its open lease. Create it with New; Layer stacks it on a
// decider. Safe for concurrent use.
type Table struct {
	unleaser Unleaser
	life     time.Duration
	log      *slog.Logger
	now      func() time.Time

	mu     sync.Mutex
	m      map[shape]*entry
	ended  []*lease // to give back, by the give-back goroutine
	gen    uint64   // bumped by Void: a take in flight across it is ended at once
	swept  time.Time
	closed bool
	// slowUntil: no lease is asked for before it (node clock)
	slowUntil time.Time
	// running is true while the give-back goroutine runs; idle closes when
	// it stops.
	running bool
	idleCh  chan struct{}
	// admitted and takes count requests admitted on a lease and the
	// leases asked for; open and unspent are the leases installed and
	// their units left (Collectors).
	admitted, takes uint64
	open, unspent   int
}

// shape names the limits of a request: its key, plan, stage, buckets,
// rules (each rule's state: its counter and the value counted), whether
// it has a quota and a customer quota, and its customer (their state is
// what a lease takes from).
type shape struct {
	keyID, planID, api, stage string
	customerID                string
	quota, customer           bool
	uncounted                 bool
	n, nr                     int
	levels                    [maxBuckets]limit.Level
	methods, paths            [maxBuckets]string
	counters, values          [maxRules]string
}

// entry is one shape's rate estimate, decisions in progress and open
// lease.
type entry struct {
	slot      time.Time // start of the current counting slot (one lifetime long)
	cur, prev int       // requests in the current and the previous slot
	seen      time.Time // the last request
	// inProgress counts the shape's decisions below this layer; overlap
	// is when one started while another was in progress
	inProgress int
	overlap    time.Time
	taking     chan struct{} // a take in flight: closed when it is done
	open       *lease
}

// lease is capacity a node took for one shape.
type lease struct {
	req     limit.Request // the shape and the limits it was taken under (own copy)
	taken   int32         // tokens of every bucket and units of the quota taken
	left    int32         // not spent yet
	spent   int32         // admitted locally (usage to count)
	expires time.Time     // node clock
	sent    time.Time     // node clock: the send of the take
	take    limit.Decision
	// keepQuota: the quota's unspent units are not given back (the quota
	// was set meanwhile: UpdateUsage).
	keepQuota bool
	timer     *time.Timer
}

// New returns an empty lease table that gives back through unleaser.
func New(unleaser Unleaser, opts Options) *Table {
	if opts.Lifetime <= 0 {
		opts.Lifetime = DefaultLifetime
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	return &Table{unleaser: unleaser, life: min(opts.Lifetime, MaxLifetime), log: opts.Logger, now: opts.Clock, m: map[shape]*entry{}}
}

// Lifetime returns L.
func (t *Table) Lifetime() time.Duration { return t.life }

// Layer stacks the table on next (limit.Layer).
func (t *Table) Layer(next limit.Decider) limit.Decider { return &decider{t: t, next: next} }

type decider struct {
	t    *Table
	next limit.Decider
}

// shapeOf returns req's shape; ok is false when req cannot take a lease:
// it has a CONCURRENCY, LEAKY_BUCKET or CALENDAR_QUOTA rule (decided per
// request: docs/leases.md), more buckets or rules than a shape holds, no
// limit at all, or a cost other than one unit (decided in Redis every
// time: docs/cost.md). A request that reads the stage
// cache with its decision (req.Along) takes leases as any other: admitted
// on a lease, it leaves the read undone, and the engine's DecideLookup
// reads in a round trip of its own (no script run).
func shapeOf(req *limit.Request) (s shape, ok bool) {
	if len(req.Rules) > maxRules || len(req.Buckets) > maxBuckets ||
		(len(req.Buckets) == 0 && req.Quota == nil && req.CustomerQuota == nil) || req.Units() != 1 {
		return s, false
	}
	s = shape{keyID: req.KeyID, planID: req.PlanID, api: req.API, stage: req.Stage, customerID: req.CustomerID,
		quota: req.Quota != nil, customer: req.CustomerQuota != nil, uncounted: req.Uncounted, n: len(req.Buckets), nr: len(req.Rules)}
	for i := range req.Buckets {
		b := &req.Buckets[i]
		s.levels[i], s.methods[i], s.paths[i] = b.Level, b.Method, b.Path
	}
	for i := range req.Rules {
		r := &req.Rules[i]
		if !leasable(r.Algorithm) {
			return s, false
		}
		s.counters[i], s.values[i] = r.Counter, r.Value
	}
	return s, true
}

// Decide admits req on its shape's open lease when it can; else it asks
// next, asking for a lease when the shape is hot and its requests overlap.
// A refusal while leases may give units back (Decision.LeaseWait) is
// admitted on this node's lease of the shape, or decided once more after
// the wait.
func (d *decider) Decide(ctx context.Context, req *limit.Request) (limit.Decision, error) {
	t := d.t
	s, ok := shapeOf(req)
	if !ok {
		return d.next.Decide(ctx, req)
	}
	dec, local, want, gen := t.admit(&s, req, t.now())
	if local {
		return dec, nil
	}
	dec, err := d.central(ctx, &s, req, want, gen)
	waited := time.Duration(0)
	if req.Along != nil && dec.LeaseWait > 0 { // the first decision did the cache read: once is enough
		r := *req
		r.Along = nil
		req = &r
	}
	for err == nil && !dec.Allowed && dec.LeaseWait > 0 && waited < dec.LeaseWait+t.life {
		if dec2, ok := t.admitAfterRefusal(ctx, &s, req); ok {
			return dec2, nil
		}
		pause := min(dec.LeaseWait, t.life) + t.life/10
		if sleep(ctx, pause) != nil {
			return dec, nil
		}
		waited += pause
		dec, err = d.central(ctx, &s, req, 1, 0)
	}
	return dec, err
}

// central decides req below the layer, taking a lease of want units when
// want is more than 1 (gen: the table's generation when it was asked for).
func (d *decider) central(ctx context.Context, s *shape, req *limit.Request, want int32, gen uint64) (limit.Decision, error) {
	t := d.t
	sent := t.now()
	t.started(s, sent)
	var dec limit.Decision
	var err error
	if want > 1 {
		r := *req
		r.Want = want
		dec, err = d.next.Decide(ctx, &r)
		t.taken(s, req, sent, gen, &dec, err)
	} else {
		dec, err = d.next.Decide(ctx, req)
	}
	t.finished(s)
	return dec, err
}

// started counts a decision of s in progress below, noting an overlap.
func (t *Table) started(s *shape, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if en := t.m[*s]; en != nil {
		if en.inProgress > 0 {
			en.overlap = now
		}
		en.inProgress++
	}
}

// finished ends a decision of s in progress below.
func (t *Table) finished(s *shape) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if en := t.m[*s]; en != nil && en.inProgress > 0 {
		en.inProgress--
	}
}

// sameLimits reports whether req asks for the limits l was taken under (a
// lower limit, or any change, voids the lease).
func (l *lease) sameLimits(req *limit.Request) bool {
	if req.Version != l.req.Version || len(req.Buckets) != len(l.req.Buckets) || (req.Quota == nil) != (l.req.Quota == nil) ||
		!slices.Equal(req.Rules, l.req.Rules) {
		return false
	}
	for i := range req.Buckets {
		a, b := &req.Buckets[i], &l.req.Buckets[i]
		if a.RateLimit != b.RateLimit || a.BurstLimit != b.BurstLimit {
			return false
		}
	}
	return (req.Quota == nil || *req.Quota == *l.req.Quota) && req.CustomerID == l.req.CustomerID &&
		(req.CustomerQuota == nil) == (l.req.CustomerQuota == nil) && (req.CustomerQuota == nil || *req.CustomerQuota == *l.req.CustomerQuota)
}

// admit decides req on its shape's open lease at node time now: local when
// the lease had a unit left for it (then dec is the decision). Otherwise
// it returns the lease to take: want more than 1 when the shape is hot,
// its requests overlap and no take is in flight (the caller then decides
// req below and hands the outcome to taken, with gen, the table's
// generation now).
func (t *Table) admit(s *shape, req *limit.Request, now time.Time) (dec limit.Decision, local bool, want int32, gen uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	gen = t.gen
	if t.closed {
		return dec, false, 1, gen
	}
	en := t.m[*s]
	if en == nil {
		if now.Sub(t.swept) > idle {
			t.sweep(now)
		}
		if len(t.m) >= maxEntries {
			return dec, false, 1, gen
		}
		en = &entry{slot: now}
		t.m[*s] = en
	}
	rate := en.count(now, t.life)
	if dec, ok := t.spend(en, req, now); ok {
		return dec, true, 0, gen
	}
	want = 1
	if en.taking == nil && !now.Before(t.slowUntil) && now.Sub(en.overlap) < overlapWindow {
		if w := rate * t.life.Seconds() / 2; w >= minWant {
			want = int32(min(w, maxWant))
			en.taking = make(chan struct{})
			t.takes++
		}
	}
	return dec, false, want, gen
}

// spend admits req on en's open lease when it has a unit left, is not
// expired and was taken under req's limits; an unusable lease is ended.
// Under t.mu.
func (t *Table) spend(en *entry, req *limit.Request, now time.Time) (limit.Decision, bool) {
	l := en.open
	if l == nil {
		return limit.Decision{}, false
	}
	if l.left > 0 && now.Before(l.expires) && l.sameLimits(req) {
		l.left--
		l.spent++
		t.admitted++
		t.unspent--
		dec := l.decision(now)
		if l.left == 0 {
			t.end(en, l)
		}
		return dec, true
	}
	t.end(en, l)
	return limit.Decision{}, false
}

// admitAfterRefusal admits req on this node's lease of its shape after a
// refusal that leases may answer: when a take of the shape is in flight it
// waits for it first.
func (t *Table) admitAfterRefusal(ctx context.Context, s *shape, req *limit.Request) (limit.Decision, bool) {
	t.mu.Lock()
	en := t.m[*s]
	var taking chan struct{}
	if en != nil {
		taking = en.taking
	}
	t.mu.Unlock()
	if en == nil {
		return limit.Decision{}, false
	}
	if taking != nil {
		select {
		case <-taking:
		case <-ctx.Done():
			return limit.Decision{}, false
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.spend(en, req, t.now())
}

// count counts a request at now and returns the shape's recent rate
// (requests per second over the current and the previous slot).
func (en *entry) count(now time.Time, slot time.Duration) float64 {
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
// (l.left already counts it): the take's, with the node's unspent part of
// the lease counted as remaining and now moved on by the time since.
func (l *lease) decision(now time.Time) limit.Decision {
	d := l.take
	d.Now = d.Now.Add(now.Sub(l.sent))
	d.Granted = 1
	credit(&d, int64(l.left))
	return d
}

// credit counts n units a node holds on a lease as remaining in d's header
// states and rule outcomes (copies: d's may be shared).
func credit(d *limit.Decision, n int64) {
	if d.Rules != nil {
		rules := slices.Clone(d.Rules)
		for i := range rules {
			rules[i].State.Remaining += n
		}
		d.Rules = rules
	}
	states := [...]**limit.State{&d.Plan, &d.Quota, &d.Customer}
	k := 0
	for _, st := range states {
		if *st != nil {
			k++
		}
	}
	if k == 0 {
		return
	}
	copies := make([]limit.State, 0, k) // one allocation for every copy
	for _, st := range states {
		if *st != nil {
			copies = append(copies, **st)
			c := &copies[len(copies)-1]
			c.Remaining += n
			*st = c
		}
	}
}

// leasable reports whether a rule of algorithm a may lease: its units can
// be taken several at a time and given back (docs/leases.md, "Rate-limit
// rules").
func leasable(a limit.Algorithm) bool {
	return a == limit.TokenBucket || a == limit.FixedWindow || a == limit.SlidingWindow
}

// boundary returns when a lease taken by decision d of req must end in
// Redis time: the end of its quota's or customer quota's period, of the
// window of each window rule (its outcome's Reset), or of the UTC day of
// d.Now, whichever comes first (usage is counted per UTC day; a window's
// count per window).
func boundary(d *limit.Decision, req *limit.Request) time.Time {
	end := d.Now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	for _, q := range []*limit.State{d.Quota, d.Customer} {
		if q != nil && q.Reset.Before(end) {
			end = q.Reset
		}
	}
	for i := range req.Rules {
		if a := req.Rules[i].Algorithm; a != limit.FixedWindow && a != limit.SlidingWindow {
			continue
		}
		if i >= len(d.Rules) || d.Rules[i].State.Reset.IsZero() {
			return d.Now // no window end known: no lease
		}
		if d.Rules[i].State.Reset.Before(end) {
			end = d.Rules[i].State.Reset
		}
	}
	return end
}

// periodStart returns the start of the quota period a lease taken by
// decision d took its units in (the customer quota's when the key has no
// quota of its own; the customer's own otherwise is
// Return.CustomerPeriodStart); zero without either.
func periodStart(d *limit.Decision) time.Time {
	if q := cmp.Or(d.Quota, d.Customer); q != nil {
		return q.Reset.Add(-q.Window)
	}
	return time.Time{}
}

// taken hands the outcome of a decision of s that asked for a lease, sent
// at node time sent, to the table: an admitted decision that took more
// than one opens the shape's lease with the rest, and d's remaining counts
// them. gen is the table's generation when the take was asked for: a Void
// since ends the new lease at once.
func (t *Table) taken(s *shape, req *limit.Request, sent time.Time, gen uint64, d *limit.Decision, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	en := t.m[*s]
	if en != nil && en.taking != nil {
		defer close(en.taking)
		en.taking = nil
	}
	now := t.now()
	if now.Sub(sent) > t.life/2 {
		t.slowUntil = now.Add(slowPause)
	}
	if err != nil || !d.Allowed || d.Granted <= 1 {
		return
	}
	// ends before the boundary by the node's clock: Redis read d.Now after
	// sent, so sent + (boundary − d.Now) is never later than the boundary
	life := min(t.life, boundary(d, req).Sub(d.Now))
	if i := len(req.Buckets) + len(req.Rules); d.Customer != nil && i < len(d.TakenAt) {
		// a customer quota in a slot of its own (Redis Cluster): its
		// period's end by its own master's clock, from its own take
		life = min(life, d.Customer.Reset.Sub(d.TakenAt[i]))
	}
	expires := sent.Add(life)
	l := &lease{req: *req, taken: d.Granted, left: d.Granted - 1, sent: sent, expires: expires, take: *d}
	l.req.Buckets = append([]limit.Bucket(nil), req.Buckets...)
	l.req.Rules = slices.Clone(req.Rules)
	l.req.Along = nil
	if req.Quota != nil {
		q := *req.Quota
		l.req.Quota = &q
	}
	if req.CustomerQuota != nil {
		q := *req.CustomerQuota
		l.req.CustomerQuota = &q
	}
	l.take.Granted = 1
	credit(d, int64(l.left))
	if en == nil || t.closed || gen != t.gen || !now.Before(expires) {
		t.end(nil, l)
		return
	}
	if en.open != nil {
		t.end(en, en.open)
	}
	en.open = l
	t.open++
	t.unspent += int(l.left)
	l.timer = time.AfterFunc(expires.Sub(now), func() {
		t.mu.Lock()
		if en.open == l {
			t.end(en, l)
		}
		t.mu.Unlock()
	})
}

// end ends lease l of entry en (nil: not installed): it is queued for the
// give-back. Under t.mu.
func (t *Table) end(en *entry, l *lease) {
	if en != nil && en.open == l {
		en.open = nil
		t.open--
		t.unspent -= int(l.left)
	}
	if l.timer != nil {
		l.timer.Stop()
	}
	t.ended = append(t.ended, l)
	if !t.running {
		t.running = true
		t.idleCh = make(chan struct{})
		go t.giveBack()
	}
}

// sweep drops entries idle for idle with nothing open. Under t.mu.
func (t *Table) sweep(now time.Time) {
	t.swept = now
	for k, en := range t.m {
		if en.open == nil && en.taking == nil && en.inProgress == 0 && now.Sub(en.seen) > idle {
			delete(t.m, k)
		}
	}
}

// void ends every open lease whose request match selects (nil: all), and
// moves the generation on, so a take in flight ends at once. keepQuota
// keeps the quota units of the ended leases (the quota was set since).
func (t *Table) void(match func(*limit.Request) bool, keepQuota bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.gen++
	for _, en := range t.m {
		if l := en.open; l != nil && (match == nil || match(&l.req)) {
			l.keepQuota = keepQuota
			t.end(en, l)
		}
	}
}

// ForgetChange ends every open lease on a config change
// (push.ReaderOptions.OnEvent): a disabled key or a lowered limit gives
// its leases back at once (docs/leases.md).
func (t *Table) ForgetChange(plans.Change) { t.void(nil, false) }

// ForgetUsage ends the open leases of keyID in planID without giving
// their quota units back: the quota was set since the take (UpdateUsage;
// push.ReaderOptions.OnUsage).
func (t *Table) ForgetUsage(planID, keyID string) {
	t.void(func(r *limit.Request) bool { return r.KeyID == keyID && r.PlanID == planID }, true)
}

// ForgetAll ends every open lease (push.ReaderOptions.OnReload).
func (t *Table) ForgetAll() { t.void(nil, false) }

// giveBack gives back the ended leases, up to giveBackBatch per run, until
// none is left; then it stops.
func (t *Table) giveBack() {
	for {
		t.mu.Lock()
		n := min(len(t.ended), giveBackBatch)
		batch := append([]*lease(nil), t.ended[:n]...)
		t.ended = t.ended[n:]
		if len(batch) == 0 {
			t.running = false
			close(t.idleCh)
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
		returns := make([]limit.Return, len(batch))
		spent := 0
		for i, l := range batch {
			returns[i] = limit.Return{Req: &l.req, Taken: l.taken, Unspent: l.left, Spent: l.spent,
				At: l.take.Now, KeepQuota: l.keepQuota, TakenAt: l.take.TakenAt}
			returns[i].PeriodStart = periodStart(&l.take)
			if c := l.take.Customer; c != nil { // its own period: the plan's, whatever the key's
				returns[i].CustomerPeriodStart = c.Reset.Add(-c.Window)
			}
			spent += int(l.spent)
		}
		ctx, cancel := context.WithTimeout(context.Background(), giveBackTimeout)
		if err := t.unleaser.Unlease(ctx, returns); err != nil {
			t.log.LogAttrs(ctx, slog.LevelWarn,
				"engine: giving back capacity leases failed; their unspent tokens are lost until the buckets refill, and the usage of their requests is not counted",
				slog.Int("leases", len(batch)), slog.Int("requests", spent), slog.String("error", err.Error()))
		}
		cancel()
	}
}

// Close ends every lease, stops taking new ones and waits until the
// give-backs were sent.
func (t *Table) Close() {
	t.void(nil, false)
	t.mu.Lock()
	t.closed = true
	idleCh, running := t.idleCh, t.running
	t.mu.Unlock()
	if running {
		<-idleCh
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}
