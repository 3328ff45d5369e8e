package admin

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"tollgate/plans"
)

func (s *Server) usagePlanRoutes(r chi.Router) {
	r.Post("/usageplans", s.handle(s.createUsagePlan))
	r.Get("/usageplans", s.handle(s.getUsagePlans))
	r.Get("/usageplans/{usagePlanId}", s.handle(s.getUsagePlan))
	r.Patch("/usageplans/{usagePlanId}", s.handle(s.updateUsagePlan))
	r.Delete("/usageplans/{usagePlanId}", s.handle(s.deleteUsagePlan))
	s.usagePlanKeyRoutes(r)
	s.usageRoutes(r)
}

// quotaInput is a quota as sent: limit is required (a quota without one
// is 400), offset defaults to 0.
type quotaInput struct {
	Limit    *int32 `json:"limit"`
	Offset   int32  `json:"offset"`
	Period   string `json:"period"`
	Anchor   string `json:"anchor"`
	TimeZone string `json:"timeZone"`
}

// createUsagePlanInput is CreateUsagePlan's body. An absent throttle or
// quota means no limit in that dimension; inside a throttle a missing field
// means 0.
type createUsagePlanInput struct {
	Name          string               `json:"name"`
	Description   string               `json:"description"`
	ApiStages     []plans.ApiStage     `json:"apiStages"`
	Throttle      *plans.Throttle      `json:"throttle"`
	Quota         *quotaInput          `json:"quota"`
	Alerts        []int32              `json:"alerts"`
	Cost          *plans.CostSettings  `json:"cost"`
	CustomerQuota *plans.CustomerQuota `json:"customerQuota"`
	Tags          map[string]string    `json:"tags"`
}

// plan builds the UsagePlan in, checking what JSON decoding cannot.
func (in *createUsagePlanInput) plan() (*plans.UsagePlan, error) {
	p := &plans.UsagePlan{Name: in.Name, Description: in.Description, ApiStages: in.ApiStages, Throttle: in.Throttle,
		Alerts: in.Alerts, Tags: in.Tags, CostSettings: in.Cost, CustomerBudget: in.CustomerQuota}
	if in.Quota != nil {
		if in.Quota.Limit == nil {
			return nil, plans.Invalid("quota.limit", "quota.limit is required when a quota is given")
		}
		p.Quota = &plans.Quota{Limit: *in.Quota.Limit, Offset: in.Quota.Offset, Period: in.Quota.Period,
			Anchor: in.Quota.Anchor, TimeZone: in.Quota.TimeZone}
	}
	p.Normalize()
	return p, p.Validate()
}

// createUsagePlan: POST /usageplans → 201 UsagePlan (its api stages must
// exist: 400 naming apiStages).
func (s *Server) createUsagePlan(w http.ResponseWriter, r *http.Request) error {
	var in createUsagePlanInput
	if err := decode(r, &in); err != nil {
		return err
	}
	p, err := in.plan()
	if err != nil {
		return err
	}
	if err := s.store.CreateUsagePlan(r.Context(), p); err != nil {
		return err
	}
	s.published(r.Context(), "CreateUsagePlan")
	writeJSON(w, http.StatusCreated, p)
	return nil
}

// getUsagePlans: GET /usageplans[?keyId=] → 200 list.
func (s *Server) getUsagePlans(w http.ResponseWriter, r *http.Request) error {
	pg, err := page(r)
	if err != nil {
		return err
	}
	ps, next, err := s.store.ListUsagePlans(r.Context(), r.URL.Query().Get("keyId"), pg)
	if err != nil {
		return err
	}
	writeList(w, ps, next)
	return nil
}

// getUsagePlan: GET /usageplans/{id} → 200 UsagePlan.
func (s *Server) getUsagePlan(w http.ResponseWriter, r *http.Request) error {
	p, err := s.store.GetUsagePlan(r.Context(), param(r, "usagePlanId"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, p)
	return nil
}

// updateUsagePlan: PATCH /usageplans/{id} → 200 UsagePlan; paths in
// planpatch.go. A key that would end up in two plans covering one (api,
// stage) is 409 (the store's constraint).
func (s *Server) updateUsagePlan(w http.ResponseWriter, r *http.Request) error {
	p, err := patchRecord(s, r, "UpdateUsagePlan", func(fn func(*plans.UsagePlan) error) (*plans.UsagePlan, error) {
		return s.store.UpdateUsagePlan(r.Context(), param(r, "usagePlanId"), fn)
	}, patchUsagePlan)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, p)
	return nil
}

// deleteUsagePlan: DELETE /usageplans/{id} → 202.
func (s *Server) deleteUsagePlan(w http.ResponseWriter, r *http.Request) error {
	if err := s.store.DeleteUsagePlan(r.Context(), param(r, "usagePlanId")); err != nil {
		return err
	}
	s.published(r.Context(), "DeleteUsagePlan")
	writeAccepted(w)
	return nil
}
