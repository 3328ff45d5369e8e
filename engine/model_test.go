package engine

import (
	"math/big"
	"time"

	"tollgate/limit"
	"tollgate/plans"
)

// model is an in-Go reference of limits.lua (op "decide"): token buckets in exact
// rational arithmetic (math/big) and calendar quotas from plans.Quota.Bounds.
// It mirrors the script's documented rules (EPS, the 1 ns tolerance of ceil,
// stale state counting as absent, rebasing on limit changes) but none of
// its float arithmetic or calendar code.
type model struct {
	buckets map[string]*modelBucket
	quotas  map[string]*modelQuota
	usage   map[string]map[string]int64
}

type modelBucket struct {
	t *big.Rat // tokens
	l int64    // µs
	r float64
	b int32
}

type modelQuota struct {
	start time.Time
	used  int64
}

func newModel() *model {
	return &model{buckets: map[string]*modelBucket{}, quotas: map[string]*modelQuota{}, usage: map[string]map[string]int64{}}
}

var (
	ratUS     = big.NewRat(1_000_000, 1)
	ratEps    = big.NewRat(1, 1_000_000_000)
	ratOneEps = new(big.Rat).Sub(big.NewRat(1, 1), ratEps)
	ratNs     = big.NewRat(1, 1000) // ceil tolerance, µs
)

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

// tokens returns the bucket's tokens at now under the new burst, and
// whether its state must be rebased to new limits.
func (m *model) tokens(bk keyedBucket, now int64) (*big.Rat, bool) {
	s := m.buckets[bk.Key]
	if s == nil || now >= s.l+ttlUS(s.t, s.r, s.b) {
		return big.NewRat(int64(bk.BurstLimit), 1), false
	}
	t := new(big.Rat).Set(s.t)
	if now > s.l {
		add := big.NewRat(now-s.l, 1_000_000)
		t.Add(t, add.Mul(add, ratFloat(s.r)))
		t = ratMin(t, big.NewRat(int64(s.b), 1))
	}
	t = ratMin(t, big.NewRat(int64(bk.BurstLimit), 1))
	return t, s.r != bk.RateLimit || s.b != bk.BurstLimit
}

func ratMin(a, b *big.Rat) *big.Rat {
	if a.Cmp(b) <= 0 {
		return a
	}
	return b
}

// decide is the reference decision at time now.
func (m *model) decide(now time.Time, req *keyedRequest) limit.Decision {
	d, _ := m.take(now, req)
	return d
}

// leaseShare is limits.lua's LEASE_SHARE: a lease takes at most a quarter
// of what any level has left.
const leaseShare = 4

// take is the reference decision at time now with req.Want (a capacity
// lease when above 1), and the tokens and units it took (0 on a refusal).
func (m *model) take(now time.Time, req *keyedRequest) (limit.Decision, int64) {
	us := now.UnixMicro()
	d := limit.Decision{Now: time.UnixMicro(us).UTC()}
	toks := make([]*big.Rat, len(req.Buckets))
	rebase := make([]bool, len(req.Buckets))
	refused := -1
	for i, bk := range req.Buckets {
		toks[i], rebase[i] = m.tokens(bk, us)
		if refused < 0 && toks[i].Cmp(ratOneEps) < 0 {
			refused = i
			d.Refused = bk.Level
		}
	}
	var used int64
	var qStart, qEnd, qStored time.Time
	if q := req.Quota; q != nil {
		qStart, qEnd = plans.Quota{Period: q.Period, Offset: q.Offset}.Bounds(d.Now)
		qStored = qStart
		if s := m.quotas[q.Key]; s != nil && !s.start.Before(qStart) {
			used, qStored = s.used, s.start
		}
		if refused < 0 && used+1 > int64(q.Limit) {
			refused = len(req.Buckets)
			d.Refused = limit.LevelQuota
		}
	}
	d.Allowed = refused < 0
	var k int64
	if d.Allowed {
		k = max(1, int64(req.Want))
		if k > 1 {
			for i := range req.Buckets {
				share := new(big.Rat).Add(toks[i], ratEps)
				k = min(k, floorRat(share.Quo(share, big.NewRat(leaseShare, 1))))
			}
			if q := req.Quota; q != nil {
				k = min(k, (int64(q.Limit)-used)/leaseShare)
			}
			k = max(k, 1)
		}
		m.charge(req, toks, us, &used, qStored, d.Now, k)
	} else {
		for i, bk := range req.Buckets {
			if rebase[i] {
				m.buckets[bk.Key] = &modelBucket{t: toks[i], l: us, r: bk.RateLimit, b: bk.BurstLimit}
			}
		}
		m.retry(&d, req, toks, refused, qEnd)
	}
	m.states(&d, req, toks, used, qStart, qEnd)
	return d, k
}

