package engine

import (
	"fmt"
	"math"

	"tollgate/calendar"
	"tollgate/limit"
	"tollgate/script"
)

// keyedBucket is a limit.Bucket with the Redis key of its state.
type keyedBucket struct {
	Key        string
	RateLimit  float64
	BurstLimit int32
	Level      limit.Level
}

// keyedQuota is a limit.Quota with the Redis key of its state and the
// script's period code.
type keyedQuota struct {
	Key    string
	Limit  int32
	Period uint8
	Offset uint8
	// Cal is the rule of a period the script cannot compute (Period
	// script.PeriodTable: anchored, or in a zone other than UTC), Bounds
	// its table around the time the quota was resolved for.
	Cal    calendar.Calendar
	Bounds script.PeriodBounds
}

// tabled reports whether q's period comes as a table.
func (q *keyedQuota) tabled() bool { return q.Period == script.PeriodTable }

// keyedRequest is a limit.Request resolved to Redis key names: what op
// "decide" decides. UsageKey "" means no usage count.
type keyedRequest struct {
	Buckets  []keyedBucket
	Quota    *keyedQuota
	UsageKey string
	// Rules are the request's rate-limit rules (rules.go).
	Rules []keyedRule
	// Want is the units to take when admitted (limit.Request.Want).
	Want uint16
	// Cost is the units the request's own limits take, as
	// limit.Request.Cost: 0 means 1, negative none (units).
	Cost int32
	// Customer is the customer quota (limit.Request.CustomerQuota); nil
	// for none.
	Customer *keyedQuota
}

// units returns the units the request's own limits take.
func (r *keyedRequest) units() int32 {
	return (&limit.Request{Cost: r.Cost}).Units()
}

// planIndex returns the index of the caller's plan or plan-method bucket
// (the first bucket of either level), or -1.
func (r *keyedRequest) planIndex() int {
	for i := range r.Buckets {
		if r.Buckets[i].Level.PerKey() {
			return i
		}
	}
	return -1
}

// home returns the key whose slot holds the request's own state (quota,
// plan bucket, usage): "" for a request without one.
func (r *keyedRequest) home() string {
	switch {
	case r.Quota != nil:
		return r.Quota.Key
	case r.planIndex() >= 0:
		return r.Buckets[r.planIndex()].Key
	default:
		return r.UsageKey
	}
}

// maxBuckets and maxRules are the most buckets and rules one request may
// name (the script packs each count in a byte).
const (
	maxBuckets = math.MaxUint8
	maxRules   = math.MaxUint8
)

// checkRequest refuses a request that cannot be packed: too many buckets
// or rules, an unknown algorithm, or a LEAKY_BUCKET rule without a rate
// above 0 (the admin API allows none of these).
func checkRequest(req *keyedRequest) error {
	if len(req.Buckets) > maxBuckets {
		return fmt.Errorf("%d buckets, at most %d", len(req.Buckets), maxBuckets)
	}
	return checkRules(req)
}

// checkRules refuses a request whose rules cannot be packed: too many, an
// unknown algorithm, or a LEAKY_BUCKET rule without a rate above 0 (the
// admin API allows none of these).
func checkRules(req *keyedRequest) error {
	if len(req.Rules) > maxRules {
		return fmt.Errorf("%d rules, at most %d", len(req.Rules), maxRules)
	}
	for i := range req.Rules {
		r := req.Rules[i].Rule
		if r.Algorithm < limit.TokenBucket || r.Algorithm > limit.CalendarQuota {
			return fmt.Errorf("rule %q: unknown algorithm %d", r.Name, r.Algorithm)
		}
		if r.Algorithm == limit.LeakyBucket && !(r.RateLimit > 0) {
			return fmt.Errorf("rule %q: LEAKY_BUCKET needs a rate above 0", r.Name)
		}
	}
	return nil
}

// keyedRule is a limit.Rule with the Redis key of its state and, for a
// CONCURRENCY rule, the member the request holds.
type keyedRule struct {
	Key  string
	Rule *limit.Rule
	hold hold
}

// hold is one request in flight of a CONCURRENCY rule: the member
// "<node>:<seq>" of the rule's sorted set key.
type hold struct {
	key       string
	node, seq uint32
}
