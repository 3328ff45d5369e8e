package engine

import (
	"fmt"
	"math/big"
	"time"

	"tollgate/limit"
	"tollgate/plans"
)

// ruleModel is an in-Go reference of rules.lua: each algorithm's state in
// exact arithmetic (math/big for the token bucket, through model, and the
// sliding window's estimate; integers elsewhere), the all-or-nothing
// decision of a request's rules, and their undo. It mirrors the
// documented rules (EPS, whole-µs turns of LEAKY_BUCKET, leases of
// CONCURRENCY members) but none of the script's float arithmetic.
type ruleModel struct {
	*model
	sw map[string]*modelWindow
	fw map[string]*modelWindow
	cc map[string]map[hold]int64 // member → lease end (µs)
	lb map[string]int64          // tat (µs)
	qt map[string]*modelWindow   // start: the kept period start (Unix s), curr: the count
}

type modelWindow struct{ start, prev, curr int64 }

func newRuleModel() *ruleModel {
	return &ruleModel{model: newModel(), sw: map[string]*modelWindow{}, fw: map[string]*modelWindow{},
		cc: map[string]map[hold]int64{}, lb: map[string]int64{}, qt: map[string]*modelWindow{}}
}

// ruleCheck is the model's check of one rule: its result, and the commit
// that charges it (nil when it refuses).
type ruleCheck struct {
	res    ruleResult
	commit func()
}

// check decides rule r at now (µs) without charging it.
func (m *ruleModel) check(r *keyedRule, now int64, leaseUS int64) *ruleCheck {
	switch r.Rule.Algorithm {
	case limit.TokenBucket:
		return m.checkTB(r, now)
	case limit.SlidingWindow:
		return m.checkSW(r, now)
	case limit.FixedWindow:
		return m.checkFW(r, now)
	case limit.Concurrency:
		return m.checkCC(r, now, leaseUS)
	case limit.CalendarQuota:
		return m.checkQT(r, now)
	default:
		return m.checkLB(r, now)
	}
}

func (m *ruleModel) checkTB(r *keyedRule, now int64) *ruleCheck {
	bk := keyedBucket{Key: r.Key, RateLimit: r.Rule.RateLimit, BurstLimit: r.Rule.BurstLimit}
	toks, _ := m.tokens(bk, now)
	at := now
	if s := m.buckets[r.Key]; s != nil && now < s.l+ttlUS(s.t, s.r, s.b) && s.l > now {
		at = s.l
	}
	report := func(c *ruleCheck, t *big.Rat) {
		c.res[2] = floorRat(new(big.Rat).Add(t, ratEps))
		full := untilFull(t, bk.RateLimit, bk.BurstLimit)
		if full > 0 {
			full += at - now
		}
		c.res[3] = full
	}
	c := &ruleCheck{res: ruleResult{1, 0, 0, 0, 0}}
	report(c, toks)
	if toks.Cmp(ratOneEps) < 0 {
		c.res[0], c.res[1] = 0, -1
		if bk.RateLimit > 0 {
			x := new(big.Rat).Sub(big.NewRat(1, 1), toks)
			x.Mul(x, ratUS)
			x.Quo(x, ratFloat(bk.RateLimit))
			c.res[1] = max(1, at-now+ceilRat(x))
		}
		return c
	}
	c.commit = func() {
		left := new(big.Rat).Sub(toks, big.NewRat(1, 1))
		if left.Sign() < 0 {
			left = new(big.Rat)
		}
		m.buckets[r.Key] = &modelBucket{t: left, l: at, r: bk.RateLimit, b: bk.BurstLimit}
		report(c, left)
	}
	return c
}

// window returns the sliding or fixed window state of key at the current
// window start cur.
func (m *ruleModel) window(states map[string]*modelWindow, key string, cur, w int64, sliding bool) modelWindow {
	s := states[key]
	switch {
	case s == nil:
	case s.start == cur:
		return *s
	case sliding && s.start == cur-w:
		return modelWindow{start: cur, prev: s.curr}
	}
	return modelWindow{start: cur}
}

func (m *ruleModel) checkSW(r *keyedRule, now int64) *ruleCheck {
	w, lim := r.Rule.Window.Microseconds(), int64(r.Rule.Limit)
	cur := now / w * w
	s := m.window(m.sw, r.Key, cur, w, true)
	elapsed := now - cur
	// est = prev * (w - elapsed) / w + curr
	est := new(big.Rat).Mul(big.NewRat(s.prev, 1), big.NewRat(w-elapsed, w))
	est.Add(est, big.NewRat(s.curr, 1))
	room := new(big.Rat).Sub(big.NewRat(lim, 1), est) // limit - est
	c := &ruleCheck{res: ruleResult{1, 0, max(0, floorRat(ratMax0(new(big.Rat).Add(room, ratEps)))), cur + w - now, cur}}
	if new(big.Rat).Add(room, ratEps).Cmp(big.NewRat(1, 1)) < 0 { // est + 1 > limit + EPS
		c.res[0], c.res[1] = 0, modelSlidingRetry(s.prev, s.curr, elapsed, w, lim)
		return c
	}
	c.commit = func() {
		m.sw[r.Key] = &modelWindow{start: cur, prev: s.prev, curr: s.curr + 1}
		c.res[2] = max(0, floorRat(ratMax0(new(big.Rat).Add(new(big.Rat).Sub(room, big.NewRat(1, 1)), ratEps))))
	}
	return c
}

