package admin

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"tollgate/plans"
)

func (s *Server) alertRoutes(r chi.Router) {
	r.Get("/alerts", s.handle(s.getAlerts))
}

// getAlerts: GET /alerts?planId=&keyId=&customerId=&limit=&position= →
// 200 {item: [{id, planId, scope, keyId, customerId, threshold, used,
// limit, periodStart, periodEnd, time, delivery: {state, attempts,
// lastError, deliveredAt}}], position}: the quota alert thresholds
// crossed, newest first, each with the state of its webhook
// (docs/usage.md, "Alerts").
func (s *Server) getAlerts(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	alerts, next, err := s.store.Alerts(r.Context(), plans.AlertQuery{PlanID: q.Get("planId"), KeyID: q.Get("keyId"),
		CustomerID: q.Get("customerId"), Limit: p.Limit, Position: p.Position})
	if err != nil {
		return err
	}
	writeList(w, alerts, next)
	return nil
}