// charge takes k tokens from every bucket and k units of the quota, and
// counts one request in usage.
func (m *model) charge(req *keyedRequest, toks []*big.Rat, us int64, used *int64, qStored, now time.Time, k int64) {
	for i, bk := range req.Buckets {
		toks[i] = new(big.Rat).Sub(toks[i], big.NewRat(k, 1))
		if toks[i].Sign() < 0 {
			toks[i] = new(big.Rat)
		}
		m.buckets[bk.Key] = &modelBucket{t: toks[i], l: us, r: bk.RateLimit, b: bk.BurstLimit}
	}
	if req.Quota != nil {
		*used += k
		m.quotas[req.Quota.Key] = &modelQuota{start: qStored, used: *used}
	}
	if req.UsageKey != "" {
		if m.usage[req.UsageKey] == nil {
			m.usage[req.UsageKey] = map[string]int64{}
		}
		m.usage[req.UsageKey][now.Format(dayLayout)]++
	}
}

func (m *model) retry(d *limit.Decision, req *keyedRequest, toks []*big.Rat, refused int, qEnd time.Time) {
	if refused == len(req.Buckets) {
		d.RetryAfter = qEnd.Sub(d.Now)
		return
	}
	bk := req.Buckets[refused]
	if bk.RateLimit <= 0 {
		d.NoRetry = true
		return
	}
	x := new(big.Rat).Sub(big.NewRat(1, 1), toks[refused])
	x.Mul(x, ratUS)
	x.Quo(x, ratFloat(bk.RateLimit))
	d.RetryAfter = time.Duration(max(1, ceilRat(x))) * time.Microsecond
}

func (m *model) states(d *limit.Decision, req *keyedRequest, toks []*big.Rat, used int64, qStart, qEnd time.Time) {
	for i, bk := range req.Buckets {
		if bk.Level != limit.LevelPlan && bk.Level != limit.LevelPlanMethod {
			continue
		}
		rem := floorRat(new(big.Rat).Add(toks[i], ratEps))
		d.Plan = bucketState(&req.Buckets[i], d.Now, rem, untilFull(toks[i], bk.RateLimit, bk.BurstLimit))
		break
	}
	if q := req.Quota; q != nil {
		d.Quota = &limit.State{Limit: int64(q.Limit), Remaining: max(0, int64(q.Limit)-used), Reset: qEnd, Window: qEnd.Sub(qStart)}
	}
}

// unlease is the reference of op "unlease" for lease l at time now: the
// quota gets its unspent units back unless it moved to another period
// (or keepQuota), each bucket min(unspent, taken − rate × held) tokens
// under the limits it is stored with, and usage counts what was spent.
func (m *model) unlease(now time.Time, l *lease) {
	us := now.UnixMicro()
	if q := l.req.Quota; q != nil && !l.keepQuota && l.left > 0 {
		if s := m.quotas[q.Key]; s != nil && s.start.Unix() == l.res[rQuotaStart] {
			s.used = max(0, s.used-int64(l.left))
		}
	}
	for _, bk := range l.req.Buckets {
		s := m.buckets[bk.Key]
		if s == nil || us >= s.l+ttlUS(s.t, s.r, s.b) {
			continue
		}
		held := big.NewRat(max(0, us-l.res[rNow]), 1_000_000)
		back := new(big.Rat).Sub(big.NewRat(int64(l.taken), 1), held.Mul(held, ratFloat(s.r)))
		back = ratMin(back, big.NewRat(int64(l.left), 1))
		if back.Sign() <= 0 {
			continue
		}
		t, _ := m.tokens(keyedBucket{Key: bk.Key, RateLimit: s.r, BurstLimit: s.b}, us)
		t = new(big.Rat).Add(t, back)
		if t.Cmp(big.NewRat(int64(s.b), 1)) >= 0 {
			delete(m.buckets, bk.Key)
			continue
		}
		m.buckets[bk.Key] = &modelBucket{t: t, l: max(s.l, us), r: s.r, b: s.b}
	}
	if l.req.UsageKey != "" && l.spent > 0 {
		if m.usage[l.req.UsageKey] == nil {
			m.usage[l.req.UsageKey] = map[string]int64{}
		}
		m.usage[l.req.UsageKey][now.UTC().Format(dayLayout)] += int64(l.spent)
	}
}
