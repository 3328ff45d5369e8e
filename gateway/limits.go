package gateway

import (
	"context"
	"log/slog"
	"net/http"

	"tollgate/gateway/limiter"
	"tollgate/plans"
)

// buildRequest fills ex.lreq with the buckets and quota that apply to this
// request, in AWS's order (DESIGN.md 4.3): the plan bucket, or the plan's
// per-method bucket that replaces it; the stage method bucket; the account
// bucket; the plan quota. Unkeyed requests (sp nil) get no plan limits and
// no usage count. It reuses ex's arrays, so it does not allocate beyond the
// per-key Redis key names; serveAPI calls it once per request.
func (s *Server) buildRequest(ex *exchange, m *method, rec *plans.KeyRecord, sp *stagePlan) {
	req := &ex.lreq
	req.Buckets = ex.buckets[:0]
	if sp != nil {
		if t, ok := m.planThrottles[sp.id]; ok {
			req.Buckets = append(req.Buckets, limiter.Bucket{
				Key:        s.keys.PlanMethodBucket(rec.KeyID, sp.id, m.stage.apiID, m.stage.name, m.verb, m.path),
				RateLimit:  t.RateLimit,
				BurstLimit: t.BurstLimit,
				Level:      limiter.LevelPlanMethod,
			})
		} else if sp.throttle != nil {
			req.Buckets = append(req.Buckets, limiter.Bucket{
				Key:        s.keys.PlanBucket(rec.KeyID, sp.id),
				RateLimit:  sp.throttle.RateLimit,
				BurstLimit: sp.throttle.BurstLimit,
				Level:      limiter.LevelPlan,
			})
		}
		if sp.quota != nil {
			ex.quota = *sp.quota
			ex.quota.Key = s.keys.Quota(rec.KeyID, sp.id)
			req.Quota = &ex.quota
		}
		req.UsageKey = s.keys.Usage(rec.KeyID, sp.id)
	}
	req.Buckets = append(req.Buckets, m.shared...)
}

// limit asks the limiter for one decision and applies it: on admission it
// sets the caller's rate-limit headers and returns true; on a refusal it
// writes the 429 (with the same headers and Retry-After). When the limiter
// fails, FailureMode decides: "open" admits without limits or headers,
// "closed" answers 503.
func (s *Server) limit(w *statusWriter, r *http.Request, ex *exchange, m *method, rec *plans.KeyRecord, sp *stagePlan) bool {
	d, err := s.limiter.Decide(r.Context(), &ex.lreq)
	return s.applyDecision(w, r, ex, m, sp, d, err)
}

// applyDecision applies the limiter's answer d (or its error err) to the
// request of ex.lreq, as limit describes; the cache's pipelined round trip
// uses it too.
func (s *Server) applyDecision(w *statusWriter, r *http.Request, ex *exchange, m *method, sp *stagePlan, d limiter.Decision, err error) bool {
	if err != nil {
		if r.Context().Err() != nil { // the client left; not a limiter outage
			ex.errType, ex.reason = ErrorTypeClientClosed, err.Error()
			w.status = statusClientClosed
			return false
		}
		return s.limiterFailed(w, ex, err)
	}
	s.limiterRecovered()
	if s.log.Enabled(r.Context(), slog.LevelDebug) {
		s.log.LogAttrs(r.Context(), slog.LevelDebug, "limiter decision", slog.String("request_id", ex.id),
			slog.Bool("allowed", d.Allowed), slog.String("refused", d.Refused.String()),
			slog.Int("buckets", len(ex.lreq.Buckets)), slog.Bool("quota", ex.lreq.Quota != nil),
			slog.Duration("retry_after", d.RetryAfter))
	}
	if sp != nil {
		writeRateLimitHeaders(w.Header(), d, planBucket(&ex.lreq), sp.quota != nil)
	}
	if d.Allowed {
		return true
	}
	if sp != nil {
		s.deny.remember(&ex.lreq, m.stage, ex.keyID, sp.id, d, ex.sent, ex.denyGen)
	}
	s.writeRefusal(w, ex, m, d)
	return false
}

// writeRefusal writes the 429 of a refusal d (throttle or quota) with its
// Retry-After and counts it; the rate-limit headers are already set.
func (s *Server) writeRefusal(w *statusWriter, ex *exchange, m *method, d limiter.Decision) {
	e := errThrottled
	ex.errType, ex.reason = ErrorTypeThrottled, d.Refused.String()
	if d.Refused == limiter.LevelQuota {
		e, ex.errType = errQuota, ErrorTypeQuota
	}
	s.metrics.Throttled.WithLabelValues(m.stage.apiID, m.stage.name, d.Refused.String()).Inc()
	if !d.NoRetry {
		setRetryAfter(w.Header(), d.RetryAfter)
	}
	writeError(w, e)
}

// planBucket returns the request's plan or plan-method bucket, if any.
func planBucket(req *limiter.Request) *limiter.Bucket {
	if len(req.Buckets) > 0 {
		if l := req.Buckets[0].Level; l == limiter.LevelPlan || l == limiter.LevelPlanMethod {
			return &req.Buckets[0]
		}
	}
	return nil
}

// limiterFailed handles a limiter error or timeout: it counts it, logs the
// first error of an outage (not every request) and applies FailureMode.
func (s *Server) limiterFailed(w *statusWriter, ex *exchange, err error) bool {
	s.metrics.LimiterErrors.Inc()
	if s.limiterDown.CompareAndSwap(false, true) {
		s.log.LogAttrs(context.Background(), slog.LevelWarn, "limiter unavailable",
			slog.String("failure_mode", s.failureMode), slog.String("error", err.Error()))
	}
	if s.failureMode == FailOpen {
		ex.reason = "limiter unavailable: admitted without limits"
		return true
	}
	ex.errType, ex.reason = ErrorTypeUnavailable, "limiter: "+err.Error()
	writeUnavailable(w)
	return false
}

// limiterRecovered logs the end of a limiter outage, once.
func (s *Server) limiterRecovered() {
	if s.limiterDown.Load() && s.limiterDown.CompareAndSwap(true, false) {
		s.log.LogAttrs(context.Background(), slog.LevelInfo, "limiter recovered")
	}
}