// modelSlidingRetry is rules.lua's sliding_retry in exact arithmetic.
func modelSlidingRetry(prev, curr, elapsed, w, lim int64) int64 {
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

func ratMax0(x *big.Rat) *big.Rat {
	if x.Sign() < 0 {
		return new(big.Rat)
	}
	return x
}

func (m *ruleModel) checkFW(r *keyedRule, now int64) *ruleCheck {
	w, lim := r.Rule.Window.Microseconds(), int64(r.Rule.Limit)
	cur := now / w * w
	s := m.window(m.fw, r.Key, cur, w, false)
	c := &ruleCheck{res: ruleResult{1, 0, max(0, lim-s.curr), cur + w - now, cur}}
	if s.curr+1 > lim {
		c.res[0], c.res[1] = 0, -1
		if lim >= 1 {
			c.res[1] = c.res[3]
		}
		return c
	}
	c.commit = func() {
		m.fw[r.Key] = &modelWindow{start: cur, curr: s.curr + 1}
		c.res[2] = lim - s.curr - 1
	}
	return c
}

func (m *ruleModel) checkCC(r *keyedRule, now, leaseUS int64) *ruleCheck {
	set := m.cc[r.Key]
	for x, end := range set {
		if end <= now {
			delete(set, x)
		}
	}
	n, lim := int64(len(set)), int64(r.Rule.Limit)
	c := &ruleCheck{res: ruleResult{1, 0, max(0, lim-n), -1, 0}}
	if n+1 > lim {
		c.res[0], c.res[1] = 0, -1
		if lim >= 1 {
			c.res[1] = 1_000_000
		}
		return c
	}
	c.commit = func() {
		if m.cc[r.Key] == nil {
			m.cc[r.Key] = map[hold]int64{}
		}
		m.cc[r.Key][r.hold] = now + leaseUS
		c.res[2] = lim - n - 1
	}
	return c
}

func (m *ruleModel) checkLB(r *keyedRule, now int64) *ruleCheck {
	turn := leakyTurnUS(r.Rule.RateLimit)
	start := max(now, m.lb[r.Key])
	delay := start - now
	longest := min(r.Rule.MaxDelay.Microseconds(), int64(r.Rule.BurstLimit)*turn)
	left := func(wait int64) int64 {
		if wait > longest {
			return 0
		}
		return (longest-wait)/turn + 1
	}
	c := &ruleCheck{res: ruleResult{1, 0, left(delay), delay, delay}}
	if delay > longest {
		c.res[0], c.res[1] = 0, delay-longest
		return c
	}
	c.commit = func() {
		m.lb[r.Key] = start + turn
		c.res[2], c.res[3] = left(delay+turn), delay+turn
	}
	return c
}

// checkQT counts as the plan quota of model: the period of now
// (plans.Quota.Bounds), a later period resetting the count.
func (m *ruleModel) checkQT(r *keyedRule, now int64) *ruleCheck {
	start, end := plans.Quota{Period: r.Rule.Period, Offset: r.Rule.Offset}.Bounds(time.UnixMicro(now))
	kept, used, lim := start.Unix(), int64(0), int64(r.Rule.Limit)
	if s := m.qt[r.Key]; s != nil && s.start >= kept {
		kept, used = s.start, s.curr
	}
	c := &ruleCheck{res: ruleResult{1, 0, max(0, lim-used), end.UnixMicro() - now, kept}}
	if used+1 > lim {
		c.res[0], c.res[1] = 0, end.UnixMicro()-now
		return c
	}
	c.commit = func() {
		m.qt[r.Key] = &modelWindow{start: kept, curr: used + 1}
		c.res[2] = lim - used - 1
	}
	return c
}

// take decides a request's rules at now, all or nothing (charging them
// when every non-shadow rule admits), and returns their results, whether
// they admit, the retry of the first refusing one and the undo of what it
// charged.
func (m *ruleModel) take(rules []keyedRule, now, leaseUS int64) ([]ruleResult, bool, int64, func()) {
	checks := make([]*ruleCheck, len(rules))
	admit, retry := true, int64(0)
	for i := range rules {
		checks[i] = m.check(&rules[i], now, leaseUS)
		if admit && !rules[i].Rule.Shadow && checks[i].res[0] != 1 {
			admit, retry = false, checks[i].res[1]
		}
	}
	var undos []func()
	res := make([]ruleResult, len(rules))
	for i := range rules {
		if admit && checks[i].commit != nil {
			checks[i].commit()
			undos = append(undos, m.undoer(&rules[i], checks[i].res[4], now))
		}
		res[i] = checks[i].res
	}
	return res, admit, retry, func() {
		for _, u := range undos {
			u()
		}
	}
}

// undoer returns the undo of a charge of r (aux: the window it went into)
// as rules.lua's op "unrules", to run at the same now.
func (m *ruleModel) undoer(r *keyedRule, aux, now int64) func() {
	return func() {
		switch r.Rule.Algorithm {
		case limit.TokenBucket:
			s := m.buckets[r.Key]
			bk := keyedBucket{Key: r.Key, RateLimit: s.r, BurstLimit: s.b}
			toks, _ := m.tokens(bk, now)
			toks = new(big.Rat).Add(toks, big.NewRat(1, 1))
			if toks.Cmp(big.NewRat(int64(s.b), 1)) >= 0 {
				delete(m.buckets, r.Key)
				return
			}
			m.buckets[r.Key] = &modelBucket{t: toks, l: max(now, s.l), r: s.r, b: s.b}
		case limit.SlidingWindow, limit.FixedWindow:
			states := m.sw
			if r.Rule.Algorithm == limit.FixedWindow {
				states = m.fw
			}
			if s := states[r.Key]; s != nil && s.start == aux && s.curr > 0 {
				s.curr--
			}
		case limit.Concurrency:
			delete(m.cc[r.Key], r.hold)
		case limit.CalendarQuota:
			if s := m.qt[r.Key]; s != nil && s.start == aux && s.curr > 0 {
				s.curr--
			}
		case limit.LeakyBucket:
			tat := m.lb[r.Key] - leakyTurnUS(r.Rule.RateLimit)
			if tat <= now {
				delete(m.lb, r.Key)
			} else {
				m.lb[r.Key] = tat
			}
		}
	}
}

// decide is the reference decision of a request with rules: its buckets
// in check order with the rules' outcome as the rule bucket, then the
// quota; what refuses charges nothing (the rules are undone).
func (m *ruleModel) decide(now time.Time, req *keyedRequest, leaseUS int64) (limit.Decision, []ruleResult) {
	us := now.UnixMicro()
	res, rulesOK, rulesRetry, undo := m.take(req.Rules, us, leaseUS)
	real := &keyedRequest{Quota: req.Quota, UsageKey: req.UsageKey}
	refusedRule := -1
	for _, bk := range req.Buckets {
		if bk.Level == limit.LevelRule {
			refusedRule = len(real.Buckets)
			continue
		}
		real.Buckets = append(real.Buckets, bk)
	}
	d := limit.Decision{Now: time.UnixMicro(us).UTC()}
	toks := make([]*big.Rat, len(real.Buckets))
	rebase := make([]bool, len(real.Buckets))
	refused := -1
	for i, bk := range real.Buckets {
		toks[i], rebase[i] = m.tokens(bk, us)
		if refused < 0 && toks[i].Cmp(ratOneEps) < 0 {
			refused, d.Refused = i, bk.Level
		}
	}
	if refused < 0 && refusedRule >= 0 && !rulesOK {
		refused, d.Refused = len(real.Buckets)+1, limit.LevelRule
	}
	var used int64
	var qStart, qEnd, qStored time.Time
	if q := real.Quota; q != nil {
		qStart, qEnd = plans.Quota{Period: q.Period, Offset: q.Offset}.Bounds(d.Now)
		qStored = qStart
		if s := m.quotas[q.Key]; s != nil && !s.start.Before(qStart) {
			used, qStored = s.used, s.start
		}
		if refused < 0 && used+1 > int64(q.Limit) {
			refused, d.Refused = len(real.Buckets), limit.LevelQuota
		}
	}
	d.Allowed = refused < 0
	switch {
	case d.Allowed:
		m.charge(real, toks, us, &used, qStored, d.Now, 1)
	case d.Refused == limit.LevelRule:
		m.rebase(real, toks, rebase, us)
		if rulesRetry < 0 {
			d.NoRetry = true
		} else {
			d.RetryAfter = time.Duration(rulesRetry) * time.Microsecond
		}
	default:
		m.rebase(real, toks, rebase, us)
		m.retry(&d, real, toks, refused, qEnd)
		undo()
	}
	m.states(&d, real, toks, used, qStart, qEnd)
	return d, res
}

// rebase stores the rebased state of every bucket that must be (a refusal
// under changed limits).
func (m *ruleModel) rebase(req *keyedRequest, toks []*big.Rat, rebase []bool, us int64) {
	for i, bk := range req.Buckets {
		if rebase[i] {
			m.buckets[bk.Key] = &modelBucket{t: toks[i], l: us, r: bk.RateLimit, b: bk.BurstLimit}
		}
	}
}

// release ends member x of key (rules.lua's op "unrules", CONCURRENCY).
func (m *ruleModel) release(x hold) { delete(m.cc[x.key], x) }

func (w modelWindow) String() string { return fmt.Sprintf("[%d %d %d]", w.start, w.prev, w.curr) }
