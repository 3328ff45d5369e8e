package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"tollgate/limit"
	"tollgate/plans"
)

// Rate-limit rules (docs/rules.md): a stage's rules are compiled with its
// snapshot; each method keeps the rules whose resourcePath and httpMethod
// can match it, and each request builds the value every matching rule
// counts under from what it counts by (keyBy). The engine decides them
// with the request's buckets and quota, all or nothing.

// stageRule is one compiled rule of a stage: the limit.Rule every request
// starts from (Value empty) and what it counts by.
type stageRule struct {
	path   string // the rule's resourcePath: a resource path or "*"
	method string // the rule's httpMethod: a method or "*"
	keyBy  []plans.KeyPart
	rule   limit.Rule
}

// compileRules compiles a stage's rules, in their snapshot order.
func compileRules(in []plans.StageRule) []*stageRule {
	out := make([]*stageRule, 0, len(in))
	for i := range in {
		r := &in[i].RateLimitRule
		sr := &stageRule{path: r.ResourcePath, method: r.HTTPMethod, rule: limit.Rule{
			Name: r.Name, Counter: in[i].CounterID, Algorithm: ruleAlgorithm(r.Algorithm), Shadow: r.Shadow(),
			Private: len(r.KeyBy) > 0,
		}}
		for _, k := range r.KeyBy {
			if p, err := plans.ParseKeyBy(k); err == nil { // the snapshot was validated
				sr.keyBy = append(sr.keyBy, p)
			}
		}
		lr := &sr.rule
		if r.RateLimit != nil {
			lr.RateLimit = *r.RateLimit
		}
		if r.BurstLimit != nil {
			lr.BurstLimit = *r.BurstLimit
		}
		if r.Limit != nil {
			lr.Limit = *r.Limit
		}
		if r.WindowSeconds != nil {
			lr.Window = time.Duration(*r.WindowSeconds) * time.Second
		}
		if r.MaxDelayMillis != nil {
			lr.MaxDelay = time.Duration(*r.MaxDelayMillis) * time.Millisecond
		}
		out = append(out, sr)
	}
	return out
}

// ruleAlgorithm maps a rule's algorithm name to limit's.
func ruleAlgorithm(a string) limit.Algorithm {
	switch a {
	case plans.TokenBucket:
		return limit.TokenBucket
	case plans.SlidingWindow:
		return limit.SlidingWindow
	case plans.FixedWindow:
		return limit.FixedWindow
	case plans.Concurrency:
		return limit.Concurrency
	default:
		return limit.LeakyBucket
	}
}

// methodRules returns the rules of rules that apply to the method at
// path with verb: resourcePath path or "*", and httpMethod verb or "*"
// (any httpMethod for an ANY method: the request's method is compared
// per request, matchRules).
func methodRules(rules []*stageRule, path, verb string) []*stageRule {
	var out []*stageRule
	for _, sr := range rules {
		if sr.path != plans.AnyRoute && sr.path != path {
			continue
		}
		if verb == "ANY" || sr.method == plans.AnyRoute || sr.method == verb {
			out = append(out, sr)
		}
	}
	return out
}

// shadowPlan adds the plan bucket (unless its Level is LevelNone) and
// quota (unless nil) of a usage plan in shadow mode to the request as
// shadow rules of the caller's key: decided with the request, counted in
// counters of their own (so that enforcing the plan later starts from
// full buckets and an unused quota), never refusing (docs/rules.md,
// "Shadow mode"). Their would-be refusals are reported with the plan's
// levels.
func (ex *exchange) shadowPlan(b limit.Bucket, q *limit.Quota) {
	id := ex.sp.id
	if b.Level != limit.LevelNone {
		counter := "~plan:" + id // no rule's counter id has a ~
		if b.Level == limit.LevelPlanMethod {
			counter = "~method:" + id + ":" + b.Method + ":" + b.Path
		}
		ex.lreq.Rules = append(ex.lreq.Rules, limit.Rule{Name: b.Level.String(), Counter: counter, Value: ex.keyID, Shadow: true,
			Algorithm: limit.TokenBucket, RateLimit: b.RateLimit, BurstLimit: b.BurstLimit})
		ex.planRules = append(ex.planRules, b.Level)
	}
	if q != nil {
		ex.lreq.Rules = append(ex.lreq.Rules, limit.Rule{Name: limit.LevelQuota.String(), Counter: "~quota:" + id, Value: ex.keyID, Shadow: true,
			Algorithm: limit.CalendarQuota, Limit: q.Limit, Period: q.Period, Offset: q.Offset})
		ex.planRules = append(ex.planRules, limit.LevelQuota)
	}
}

