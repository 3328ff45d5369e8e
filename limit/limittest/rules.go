package limittest

import (
	"math/big"
	"time"

	"tollgate/limit"
)

// The model of rate-limit rules (docs/rules.md): each algorithm's state in
// exact arithmetic (math/big for the token bucket and the sliding window's
// estimate; integers elsewhere). It mirrors the documented rules (EPS,
// whole-µs turns of LEAKY_BUCKET, leases of CONCURRENCY members) but none
// of the script's float arithmetic.

// window is a sliding or fixed window's state, or (qt) a calendar quota's:
// start the kept period start (Unix s), curr the count; a window's leases
// out and their end (µs), as a bucket's.
type window struct {
	start, prev, curr int64
	leases            int
	leased            int64
}

// member is one request in flight of a CONCURRENCY rule.
type member struct{ seq int64 }

// ruleState holds every rule's state, by rule and value.
type ruleState struct {
	tb  map[string]*bucket
	sw  map[string]*window
	fw  map[string]*window
	cc  map[string]map[member]int64 // member → lease end (µs)
	lb  map[string]int64            // tat (µs)
	qt  map[string]*window
	seq int64
}

func (rs *ruleState) init() {
	if rs.tb == nil {
		rs.tb, rs.sw, rs.fw, rs.qt = map[string]*bucket{}, map[string]*window{}, map[string]*window{}, map[string]*window{}
		rs.cc, rs.lb = map[string]map[member]int64{}, map[string]int64{}
	}
}

// ruleName names rule r's state for its value.
func ruleName(r *limit.Rule) string { return r.Counter + "\x00" + r.Value }

// ruleCheck is the model's check of one rule: its raw result, and the
// commit that charges it (nil when it refuses).
type ruleCheck struct {
	res    limit.RuleResult
	commit func()
	member *member // CONCURRENCY: the member the commit adds
	// room is what a lease may take a quarter of: a TOKEN_BUCKET rule's
	// tokens, a window's limit less its count (a sliding window's
	// estimate); nil for the algorithms that take no lease
	// (docs/leases.md)
	room *big.Rat
	// leaseWait is, on a refusal, how long leases of the rule's state may
	// still hold its units (µs)
	leaseWait int64
	// k and leased are set before the commit: the units it takes (0
	// means 1) and, for a lease, when it ends (µs; 0 none)
	k, leased int64
}

// checkRule decides rule r at now (µs) without charging it.
func (m *Model) checkRule(r *limit.Rule, now int64) *ruleCheck {
	switch r.Algorithm {
	case limit.TokenBucket:
		return m.checkTB(r, now)
	case limit.SlidingWindow:
		return m.checkWindow(r, now, true)
	case limit.FixedWindow:
		return m.checkWindow(r, now, false)
	case limit.Concurrency:
		return m.checkCC(r, now)
	case limit.CalendarQuota:
		return m.checkQT(r, now)
	default:
		return m.checkLB(r, now)
	}
}

func (m *Model) checkTB(r *limit.Rule, now int64) *ruleCheck {
	name := ruleName(r)
	s := m.rules.tb[name]
	toks, _ := tokens(s, r.RateLimit, r.BurstLimit, now)
	at := now
	if s != nil && now < s.l+ttlUS(s.t, s.r, s.b) && s.l > now {
		at = s.l
	}
	c := &ruleCheck{res: limit.RuleResult{Admitted: true}, room: toks}
	report := func(t *big.Rat) {
		c.res.Remaining = floorRat(new(big.Rat).Add(t, ratEps))
		full := untilFull(t, r.RateLimit, r.BurstLimit)
		if full > 0 {
			full += at - now
		}
		c.res.ResetUS = full
	}
	report(toks)
	if toks.Cmp(ratOneEps) < 0 {
		c.res.Admitted, c.res.RetryUS = false, -1
		if r.RateLimit > 0 {
			x := new(big.Rat).Sub(big.NewRat(1, 1), toks)
			x.Mul(x, ratUS)
			x.Quo(x, ratFloat(r.RateLimit))
			c.res.RetryUS = max(1, at-now+ceilRat(x))
		}
		if s != nil && s.leases > 0 && s.leased > now {
			c.leaseWait = s.leased - now
		}
		return c
	}
	c.commit = func() {
		left := new(big.Rat).Sub(toks, big.NewRat(max(c.k, 1), 1))
		if left.Sign() < 0 {
			left = new(big.Rat)
		}
		nb := &bucket{t: left, l: at, r: r.RateLimit, b: r.BurstLimit}
		if s != nil {
			nb.leases, nb.leased = s.leases, s.leased
		}
		leaseOut(&nb.leases, &nb.leased, now, c.leased)
		m.rules.tb[name] = nb
		report(left)
	}
	return c
}

// windowAt returns the window state of name at the current window start
// cur.
func windowAt(states map[string]*window, name string, cur, w int64, sliding bool) window {
	s := states[name]
	switch {
	case s == nil:
	case s.start == cur:
		return *s
	case sliding && s.start == cur-w:
		return window{start: cur, prev: s.curr, leases: s.leases, leased: s.leased}
	}
	return window{start: cur}
}

