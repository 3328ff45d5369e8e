package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"tollgate/limit"
	"tollgate/plans"
)

// buildRequest fills ex.lreq with the limits that apply to this request,
// in AWS's order (docs/behaviour.md, "Throttles and quota"): the plan
// bucket, or the plan's per-method bucket that replaces it; the stage
// method bucket; the account bucket; the plan quota. Unkeyed requests
// (ex.sp nil) get no plan limits and no usage count. The plan limits of a
// usage plan in shadow mode are shadow rules instead (shadowPlan). It
// reuses ex's arrays, so it does not allocate but for a shadow plan;
// serveAPI calls it once per request.
func (s *Server) buildRequest(ex *exchange) {
	m, sp, req := ex.m, ex.sp, &ex.lreq
	req.API, req.Stage = m.stage.apiID, m.stage.name
	req.Buckets = ex.buckets[:0]
	if sp != nil {
		req.KeyID, req.PlanID = ex.keyID, sp.id
		ex.cost = &sp.cost
		if c, ok := m.planCosts[sp.id]; ok {
			ex.cost = c // the method's weight replaces the plan's cost
		}
		var plan limit.Bucket
		if t, ok := m.planThrottles[sp.id]; ok {
			plan = limit.Bucket{Level: limit.LevelPlanMethod, RateLimit: t.RateLimit, BurstLimit: t.BurstLimit, Method: m.verb, Path: m.path}
		} else if sp.throttle != nil {
			plan = limit.Bucket{Level: limit.LevelPlan, RateLimit: sp.throttle.RateLimit, BurstLimit: sp.throttle.BurstLimit}
		}
		switch {
		case sp.shadow:
			ex.shadowPlan(plan, sp.quota)
		default:
			if plan.Level != limit.LevelNone {
				req.Buckets = append(req.Buckets, plan)
			}
			if q := sp.quota; q != nil {
				if ex.rec != nil {
					q = sp.keyQuota(ex.rec.Calendar) // the key's own anchor and zone, if any
				}
				ex.quota = *q
				req.Quota = &ex.quota
			}
			if sp.customer != nil {
				req.CustomerQuota = sp.customer // the plan's calendar, whatever the key's
				if ex.rec != nil {
					req.CustomerID = ex.rec.CustomerID
				}
			}
			req.Cost = ex.cost.Decided()
			if req.Cost == 0 {
				req.Cost = limit.NoCost
			}
			// quota-counts=non-5xx and a settled cost: counted (or given
			// back) once the response is known (settle)
			req.Uncounted = sp.non5xx || ex.cost.Settled()
		}
	}
	req.Buckets = append(req.Buckets, m.shared...)
}

// limit asks the engine for one decision and applies it (applyDecision).
func (s *Server) limit(w *statusWriter, r *http.Request, ex *exchange) bool {
	d, err := s.engine.Decide(r.Context(), &ex.lreq)
	return s.applyDecision(w, r, ex, d, err)
}

// applyDecision applies the engine's answer d (or its error err) to the
// request: on admission it sets the caller's rate-limit headers and
// returns true; on a refusal it writes the 429 (with the same headers and
// Retry-After). When the engine failed, FailureMode decides: "open" admits
// without limits or headers, "closed" answers 503.
func (s *Server) applyDecision(w *statusWriter, r *http.Request, ex *exchange, d limit.Decision, err error) bool {
	if err != nil {
		if r.Context().Err() != nil { // the client left; not a limiter outage
			ex.errType, ex.reason = ErrorTypeClientClosed, err.Error()
			w.status = statusClientClosed
			return false
		}
		return s.limiterFailed(w, ex, err)
	}
	if !d.Remembered {
		s.limiterRecovered()
	}
	if s.log.Enabled(r.Context(), slog.LevelDebug) {
		s.log.LogAttrs(r.Context(), slog.LevelDebug, "limiter decision", slog.String("request_id", ex.id),
			slog.Bool("allowed", d.Allowed), slog.String("refused", d.Refused.String()), slog.Bool("remembered", d.Remembered),
			slog.Int("buckets", len(ex.lreq.Buckets)), slog.Bool("quota", ex.lreq.Quota != nil),
			slog.Duration("retry_after", d.RetryAfter))
	}
	ex.release = d.Release // ServeHTTP calls it when the response has ended
	writeRateLimitHeaders(w.Header(), ex.values[2:7], d, ex.lreq.PlanBucket(), ex.lreq.Quota != nil, ex.lreq.Rules)
	s.reportShadow(r.Context(), ex, &d)
	if !d.Allowed {
		s.writeRefusal(w, ex, d)
		return false
	}
	ex.m.stage.series.admit(s.metrics, ex.m.stage)
	if d.Quota != nil {
		ex.quotaStart = d.Quota.Reset.Add(-d.Quota.Window)
	}
	ex.decidedAt = d.Now
	s.keepToSettle(w, ex)
	return d.Delay <= 0 || s.delay(w, r, ex, d)
}

