// Package limittest is the reference model of the limiter for tests: an
// exact, in-memory limit.Decider (token buckets in rational arithmetic,
// calendar quotas from package calendar, capacity leases, usage per UTC
// day) that mirrors the documented rules of the limiter script
// (docs/behaviour.md, "Throttles and quota"; docs/leases.md) but none of
// its float arithmetic or calendar code. The engine's property tests hold
// the script against it, and the limiter layers (engine/refusal,
// engine/lease, engine/failopen) are tested on it as their tiny core.
// Rate-limit rules are modelled too (rules.go), as one level of the
// decision after the buckets and before the quota. Costs (a request's
// units on its own limits) and customer quotas are modelled as
// docs/cost.md says.
package limittest

import (
	"context"
	"math/big"
	"sync"
	"time"

	"tollgate/limit"
	"tollgate/plans"
)

// Model is the reference limiter. Set Clock before use (the time of every
// decision); the zero LeaseHold means 200 ms. Safe for concurrent use.
type Model struct {
	Clock     func() time.Time
	LeaseHold time.Duration
	// ConcurrencyLease is how long a CONCURRENCY member counts; 0 means
	// 30 s.
	ConcurrencyLease time.Duration

	mu      sync.Mutex
	buckets map[string]*bucket
	quotas  map[string]*quota
	usage   map[string]map[string]int64 // usage name → day → requests
	units   map[string]map[string]int64 // usage name → day → their cost units
	rules   ruleState
	// Decisions counts the decisions made (Decide calls).
	decisions int64
}

type bucket struct {
	t      *big.Rat // tokens
	l      int64    // µs
	r      float64
	b      int32
	leases int   // leases holding tokens of it
	leased int64 // µs: they may hold them until then
}

type quota struct {
	start  time.Time
	used   int64
	leases int
	leased int64
}

// leaseOut counts a lease taken at us, ending at leased (0: none), into a
// level's leases and their end.
func leaseOut(leases *int, end *int64, us, leased int64) {
	if leased == 0 {
		return
	}
	if *end <= us {
		*leases = 0 // a dead node's leases are over
	}
	*leases++
	*end = max(*end, leased)
}

// names names the model's states, one per limit of a key, stage or
// account.
var names nameSpace

type nameSpace struct{}

func (nameSpace) PlanBucket(keyID, planID string) string { return "p\x00" + keyID + "\x00" + planID }
func (nameSpace) PlanMethodBucket(keyID, planID, api, stage, method, path string) string {
	return "m\x00" + keyID + "\x00" + planID + "\x00" + api + "\x00" + stage + "\x00" + method + "\x00" + path
}
func (nameSpace) StageBucket(api, stage, method, path string) string {
	return "s\x00" + api + "\x00" + stage + "\x00" + method + "\x00" + path
}
func (nameSpace) AccountBucket() string             { return "a" }
func (nameSpace) Quota(keyID, planID string) string { return "q\x00" + keyID + "\x00" + planID }
func (nameSpace) Usage(keyID, planID string) string { return "u\x00" + keyID + "\x00" + planID }

// customerQuota names req's customer quota: its customer's, or its key's
// when it has none.
func customerQuota(req *limit.Request) string {
	if req.CustomerID == "" {
		return "ck\x00" + req.KeyID + "\x00" + req.PlanID
	}
	return "c\x00" + req.CustomerID + "\x00" + req.PlanID
}

var (
	ratUS     = big.NewRat(1_000_000, 1)
	ratEps    = big.NewRat(1, 1_000_000_000)
	ratOneEps = new(big.Rat).Sub(big.NewRat(1, 1), ratEps)
	ratNs     = big.NewRat(1, 1000) // ceil tolerance, µs
)

// leaseShare is the script's LEASE_SHARE: a lease takes at most a quarter
// of what any level has left.
const leaseShare = 4

func (m *Model) init() {
	if m.buckets == nil {
		m.buckets, m.quotas, m.usage, m.units = map[string]*bucket{}, map[string]*quota{}, map[string]map[string]int64{}, map[string]map[string]int64{}
	}
}

// Decisions returns how many decisions the model made.
func (m *Model) Decisions() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.decisions
}

