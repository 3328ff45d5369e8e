package engine

import (
	"sync"
	"time"

	"tollgate/calendar"
	"tollgate/keyspace"
	"tollgate/limit"
	"tollgate/script"
)

// resolver names the Redis state of a request's limits: the per-key names
// built per request, the shared ones from a cache of names, the members
// of CONCURRENCY rules from the node's holds.
type resolver struct {
	keys  keyspace.Space
	names *names
	holds *holds
	// now estimates Redis time: the tables of anchored periods are made
	// around it
	now func() time.Time
	// tables keeps the latest table of each calendar (calendar.Calendar →
	// *script.PeriodBounds): one serves while the estimate is in its
	// middle period
	tables sync.Map
}

// resolve names the Redis state of req's limits into kr (reusing its
// arrays).
func (rs *resolver) resolve(req *limit.Request, kr *keyedRequest, buckets []keyedBucket, quota, customer *keyedQuota) {
	kr.Buckets = buckets[:0]
	for i := range req.Buckets {
		b := &req.Buckets[i]
		kr.Buckets = append(kr.Buckets, keyedBucket{Key: rs.bucketKey(req, b), RateLimit: b.RateLimit, BurstLimit: b.BurstLimit, Level: b.Level})
	}
	kr.Quota, kr.Customer, kr.UsageKey, kr.Cost = nil, nil, "", req.Cost
	if req.KeyID != "" {
		if q := req.Quota; q != nil {
			*quota = rs.keyedQuota(req.KeyID, req.PlanID, q)
			kr.Quota = quota
		}
		if cq := req.CustomerQuota; cq != nil && customer != nil {
			*customer = rs.customerQuota(req, cq)
			kr.Customer = customer
		}
		if !req.Uncounted {
			kr.UsageKey = rs.keys.Usage(req.KeyID, req.PlanID)
		}
	}
	kr.Rules = nil
	if len(req.Rules) > 0 {
		rs.resolveRules(req, kr)
	}
	kr.Want = uint16(min(max(req.Want, 1), maxWant))
}

// maxWant is the most units one decision may take (the script packs the
// count in 16 bits).
const maxWant = 1<<16 - 1

// keyedQuota resolves the quota q of keyID in planID; the table of an
// anchored or zoned period is made around the estimate of Redis time.
func (rs *resolver) keyedQuota(keyID, planID string, q *limit.Quota) keyedQuota {
	code, _ := script.PeriodCode(q.Period)
	kq := keyedQuota{Key: rs.keys.Quota(keyID, planID), Limit: max(0, q.Limit), Period: code, Offset: uint8(min(max(q.Offset, 0), 255))}
	if c := q.Calendar(); !c.Plain() {
		kq.Period, kq.Offset, kq.Cal = script.PeriodTable, 0, c
		kq.Bounds = rs.table(c, rs.now())
	}
	return kq
}

// table returns the period table of c around t, the kept one when t is
// in its middle period.
func (rs *resolver) table(c calendar.Calendar, t time.Time) script.PeriodBounds {
	s := t.Unix()
	if v, ok := rs.tables.Load(c); ok {
		if b := v.(*script.PeriodBounds); b.StartS <= s && s < b.EndS {
			return *b
		}
	}
	b := script.TableOf(c, t)
	rs.tables.Store(c, &b)
	return b
}

// customerQuota resolves the customer quota cq of req on its own calendar
// (the plan's), never the key's: keys of one customer with anchors of
// their own still share one customer period.
func (rs *resolver) customerQuota(req *limit.Request, cq *limit.Quota) keyedQuota {
	kq := rs.keyedQuota(req.KeyID, req.PlanID, cq)
	if req.CustomerID == "" {
		kq.Key = rs.keys.KeyCustomerQuota(req.KeyID, req.PlanID)
	} else {
		kq.Key = rs.keys.CustomerQuota(req.CustomerID, req.PlanID)
	}
	return kq
}

// bucketKey names the state of bucket b of req.
func (rs *resolver) bucketKey(req *limit.Request, b *limit.Bucket) string {
	switch b.Level {
	case limit.LevelPlan:
		return rs.keys.PlanBucket(req.KeyID, req.PlanID)
	case limit.LevelPlanMethod:
		return rs.keys.PlanMethodBucket(req.KeyID, req.PlanID, req.API, req.Stage, b.Method, b.Path)
	case limit.LevelStage:
		return rs.names.stageBucket(req.API, req.Stage, b.Method, b.Path)
	default:
		return rs.names.account
	}
}

// ruleKinds are the keyspace kinds of each algorithm's state.
var ruleKinds = [...]string{limit.TokenBucket: "tb", limit.SlidingWindow: "sw", limit.FixedWindow: "fw",
	limit.Concurrency: "cc", limit.LeakyBucket: "lb", limit.CalendarQuota: "qt"}

// resolveRules names the state of every rule of req into kr.
func (rs *resolver) resolveRules(req *limit.Request, kr *keyedRequest) {
	kr.Rules = make([]keyedRule, len(req.Rules))
	for i := range req.Rules {
		r := &req.Rules[i]
		kr.Rules[i] = keyedRule{Key: rs.keys.RuleState(r.Counter, r.Value, ruleKind(r.Algorithm)), Rule: r}
		if r.Algorithm == limit.Concurrency {
			kr.Rules[i].hold = rs.holds.next(kr.Rules[i].Key)
		}
	}
}

func ruleKind(a limit.Algorithm) string {
	if int(a) < len(ruleKinds) && ruleKinds[a] != "" {
		return ruleKinds[a]
	}
	return "x"
}