// keepToSettle marks an admitted request decided uncounted (a settled
// cost, tollgate:quota-counts=non-5xx) to settle once its response has
// ended, and keeps the JSON body a settled cost reads.
func (s *Server) keepToSettle(w *statusWriter, ex *exchange) {
	if ex.lreq.Uncounted && ex.lreq.KeyID != "" && !ex.m.partnerUsage() {
		ex.unsettled = true
		if len(ex.cost.JSON) > 0 {
			w.tee = &costTee{}
		}
	}
}

// settleTimeout bounds the hand-over of one settle to the engine (the
// node's pending charges take it at once and count it within a second of
// the response's end while Redis answers, docs/cost.md).
const settleTimeout = time.Second

// settle settles an admitted request decided uncounted once its response
// has ended with status (sw: its header and kept body). A settled cost
// (tollgate:cost=header:... or json:...) charges the difference between
// the cost the response reports (or tollgate:cost-if-missing's when it
// reports none) and the reservation its decision took, and counts the
// request with that cost. A plan tagged tollgate:quota-counts=non-5xx
// gives a 5xx (the upstream's, or the gateway's 502/504 for an
// integration that failed or timed out) all its units back and does not
// count it; anything else is counted. A request admitted without a
// decision (failure mode open) is settled too, naming the run that may
// have taken its reservation: the engine charges the whole cost when that
// run did not run. The engine's port takes it off the request's path
// (engine.Port's Settler: batched with other settles, tried again until
// counted, exactly once); an error (the settle could not be kept) is
// logged. It is the one exception to one limiter round trip per request:
// such requests pay a share of a batched run after the response, because
// their cost and count are known only once the response is.
func (s *Server) settle(ex *exchange, sw *statusWriter, status int) {
	cost := ex.cost
	reserved := ex.lreq.Units()
	set := limit.Settlement{PeriodStart: ex.quotaStart, At: ex.decidedAt, Count: true, Units: reserved, Reserved: reserved, Undecided: ex.undecided}
	if cost.Settled() {
		real, ok := settledCost(cost, sw.Header(), sw.tee)
		if !ok {
			real = cost.IfMissing()
		}
		set.Units, set.Charge, set.Bucket = real, real-reserved, true
	}
	if ex.sp.non5xx && status >= 500 {
		set.Count, set.Units, set.Charge, set.Bucket = false, 0, -reserved, false
		if reserved == 0 || ex.undecided != nil && ex.undecided.Run == 0 && ex.undecided.CustomerRun == 0 {
			return // nothing was charged
		}
	}
	req := ex.lreq // the request as decided; ex is not reused
	req.Rules, req.Along = nil, nil
	set.Req = &req
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
		defer cancel()
		if err := s.engine.Settle(ctx, set); err != nil {
			s.log.LogAttrs(ctx, slog.LevelWarn, "settle failed", slog.String("key_id", req.KeyID),
				slog.String("plan_id", req.PlanID), slog.Bool("counted", set.Count), slog.Int("charge", int(set.Charge)),
				slog.String("error", err.Error()))
		}
	}()
}

// delay holds an admitted request for its turn (a LEAKY_BUCKET rule's
// Decision.Delay, at most the rule's maxDelayMillis) before it goes on.
// When the client goes away meanwhile it gives the turn back
// (Decision.GiveBack) and returns false, with the request logged as
// closed by the client; its other charges stay, as for a request served.
func (s *Server) delay(w *statusWriter, r *http.Request, ex *exchange, d limit.Decision) bool {
	// The engine caps each delay at its rule's maxDelayMillis; the cap at
	// the largest a rule may have only keeps a request from waiting
	// unbounded should a decision ever carry more.
	t := time.NewTimer(min(d.Delay, plans.MaxDelayMillis*time.Millisecond))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		if d.GiveBack != nil {
			d.GiveBack()
		}
		ex.errType, ex.reason = ErrorTypeClientClosed, "client went away while its request waited for its turn"
		w.status = statusClientClosed
		return false
	}
}