// bucketName names bucket b of req as the engine does.
func bucketName(req *limit.Request, b *limit.Bucket) string {
	switch b.Level {
	case limit.LevelPlan:
		return names.PlanBucket(req.KeyID, req.PlanID)
	case limit.LevelPlanMethod:
		return names.PlanMethodBucket(req.KeyID, req.PlanID, req.API, req.Stage, b.Method, b.Path)
	case limit.LevelStage:
		return names.StageBucket(req.API, req.Stage, b.Method, b.Path)
	default:
		return names.AccountBucket()
	}
}

func ratFloat(f float64) *big.Rat { return new(big.Rat).SetFloat64(f) }

// ceilRat returns ⌈x − 1/1000⌉ as the script's ceil_us.
func ceilRat(x *big.Rat) int64 {
	y := new(big.Rat).Sub(x, ratNs)
	q := new(big.Int).Quo(y.Num(), y.Denom()) // truncates toward zero
	if y.Sign() > 0 && !y.IsInt() {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64()
}

// floorRat returns ⌊x⌋ for x ≥ 0.
func floorRat(x *big.Rat) int64 { return new(big.Int).Quo(x.Num(), x.Denom()).Int64() }

// untilFull is the script's until_full in µs; -1 for never.
func untilFull(t *big.Rat, r float64, b int32) int64 {
	bb := big.NewRat(int64(b), 1)
	if t.Cmp(bb) >= 0 {
		return 0
	}
	if r <= 0 {
		return -1
	}
	x := new(big.Rat).Sub(bb, t)
	x.Mul(x, ratUS)
	return ceilRat(x.Quo(x, ratFloat(r)))
}

// ttlUS is the script's ttl_us.
func ttlUS(t *big.Rat, r float64, b int32) int64 {
	f := untilFull(t, r, b)
	if f < 0 {
		return 400 * 86400 * 1_000_000
	}
	return f + 1_000_000
}

func ratMin(a, b *big.Rat) *big.Rat {
	if a.Cmp(b) <= 0 {
		return a
	}
	return b
}

// tokens returns the tokens of state s at now under rate r and burst b,
// and whether s must be rebased to those limits.
func tokens(s *bucket, r float64, b int32, now int64) (*big.Rat, bool) {
	if s == nil || now >= s.l+ttlUS(s.t, s.r, s.b) {
		return big.NewRat(int64(b), 1), false
	}
	t := new(big.Rat).Set(s.t)
	if now > s.l {
		add := big.NewRat(now-s.l, 1_000_000)
		t.Add(t, add.Mul(add, ratFloat(s.r)))
		t = ratMin(t, big.NewRat(int64(s.b), 1))
	}
	t = ratMin(t, big.NewRat(int64(b), 1))
	return t, s.r != r || s.b != b
}

// Decide is the reference decision of req at Clock's time, taking
// req.Want units when admitted (a capacity lease above 1), each of
// req.Units() on its plan bucket, quota and customer quota.
func (m *Model) Decide(_ context.Context, req *limit.Request) (limit.Decision, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.init()
	m.decisions++
	hold := m.LeaseHold
	if hold <= 0 {
		hold = 200 * time.Millisecond
	}
	now := m.Clock()
	us := now.UnixMicro()
	d := limit.Decision{Now: time.UnixMicro(us).UTC()}
	n := len(req.Buckets)
	cost, plan := int64(req.Units()), planIndex(req)
	// need is the tokens bucket i must hold: one, or the cost on the plan
	// bucket (at most its burst)
	need := func(i int) *big.Rat {
		if i != plan {
			return big.NewRat(1, 1)
		}
		return big.NewRat(max(1, min(cost, int64(req.Buckets[i].BurstLimit))), 1)
	}
	toks, rebase, bnames := make([]*big.Rat, n), make([]bool, n), make([]string, n)
	refused := -1
	for i := range req.Buckets {
		bk := &req.Buckets[i]
		bnames[i] = bucketName(req, bk)
		toks[i], rebase[i] = tokens(m.buckets[bnames[i]], bk.RateLimit, bk.BurstLimit, us)
		if refused < 0 && new(big.Rat).Add(toks[i], ratEps).Cmp(need(i)) < 0 {
			refused, d.Refused = i, bk.Level
		}
	}
	checks, rulesOK, rulesRetry, firstRule := m.checkRules(req, us)
	rulesRefused := refused < 0 && !rulesOK
	if rulesRefused {
		refused, d.Refused, d.RefusedRule = n+1, limit.LevelRule, firstRule
	}
	keyed := req.KeyID != ""
	var used int64
	var qStart, qEnd, qStored time.Time
	qName := names.Quota(req.KeyID, req.PlanID)
	if q := req.Quota; keyed && q != nil {
		qStart, qEnd = q.Calendar().Bounds(d.Now)
		qStored = qStart
		if s := m.quotas[qName]; s != nil && !s.start.Before(qStart) {
			used, qStored = s.used, s.start
		}
		if refused < 0 && used+max(cost, 1) > int64(q.Limit) {
			refused, d.Refused = n, limit.LevelQuota
		}
	}
	var cused int64
	var cStored, cStart, cEnd time.Time
	cName := customerQuota(req)
	if cq := req.CustomerQuota; keyed && cq != nil {
		cStart, cEnd = cq.Calendar().Bounds(d.Now)
		cStored = cStart
		if s := m.quotas[cName]; s != nil && !s.start.Before(cStart) {
			cused, cStored = s.used, s.start
		}
		if refused < 0 && cused+max(cost, 1) > int64(cq.Limit) {
			refused, d.Refused = n+2, limit.LevelCustomer
		}
	}
	d.Allowed = refused < 0
	if d.Allowed {
		k := max(1, int64(req.Want))
		if cost != 1 {
			k = 1
		}
		k = max(ruleLease(checks, k), 1)
		if k > 1 {
			for i := range req.Buckets {
				share := new(big.Rat).Add(toks[i], ratEps)
				k = min(k, floorRat(share.Quo(share, big.NewRat(leaseShare, 1))))
			}
			if keyed && req.Quota != nil {
				k = min(k, (int64(req.Quota.Limit)-used)/leaseShare)
			}
			if keyed && req.CustomerQuota != nil {
				k = min(k, (int64(req.CustomerQuota.Limit)-cused)/leaseShare)
			}
			k = max(k, 1)
		}
		leased := int64(0)
		if k > 1 {
			leased = us + hold.Microseconds()
		}
		for _, c := range checks {
			c.k, c.leased = k, leased
		}
		for i := range req.Buckets {
			bk := &req.Buckets[i]
			if i == plan {
				toks[i] = new(big.Rat).Sub(toks[i], big.NewRat(k*cost, 1))
			} else if toks[i] = new(big.Rat).Sub(toks[i], big.NewRat(k, 1)); toks[i].Sign() < 0 {
				toks[i] = new(big.Rat)
			}
			nb := &bucket{t: toks[i], l: us, r: bk.RateLimit, b: bk.BurstLimit}
			if s := m.buckets[bnames[i]]; s != nil {
				nb.leases, nb.leased = s.leases, s.leased
			}
			leaseOut(&nb.leases, &nb.leased, us, leased)
			m.buckets[bnames[i]] = nb
		}
		if keyed && req.CustomerQuota != nil {
			cused += k * cost
			nq := &quota{start: cStored, used: cused}
			if s := m.quotas[cName]; s != nil {
				nq.leases, nq.leased = s.leases, s.leased
			}
			leaseOut(&nq.leases, &nq.leased, us, leased)
			m.quotas[cName] = nq
		}
		if keyed && req.Quota != nil {
			used += k * cost
			nq := &quota{start: qStored, used: used}
			if s := m.quotas[qName]; s != nil {
				nq.leases, nq.leased = s.leases, s.leased
			}
			leaseOut(&nq.leases, &nq.leased, us, leased)
			m.quotas[qName] = nq
		}
		if keyed && !req.Uncounted {
			m.count(names.Usage(req.KeyID, req.PlanID), d.Now, 1, cost)
		}
		d.Granted = int32(k)
	} else {
		for i := range req.Buckets {
			bk := &req.Buckets[i]
			if rebase[i] {
				s := m.buckets[bnames[i]]
				m.buckets[bnames[i]] = &bucket{t: toks[i], l: us, r: bk.RateLimit, b: bk.BurstLimit, leases: s.leases, leased: s.leased}
			}
		}
		if rulesRefused {
			if rulesRetry < 0 {
				d.NoRetry = true
			} else {
				d.RetryAfter = time.Duration(rulesRetry) * time.Microsecond
			}
			d.LeaseWait = time.Duration(checks[firstRule].leaseWait) * time.Microsecond
		} else {
			end := qEnd
			if refused == len(req.Buckets)+2 {
				end = cEnd // the customer quota's own period
			}
			m.retry(&d, req, toks, refused, end, bnames, qName, us, need)
		}
	}
	m.commitRules(&d, req, checks, us)
	m.states(&d, req, toks, used, qStart, qEnd)
	if cq := req.CustomerQuota; keyed && cq != nil {
		d.Customer = &limit.State{Limit: int64(cq.Limit), Remaining: max(0, int64(cq.Limit)-cused), Reset: cEnd, Window: cEnd.Sub(cStart)}
	}
	return d, nil
}

// count adds n requests of units cost units to day's count of the usage
// named name.
func (m *Model) count(name string, day time.Time, n, units int64) {
	if m.usage[name] == nil {
		m.usage[name], m.units[name] = map[string]int64{}, map[string]int64{}
	}
	m.usage[name][day.UTC().Format(plans.UsageDateLayout)] += n
	m.units[name][day.UTC().Format(plans.UsageDateLayout)] += units
}

func (m *Model) retry(d *limit.Decision, req *limit.Request, toks []*big.Rat, refused int, qEnd time.Time, bnames []string, qName string, us int64, need func(int) *big.Rat) {
	if refused == len(req.Buckets)+2 { // the customer quota
		d.RetryAfter = qEnd.Sub(d.Now)
		if s := m.quotas[customerQuota(req)]; s != nil && s.leases > 0 && s.leased > us {
			d.LeaseWait = time.Duration(s.leased-us) * time.Microsecond
		}
		return
	}
	if refused == len(req.Buckets) {
		d.RetryAfter = qEnd.Sub(d.Now)
		if s := m.quotas[qName]; s != nil && s.leases > 0 && s.leased > us {
			d.LeaseWait = time.Duration(s.leased-us) * time.Microsecond
		}
		return
	}
	if s := m.buckets[bnames[refused]]; s != nil && s.leases > 0 && s.leased > us {
		d.LeaseWait = time.Duration(s.leased-us) * time.Microsecond
	}
	bk := req.Buckets[refused]
	if bk.RateLimit <= 0 {
		d.NoRetry = true
		return
	}
	x := new(big.Rat).Sub(need(refused), toks[refused])
	x.Mul(x, ratUS)
	x.Quo(x, ratFloat(bk.RateLimit))
	d.RetryAfter = time.Duration(max(1, ceilRat(x))) * time.Microsecond
}

func (m *Model) states(d *limit.Decision, req *limit.Request, toks []*big.Rat, used int64, qStart, qEnd time.Time) {
	if i := planIndex(req); i >= 0 {
		bk := &req.Buckets[i]
		s := &limit.State{Limit: int64(bk.BurstLimit), Remaining: max(0, floorRat(new(big.Rat).Add(toks[i], ratEps)))}
		if f := untilFull(toks[i], bk.RateLimit, bk.BurstLimit); f >= 0 {
			s.Reset = d.Now.Add(time.Duration(f) * time.Microsecond)
		}
		if bk.RateLimit > 0 {
			s.Window = time.Duration(float64(bk.BurstLimit) / bk.RateLimit * float64(time.Second))
		}
		d.Plan = s
	}
	if q := req.Quota; q != nil && req.KeyID != "" {
		d.Quota = &limit.State{Limit: int64(q.Limit), Remaining: max(0, int64(q.Limit)-used), Reset: qEnd, Window: qEnd.Sub(qStart)}
	}
}

// planIndex is the index of req's plan or plan-method bucket, or -1.
func planIndex(req *limit.Request) int {
	for i := range req.Buckets {
		if req.Buckets[i].Level.PerKey() {
			return i
		}
	}
	return -1
}

// Unlease is the reference of the engine's Unlease at Clock's time: the
// quota gets its unspent units back unless it moved to another period (or
// KeepQuota), the customer quota likewise (whatever KeepQuota), each
// bucket and TOKEN_BUCKET rule min(unspent, taken − rate × held) tokens
// under the limits it is stored with, each window rule its unspent units
// in the window of the take (giveBackWindow), and usage counts what was
// spent on the take's day.
func (m *Model) Unlease(_ context.Context, returns []limit.Return) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.init()
	us := m.Clock().UnixMicro()
	for _, rt := range returns {
		req := rt.Req
		if q := req.Quota; q != nil && req.KeyID != "" {
			if s := m.quotas[names.Quota(req.KeyID, req.PlanID)]; s != nil && s.start.Equal(rt.PeriodStart) {
				if !rt.KeepQuota {
					s.used = max(0, s.used-int64(rt.Unspent))
				}
				s.leases = max(0, s.leases-1)
			}
		}
		if req.CustomerQuota != nil && req.KeyID != "" { // a usage update keeps only the key's own quota
			start := rt.PeriodStart
			if !rt.CustomerPeriodStart.IsZero() {
				start = rt.CustomerPeriodStart // its own period
			}
			if s := m.quotas[customerQuota(req)]; s != nil && s.start.Equal(start) {
				s.used, s.leases = max(0, s.used-int64(rt.Unspent)), max(0, s.leases-1)
			}
		}
		for i := range req.Buckets {
			giveBack(m.buckets, bucketName(req, &req.Buckets[i]), &rt, us)
		}
		m.rules.init()
		for i := range req.Rules {
			switch r := &req.Rules[i]; r.Algorithm {
			case limit.TokenBucket:
				giveBack(m.rules.tb, ruleName(r), &rt, us)
			case limit.FixedWindow, limit.SlidingWindow:
				m.giveBackWindow(r, &rt, us)
			}
		}
		if req.KeyID != "" && !req.Uncounted && rt.Spent > 0 {
			m.count(names.Usage(req.KeyID, req.PlanID), rt.At, int64(rt.Spent), int64(rt.Spent))
		}
	}
	return nil
}