func ratMax0(x *big.Rat) *big.Rat {
	if x.Sign() < 0 {
		return new(big.Rat)
	}
	return x
}

func (m *Model) checkWindow(r *limit.Rule, now int64, sliding bool) *ruleCheck {
	name, w, lim := ruleName(r), r.Window.Microseconds(), int64(r.Limit)
	cur := now / w * w
	states := m.rules.fw
	if sliding {
		states = m.rules.sw
	}
	s := windowAt(states, name, cur, w, sliding)
	c := &ruleCheck{res: limit.RuleResult{Admitted: true, ResetUS: cur + w - now, Aux: cur}}
	if s.leases > 0 && s.leased > now {
		c.leaseWait = s.leased - now // used on a refusal only
	}
	// commit charges k units (c.k), counting a lease out
	commit := func() int64 {
		k, nw := max(c.k, 1), s
		nw.curr += k
		leaseOut(&nw.leases, &nw.leased, now, c.leased)
		states[name] = &nw
		return k
	}
	if !sliding {
		c.res.Remaining, c.room = max(0, lim-s.curr), big.NewRat(lim-s.curr, 1)
		if s.curr+1 > lim {
			c.res.Admitted, c.res.RetryUS = false, -1
			if lim >= 1 {
				c.res.RetryUS = c.res.ResetUS
			}
			return c
		}
		c.commit = func() { c.res.Remaining = lim - s.curr - commit() }
		return c
	}
	elapsed := now - cur
	// est = prev * (w - elapsed) / w + curr
	est := new(big.Rat).Mul(big.NewRat(s.prev, 1), big.NewRat(w-elapsed, w))
	est.Add(est, big.NewRat(s.curr, 1))
	room := new(big.Rat).Sub(big.NewRat(lim, 1), est) // limit - est
	c.room = room
	c.res.Remaining = max(0, floorRat(ratMax0(new(big.Rat).Add(room, ratEps))))
	if new(big.Rat).Add(room, ratEps).Cmp(big.NewRat(1, 1)) < 0 { // est + 1 > limit + EPS
		c.res.Admitted, c.res.RetryUS = false, slidingRetry(s.prev, s.curr, elapsed, w, lim)
		return c
	}
	c.commit = func() {
		k := commit()
		c.res.Remaining = max(0, floorRat(ratMax0(new(big.Rat).Add(new(big.Rat).Sub(room, big.NewRat(k, 1)), ratEps))))
	}
	return c
}

// slidingRetry is the script's sliding_retry in exact arithmetic.
func slidingRetry(prev, curr, elapsed, w, lim int64) int64 {
	if lim < 1 {
		return -1
	}
	if curr+1 <= lim {
		// w * (1 - (lim - 1 - curr)/prev) - elapsed
		x := new(big.Rat).Sub(big.NewRat(1, 1), big.NewRat(lim-1-curr, prev))
		x.Mul(x, big.NewRat(w, 1))
		x.Sub(x, big.NewRat(elapsed, 1))
		return max(1, ceilRat(x))
	}
	need := new(big.Rat).Sub(big.NewRat(1, 1), big.NewRat(lim-1, curr))
	need.Mul(need, big.NewRat(w, 1))
	x := ratMax0(need)
	x.Add(x, big.NewRat(w-elapsed, 1))
	return max(1, ceilRat(x))
}

func (m *Model) checkCC(r *limit.Rule, now int64) *ruleCheck {
	name := ruleName(r)
	set := m.rules.cc[name]
	for x, end := range set {
		if end <= now {
			delete(set, x)
		}
	}
	n, lim := int64(len(set)), int64(r.Limit)
	c := &ruleCheck{res: limit.RuleResult{Admitted: true, Remaining: max(0, lim-n), ResetUS: -1}}
	if n+1 > lim {
		c.res.Admitted, c.res.RetryUS = false, -1
		if lim >= 1 {
			c.res.RetryUS = 1_000_000
		}
		return c
	}
	m.rules.seq++
	c.member = &member{seq: m.rules.seq}
	c.commit = func() {
		if m.rules.cc[name] == nil {
			m.rules.cc[name] = map[member]int64{}
		}
		m.rules.cc[name][*c.member] = now + m.concurrencyLease().Microseconds()
		c.res.Remaining = lim - n - 1
	}
	return c
}

func (m *Model) concurrencyLease() time.Duration {
	if m.ConcurrencyLease > 0 {
		return m.ConcurrencyLease
	}
	return 30 * time.Second
}

func (m *Model) checkLB(r *limit.Rule, now int64) *ruleCheck {
	name, turn := ruleName(r), r.LeakyTurnUS()
	start := max(now, m.rules.lb[name])
	delay := start - now
	longest := min(r.MaxDelay.Microseconds(), int64(r.BurstLimit)*turn)
	left := func(wait int64) int64 {
		if wait > longest {
			return 0
		}
		return (longest-wait)/turn + 1
	}
	c := &ruleCheck{res: limit.RuleResult{Admitted: true, Remaining: left(delay), ResetUS: delay, Aux: delay}}
	if delay > longest {
		c.res.Admitted, c.res.RetryUS = false, delay-longest
		return c
	}
	c.commit = func() {
		m.rules.lb[name] = start + turn
		c.res.Remaining, c.res.ResetUS = left(delay+turn), delay+turn
	}
	return c
}