// metricLevel is the tollgate_throttled_total level of a refusal at l: a
// customer quota's refusal counts as a quota refusal (the 429 it answers is
// the quota's, and dashboards and the console's live view read quota
// refusals from level "quota"); the log line's reason keeps "customer".
func metricLevel(l limit.Level) string {
	if l == limit.LevelCustomer {
		return limit.LevelQuota.String()
	}
	return l.String()
}

// writeRefusal writes the 429 of a refusal d (throttle, quota or rule)
// with its Retry-After and counts it; the rate-limit headers are already
// set. A rule's refusal is logged with the rule's name.
func (s *Server) writeRefusal(w *statusWriter, ex *exchange, d limit.Decision) {
	e := respThrottled
	ex.errType, ex.reason = ErrorTypeThrottled, d.Refused.String()
	switch d.Refused {
	case limit.LevelQuota, limit.LevelCustomer:
		e, ex.errType = respQuota, ErrorTypeQuota
	case limit.LevelRule:
		if i := d.RefusedRule; i >= 0 && i < len(ex.lreq.Rules) {
			ex.reason = "rule " + ex.lreq.Rules[i].Name
		}
	}
	s.metrics.Throttled.WithLabelValues(ex.m.stage.apiID, ex.m.stage.name, metricLevel(d.Refused)).Inc()
	if !d.NoRetry {
		setRetryAfter(w.Header(), d.RetryAfter)
	}
	writeError(w, e)
}

// limiterFailed handles a limiter error or timeout: it counts it, logs the
// start of an outage (once, and only once the limiter has failed without a
// single success for outageAfter: one decision that misses its deadline
// on a loaded node is counted, not logged) and applies FailureMode. A
// limiter that lost its data and awaits the admin's restore
// (limit.ErrNotRestored) is answered 503 whatever the mode: failing open
// would admit a key that had used up its quota.
func (s *Server) limiterFailed(w *statusWriter, ex *exchange, err error) bool {
	s.metrics.LimiterErrors.Inc()
	if errors.Is(err, limit.ErrNotRestored) {
		ex.errType, ex.reason = ErrorTypeUnavailable, "limiter: "+err.Error()
		writeUnavailable(w)
		return false
	}
	now := s.nodeNow().UnixNano()
	s.failingSince.CompareAndSwap(0, now)
	if since := s.failingSince.Load(); since != 0 && now-since >= int64(s.outageAfter) && s.limiterDown.CompareAndSwap(false, true) {
		s.log.LogAttrs(context.Background(), slog.LevelWarn, "limiter unavailable",
			slog.String("failure_mode", s.failureMode), slog.String("error", err.Error()),
			slog.Duration("failing_for", time.Duration(now-since)))
	}
	if s.failureMode == FailOpen {
		ex.reason = "limiter unavailable: admitted without limits"
		ex.m.stage.series.admit(s.metrics, ex.m.stage)
		// its settle charges it (engine/failopen charges the others)
		ex.undecided = &limit.UndecidedError{Err: err} // At zero: the engine's estimate of Redis time
		if ue := (*limit.UndecidedError)(nil); errors.As(err, &ue) {
			ex.undecided = ue
		}
		s.keepToSettle(w, ex)
		return true
	}
	ex.errType, ex.reason = ErrorTypeUnavailable, "limiter: "+err.Error()
	writeUnavailable(w)
	return false
}

// limiterRecovered ends a run of failures and logs the end of an outage,
// once.
func (s *Server) limiterRecovered() {
	if s.failingSince.Load() != 0 {
		s.failingSince.Store(0)
	}
	if s.limiterDown.Load() && s.limiterDown.CompareAndSwap(true, false) {
		s.log.LogAttrs(context.Background(), slog.LevelInfo, "limiter recovered")
	}
}

// outageAfter is how long the limiter must fail without a success before
// the gateway logs an outage.
const outageAfter = time.Second