// giveBack ends lease rt on the bucket states[name] at us: min(unspent,
// taken − rate × held) tokens back under the limits it is stored with.
func giveBack(states map[string]*bucket, name string, rt *limit.Return, us int64) {
	s := states[name]
	if s == nil || us >= s.l+ttlUS(s.t, s.r, s.b) {
		return
	}
	s.leases = max(0, s.leases-1)
	held := big.NewRat(max(0, us-rt.At.UnixMicro()), 1_000_000)
	back := new(big.Rat).Sub(big.NewRat(int64(rt.Taken), 1), held.Mul(held, ratFloat(s.r)))
	back = ratMin(back, big.NewRat(int64(rt.Unspent), 1))
	if back.Sign() <= 0 {
		return
	}
	t, _ := tokens(s, s.r, s.b, us)
	t = new(big.Rat).Add(t, back)
	if t.Cmp(big.NewRat(int64(s.b), 1)) >= 0 {
		delete(states, name)
		return
	}
	states[name] = &bucket{t: t, l: max(s.l, us), r: s.r, b: s.b, leases: s.leases, leased: s.leased}
}

// Charge counts each charge's units in the quota period and on the day of
// its At (the quotas only while that period is current); the model never
// loses a run, and a decision it failed never ran, so it counts them all:
// an admission's units, a settle's Units less Reserved (its whole Units
// for an undecided one) on the quota and the customer quota (never below
// 0), the difference on the plan bucket of a decided settle, and the
// requests in usage.
func (m *Model) Charge(_ context.Context, charges []limit.Charge) ([]limit.Charge, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.init()
	now := m.Clock()
	for _, ch := range charges {
		req := ch.Req
		if req.KeyID == "" {
			continue
		}
		at := ch.At
		if at.After(now) {
			at = now
		}
		units := int64(ch.Units)
		if ch.Kind == limit.ChargeSettle {
			units -= int64(ch.Reserved)
		}
		if q := req.Quota; q != nil && ch.Done&limit.PartKey == 0 {
			if start, end := q.Calendar().Bounds(at); end.After(now) {
				m.chargeQuota(names.Quota(req.KeyID, req.PlanID), start, units)
			}
		}
		// the customer quota in its own period (the plan's calendar)
		if cq := req.CustomerQuota; cq != nil && ch.Done&limit.PartCustomer == 0 && !(ch.CustomerTaken && ch.Kind == limit.ChargeAdmitted) {
			if start, end := cq.Calendar().Bounds(at); end.After(now) {
				m.chargeQuota(customerQuota(req), start, units)
			}
		}
		if b := req.PlanBucket(); b != nil && ch.Bucket && ch.Kind == limit.ChargeSettle && ch.Done&limit.PartKey == 0 {
			name := names.PlanBucket(req.KeyID, req.PlanID)
			if s := m.buckets[name]; s != nil {
				us := now.UnixMicro()
				t, _ := tokens(s, s.r, s.b, us)
				t = new(big.Rat).Sub(t, big.NewRat(units, 1))
				if t.Cmp(big.NewRat(int64(s.b), 1)) > 0 {
					t = big.NewRat(int64(s.b), 1)
				}
				m.buckets[name] = &bucket{t: t, l: max(s.l, us), r: s.r, b: s.b, leases: s.leases, leased: s.leased}
			}
		}
		n := int64(ch.Requests)
		if n == 0 && ch.Kind == limit.ChargeAdmitted {
			n = int64(ch.Units)
		}
		if n > 0 && ch.Done&limit.PartKey == 0 && (!req.Uncounted || ch.Kind != limit.ChargeAdmitted) {
			m.count(names.Usage(req.KeyID, req.PlanID), at, n, int64(ch.Units))
		}
	}
	return nil, nil
}

