package engine

import (
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
}

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

// resolve names the Redis state of req's limits into kr (reusing its
// arrays).
func (e *Engine) resolve(req *limit.Request, kr *keyedRequest, buckets []keyedBucket, quota *keyedQuota) {
	kr.Buckets = buckets[:0]
	for i := range req.Buckets {
		b := &req.Buckets[i]
		kr.Buckets = append(kr.Buckets, keyedBucket{Key: e.bucketKey(req, b), RateLimit: b.RateLimit, BurstLimit: b.BurstLimit, Level: b.Level})
	}
	kr.Quota, kr.UsageKey = nil, ""
	if req.KeyID != "" {
		if q := req.Quota; q != nil {
			*quota = e.keyedQuota(req.KeyID, req.PlanID, q)
			kr.Quota = quota
		}
		if !req.Uncounted {
			kr.UsageKey = e.keys.Usage(req.KeyID, req.PlanID)
		}
	}
	kr.Rules = nil
	if len(req.Rules) > 0 {
		e.resolveRules(req, kr)
	}
	kr.Want = uint16(min(max(req.Want, 1), maxWant))
}

// maxWant is the most units one decision may take (the script packs the
// count in 16 bits).
const maxWant = 1<<16 - 1

// keyedQuota resolves the quota q of keyID in planID.
func (e *Engine) keyedQuota(keyID, planID string, q *limit.Quota) keyedQuota {
	code, _ := script.PeriodCode(q.Period)
	return keyedQuota{Key: e.keys.Quota(keyID, planID), Limit: max(0, q.Limit), Period: code, Offset: uint8(min(max(q.Offset, 0), 255))}
}

// bucketKey names the state of bucket b of req.
func (e *Engine) bucketKey(req *limit.Request, b *limit.Bucket) string {
	switch b.Level {
	case limit.LevelPlan:
		return e.keys.PlanBucket(req.KeyID, req.PlanID)
	case limit.LevelPlanMethod:
		return e.keys.PlanMethodBucket(req.KeyID, req.PlanID, req.API, req.Stage, b.Method, b.Path)
	case limit.LevelStage:
		return e.names.stageBucket(req.API, req.Stage, b.Method, b.Path)
	default:
		return e.names.account
	}
}
