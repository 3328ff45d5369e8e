package gateway

import (
	"encoding/json"
	"net/http"
	"time"

	"tollgate/limit"
	"tollgate/plans"
)

// UsagePath is the path of the partner usage endpoint (docs/usage.md, "The
// partner usage endpoint") on every API's host.
// It takes precedence over the API's stages (".well-known" is not a valid
// stage name), and it is on no stage: its requests carry the API, an empty
// stage and the resource UsagePath in the access log and the metrics.
const UsagePath = "/.well-known/tollgate/usage"

// partnerUsage reports whether m is the partner usage endpoint: the one
// method on no stage.
func (m *method) partnerUsage() bool { return m.stage.name == "" }

// usageMethod builds the partner usage endpoint of API apiID: a GET that
// requires a key, on a stageConfig without a name that every plan covering
// one of stages covers (the same *stagePlan values).
func usageMethod(apiID string, stages map[string]*stageConfig) *method {
	sc := &stageConfig{apiID: apiID, plans: map[string]*stagePlan{}}
	for _, st := range stages {
		for id, sp := range st.plans {
			sc.plans[id] = sp
		}
	}
	return &method{stage: sc, path: UsagePath, verb: http.MethodGet, keyRequired: true}
}

// usageReport is the partner usage endpoint's answer: the caller's key,
// and, for the plan whose bucket throttles the endpoint (the first of the
// key's plans that covers a stage of the API), its plan and figures at
// the top level; Plans lists every plan of the key that covers a stage of
// the API, that one first.
type usageReport struct {
	KeyID string `json:"keyId"`
	planUsage
	Plans []planUsage `json:"plans"`
}

// planUsage is one plan of the key with its real-time figures. Quota is
// null for a plan without a quota.
type planUsage struct {
	Plan  usagePlanView `json:"plan"`
	Quota *quotaUsage   `json:"quota"`
	Today dayUsage      `json:"today"`
}

// usagePlanView is the part of a usage plan a partner sees. Throttle and
// Quota are null when the plan has none.
type usagePlanView struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Throttle  *plans.Throttle `json:"throttle"`
	Quota     *plans.Quota    `json:"quota"`
	ApiStages []apiStageView  `json:"apiStages"`
}

// apiStageView is one (API, stage) a plan covers.
type apiStageView struct {
	ApiID string `json:"apiId"`
	Stage string `json:"stage"`
}

// quotaUsage is the current quota period: cost units used and remaining,
// and the period end (RFC 3339, UTC).
type quotaUsage struct {
	Used      int64  `json:"used"`
	Remaining int64  `json:"remaining"`
	ResetAt   string `json:"resetAt"`
}

// dayUsage is the admitted requests of one UTC day of Redis time ("YYYY-MM-DD"): their
// cost units (count) and how many they were.
type dayUsage struct {
	Date     string `json:"date"`
	Count    int64  `json:"count"`
	Requests int64  `json:"requests"`
}

// serveUsage answers the partner usage endpoint (UsagePath) for the
// caller's own key: the usual key check (403 without a valid key), then
// one decision on the key's plan bucket alone (no quota, no usage count;
// a 429 when empty), then the figures read from the limiter.
func (s *Server) serveUsage(w *statusWriter, r *http.Request, ex *exchange) {
	cfg := ex.cfg
	if cfg == nil {
		ex.errType, ex.reason = ErrorTypeUnavailable, "no config snapshot loaded"
		writeUnavailable(w)
		return
	}
	ex.lreq.Version = cfg.version
	api := cfg.apis[ex.api]
	if api == nil {
		ex.errType, ex.reason = ErrorTypeNotFound, "unknown api or stage"
		writeError(w, respNotFound)
		return
	}
	ex.m, ex.resource = api.usage, UsagePath
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		ex.errType, ex.reason = ErrorTypeMethod, "method not allowed"
		w.Header()[headerAllow] = []string{"GET,HEAD"}
		writeError(w, respMethodNotAllow)
		return
	}
	if !s.checkKey(w, r, ex) {
		return
	}
	req := &ex.lreq
	req.KeyID, req.PlanID, req.API, req.Stage, req.Uncounted = ex.keyID, ex.sp.id, ex.api, "", true
	req.Buckets = ex.buckets[:0]
	if t := ex.sp.throttle; t != nil && !ex.sp.shadow {
		req.Buckets = append(req.Buckets, limit.Bucket{Level: limit.LevelPlan, RateLimit: t.RateLimit, BurstLimit: t.BurstLimit})
	}
	if len(req.Buckets) > 0 {
		d, err := s.engine.Decide(r.Context(), req)
		if !s.applyDecision(w, r, ex, d, err) {
			return
		}
	}
	rep := usageReport{KeyID: ex.keyID}
	for _, sp := range s.keyPlans(ex, api.usage.stage) {
		pu, err := s.planUsage(r, ex.keyID, ex.rec.Calendar, sp)
		if err != nil {
			ex.errType, ex.reason = ErrorTypeUnavailable, "usage: "+err.Error()
			writeUnavailable(w)
			return
		}
		rep.Plans = append(rep.Plans, pu)
	}
	rep.planUsage = rep.Plans[0]
	body, err := json.Marshal(&rep)
	if err != nil {
		ex.errType, ex.reason = ErrorTypeInternal, "usage: "+err.Error()
		writeError(w, respInternal)
		return
	}
	w.Header()["Cache-Control"] = []string{"no-store"}
	writeJSON(w, http.StatusOK, string(body))
}

// keyPlans returns the plans of ex's key that cover a stage of the API,
// ex.sp (the one planFor chose) first.
func (s *Server) keyPlans(ex *exchange, st *stageConfig) []*stagePlan {
	out := []*stagePlan{ex.sp}
	for _, id := range ex.rec.PlanIDs {
		if sp := st.plans[id]; sp != nil && sp != ex.sp {
			out = append(out, sp)
		}
	}
	return out
}

// planUsage reads the real-time figures of keyID in plan sp from the
// limiter, on its clock: the current quota period (the key's own calendar
// cal where it has one) and the limiter's UTC day.
func (s *Server) planUsage(r *http.Request, keyID string, cal plans.KeyCalendar, sp *stagePlan) (planUsage, error) {
	p := sp.plan
	pu := planUsage{Plan: usagePlanView{ID: p.ID, Name: p.Name, Throttle: p.Throttle, Quota: cal.Apply(p.QuotaRule()), ApiStages: make([]apiStageView, 0, len(p.ApiStages))}}
	for _, as := range p.ApiStages {
		pu.Plan.ApiStages = append(pu.Plan.ApiStages, apiStageView{ApiID: as.ApiID, Stage: as.Stage})
	}
	u, err := s.engine.KeyUsage(r.Context(), keyID, p.ID, sp.keyQuota(cal))
	if err != nil {
		return pu, err
	}
	if st := u.Quota; st != nil {
		pu.Quota = &quotaUsage{Used: max(0, st.Limit-st.Remaining), Remaining: st.Remaining, ResetAt: st.Reset.UTC().Format(time.RFC3339)}
	}
	pu.Today = dayUsage{Date: u.Now.UTC().Format(time.DateOnly), Count: u.TodayUnits, Requests: u.Today}
	return pu, nil
}