// chargeQuota adds units (never below 0 in total) to the quota named name
// in the period that starts at start.
func (m *Model) chargeQuota(name string, start time.Time, units int64) {
	s := m.quotas[name]
	if s == nil || s.start.Before(start) {
		s = &quota{start: start}
		m.quotas[name] = s
	}
	s.used = max(0, s.used+units)
}

// Usage returns the requests counted for keyID in planID on day's UTC date.
func (m *Model) Usage(keyID, planID string, day time.Time) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.usage[names.Usage(keyID, planID)][day.UTC().Format(plans.UsageDateLayout)]
}

// UsageDays returns every day's count of keyID in planID ("YYYY-MM-DD").
func (m *Model) UsageDays(keyID, planID string) map[string]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int64{}
	for d, n := range m.usage[names.Usage(keyID, planID)] {
		out[d] = n
	}
	return out
}

// UnitsDays returns every day's cost units of keyID in planID
// ("YYYY-MM-DD").
func (m *Model) UnitsDays(keyID, planID string) map[string]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int64{}
	for d, n := range m.units[names.Usage(keyID, planID)] {
		out[d] = n
	}
	return out
}

// QuotaUsed returns the units keyID used in planID's quota in the period
// the state holds.
func (m *Model) QuotaUsed(keyID, planID string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.quotas[names.Quota(keyID, planID)]; s != nil {
		return s.used
	}
	return 0
}