// checkQT counts as a plan quota: the period of now (package calendar),
// a later period resetting the count.
func (m *Model) checkQT(r *limit.Rule, now int64) *ruleCheck {
	name := ruleName(r)
	start, end := (&limit.Quota{Period: r.Period, Offset: r.Offset}).Calendar().Bounds(time.UnixMicro(now))
	kept, used, lim := start.Unix(), int64(0), int64(r.Limit)
	if s := m.rules.qt[name]; s != nil && s.start >= kept {
		kept, used = s.start, s.curr
	}
	c := &ruleCheck{res: limit.RuleResult{Admitted: true, Remaining: max(0, lim-used), ResetUS: end.UnixMicro() - now, Aux: kept}}
	if used+1 > lim {
		c.res.Admitted, c.res.RetryUS = false, end.UnixMicro()-now
		return c
	}
	c.commit = func() {
		m.rules.qt[name] = &window{start: kept, curr: used + 1}
		c.res.Remaining = lim - used - 1
	}
	return c
}

// checkRules checks every rule of req at now: their checks, whether they
// admit (every rule that is not shadow), the retry of the first that
// refuses and its index.
func (m *Model) checkRules(req *limit.Request, now int64) (checks []*ruleCheck, ok bool, retryUS int64, first int) {
	m.rules.init()
	ok, first = true, -1
	for i := range req.Rules {
		r := &req.Rules[i]
		c := m.checkRule(r, now)
		checks = append(checks, c)
		if ok && !r.Shadow && !c.res.Admitted {
			ok, retryUS, first = false, c.res.RetryUS, i
		}
	}
	return checks, ok, retryUS, first
}

// ruleLease caps a lease of k units by the rules' checks: a quarter of
// every TOKEN_BUCKET rule's tokens; 1 when a rule cannot lease or would
// refuse (a shadow rule).
func ruleLease(checks []*ruleCheck, k int64) int64 {
	for _, c := range checks {
		if k <= 1 {
			break
		}
		if c.room == nil || !c.res.Admitted {
			return 1
		}
		share := new(big.Rat).Add(c.room, ratEps)
		k = min(k, floorRat(share.Quo(share, big.NewRat(leaseShare, 1))))
	}
	return k
}

// commitRules charges the rules of an admitted request and fills d's rule
// outcomes, Delay, Release and GiveBack; for a refused one only the
// outcomes.
func (m *Model) commitRules(d *limit.Decision, req *limit.Request, checks []*ruleCheck, now int64) {
	if len(req.Rules) == 0 {
		return
	}
	d.Rules = make([]limit.RuleOutcome, len(req.Rules))
	var held []func()
	var turns []*limit.Rule
	for i := range req.Rules {
		r, c := &req.Rules[i], checks[i]
		if d.Allowed && c.commit != nil {
			c.commit()
			if r.Algorithm == limit.Concurrency {
				name, x := ruleName(r), *c.member
				held = append(held, func() { delete(m.rules.cc[name], x) })
			}
			if r.Algorithm == limit.LeakyBucket {
				turns = append(turns, r)
			}
		}
		d.Rules[i] = r.Outcome(c.res, d.Now)
		if d.Allowed && c.res.Admitted && r.Algorithm == limit.LeakyBucket && !r.Shadow {
			d.Delay = max(d.Delay, d.Rules[i].Delay)
		}
	}
	if len(held) > 0 {
		d.Release = func() {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, f := range held {
				f()
			}
		}
	}
	if d.Delay > 0 {
		d.GiveBack = func() {
			m.mu.Lock()
			defer m.mu.Unlock()
			at := m.Clock().UnixMicro()
			for _, r := range turns {
				name := ruleName(r)
				if tat := m.rules.lb[name] - r.LeakyTurnUS(); tat <= at {
					delete(m.rules.lb, name)
				} else {
					m.rules.lb[name] = tat
				}
			}
		}
	}
}

// giveBackWindow ends lease rt on the window rule r's state at us: its
// unspent units go back to the window holding the take's time while the
// state counts it (a sliding window's previous one once it moved on).
func (m *Model) giveBackWindow(r *limit.Rule, rt *limit.Return, us int64) {
	sliding := r.Algorithm == limit.SlidingWindow
	states, name, w := m.rules.fw, ruleName(r), max(r.Window.Microseconds(), 1)
	if sliding {
		states = m.rules.sw
	}
	if states[name] == nil {
		return
	}
	cur, charged := us/w*w, rt.At.UnixMicro()/w*w
	s := windowAt(states, name, cur, w, sliding)
	switch {
	case charged == cur:
		s.curr = max(0, s.curr-int64(rt.Unspent))
	case sliding && charged == cur-w:
		s.prev = max(0, s.prev-int64(rt.Unspent))
	default:
		return
	}
	s.leases = max(0, s.leases-1)
	states[name] = &s
}