// buildRules adds the method's rules that match r to ex.lreq.Rules (after
// a shadow plan's), each with the value the request counts under.
func (s *Server) buildRules(r *http.Request, ex *exchange) {
	m := ex.m
	if len(m.rules) == 0 {
		return
	}
	var query url.Values // parsed once, if a rule counts by a query parameter
	rules := ex.lreq.Rules
	for _, sr := range m.rules {
		if m.verb == "ANY" && sr.method != plans.AnyRoute && sr.method != r.Method {
			continue
		}
		lr := sr.rule
		if len(sr.keyBy) > 0 {
			var v []byte
			for _, p := range sr.keyBy {
				var part string
				switch p.Kind {
				case plans.KeyIP:
					if ex.client.IsValid() {
						part = ex.client.String()
					}
				case plans.KeyAPIKey:
					part = ex.keyID
				case plans.KeyHeader:
					part = r.Header.Get(p.Name)
				case plans.KeyQuery:
					if query == nil {
						query, _ = url.ParseQuery(r.URL.RawQuery) // what parses counts; the rest is ignored
					}
					part = query.Get(p.Name)
				}
				v = appendValue(v, part)
			}
			lr.Value = string(v)
		}
		rules = append(rules, lr)
	}
	ex.lreq.Rules = rules
}

// appendValue appends one keyBy value, length-prefixed, so that distinct
// combinations of values never encode the same.
func appendValue(b []byte, v string) []byte {
	b = strconv.AppendInt(b, int64(len(v)), 10)
	b = append(b, ':')
	return append(b, v...)
}

// reportShadow logs and counts the would-be refusals of a decision's
// shadow rules and shadow plan (docs/rules.md, "Shadow mode").
func (s *Server) reportShadow(ctx context.Context, ex *exchange, d *limit.Decision) {
	for i := range d.Rules {
		if i >= len(ex.lreq.Rules) {
			break
		}
		lr := &ex.lreq.Rules[i]
		if !lr.Shadow || d.Rules[i].Admitted {
			continue
		}
		if i < len(ex.planRules) {
			s.shadowRefusal(ctx, ex, ex.planRules[i], "", d.Rules[i].RetryAfter)
			continue
		}
		s.shadowRefusal(ctx, ex, limit.LevelRule, lr.Name, d.Rules[i].RetryAfter)
	}
}

// shadowRefusal logs and counts one would-be refusal of a shadow limit of
// level (the rule's name for a rule).
func (s *Server) shadowRefusal(ctx context.Context, ex *exchange, level limit.Level, rule string, retry time.Duration) {
	s.metrics.ShadowRefusals.WithLabelValues(ex.m.stage.apiID, ex.m.stage.name, level.String(), rule).Inc()
	attrs := make([]slog.Attr, 0, 10)
	attrs = append(attrs, slog.String("request_id", ex.id), slog.String("api", ex.m.stage.apiID), slog.String("stage", ex.m.stage.name),
		slog.String("resource", ex.m.path), slog.String("limit", level.String()))
	attrs = appendIf(attrs, "rule", rule)
	attrs = append(attrs, slog.String("client", ex.client.String()))
	attrs = appendIf(attrs, "key_id", ex.keyID)
	attrs = appendIf(attrs, "plan_id", ex.planID)
	attrs = append(attrs, slog.Duration("retry_after", retry))
	s.log.LogAttrs(ctx, slog.LevelWarn, "shadow limit would refuse", attrs...)
}