// HotRequest is the gateway's request of key "hot" in plan "p1": its plan
// bucket (rate, burst), stage and account buckets that never refuse in a
// test, and a DAY quota of quota units (none when 0).
func HotRequest(rate float64, burst, quota int32) *limit.Request {
	r := &limit.Request{KeyID: "hot", PlanID: "p1", API: "api1", Stage: "prod",
		Buckets: []limit.Bucket{{Level: limit.LevelPlan, RateLimit: rate, BurstLimit: burst},
			{Level: limit.LevelStage, RateLimit: 1e6, BurstLimit: 1 << 30, Method: "GET", Path: "/items"},
			{Level: limit.LevelAccount, RateLimit: 1e6, BurstLimit: 1 << 30}}}
	if quota > 0 {
		r.Quota = &limit.Quota{Limit: quota, Period: plans.PeriodDay}
	}
	return r
}

// HotRuleRequest is HotRequest limited by a TOKEN_BUCKET rate-limit rule
// of rate and burst, counting by the caller's address, instead of its plan
// bucket (which, as the stage and account buckets, never refuses in a
// test); a DAY quota of quota units (none when 0).
func HotRuleRequest(rate float64, burst, quota int32) *limit.Request {
	r := HotRequest(1e6, 1<<30, quota)
	r.Rules = []limit.Rule{{Name: "per-ip", Counter: "rule1", Value: "ip=192.0.2.1", Algorithm: limit.TokenBucket,
		RateLimit: rate, BurstLimit: burst, Private: true}}
	return r
}

// HotWindowRequest returns the builder of HotRuleRequest with a window
// rule of algorithm a (FIXED_WINDOW or SLIDING_WINDOW) of burst requests
// per hour instead (rate is not used).
func HotWindowRequest(a limit.Algorithm) func(rate float64, burst, quota int32) *limit.Request {
	return func(_ float64, burst, quota int32) *limit.Request {
		r := HotRuleRequest(0, 0, quota)
		r.Rules[0] = limit.Rule{Name: "per-ip", Counter: "rule1", Value: "ip=192.0.2.1", Algorithm: a, Limit: burst,
			Window: time.Hour, Private: true}
		return r
	}
}
