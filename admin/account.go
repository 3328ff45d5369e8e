package admin

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"tollgate/plans"
)

func (s *Server) accountRoutes(r chi.Router) {
	r.Get("/account", s.handle(s.getAccount))
	r.Patch("/account", s.handle(s.updateAccount))
}

// getAccount: GET /account → 200 {throttleSettings, features: ["UsagePlans"]}.
func (s *Server) getAccount(w http.ResponseWriter, r *http.Request) error {
	a, err := s.store.GetAccount(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a)
	return nil
}

// updateAccount: PATCH /account → 200; paths /throttleSettings/rateLimit
// and /throttleSettings/burstLimit (replace). Other AWS account paths
// (e.g. /cloudwatchRoleArn) are 400 naming the path.
func (s *Server) updateAccount(w http.ResponseWriter, r *http.Request) error {
	a, err := patchRecord(s, r, "UpdateAccount", func(fn func(*plans.Account) error) (*plans.Account, error) {
		return s.store.UpdateAccount(r.Context(), fn)
	}, func(a *plans.Account, ops []patchOp) error {
		if err := each(patchAccount)(a, ops); err != nil {
			return err
		}
		return a.ThrottleSettings.Validate("throttleSettings")
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a)
	return nil
}

// patchAccount applies one operation to a: replace
// /throttleSettings/rateLimit or /throttleSettings/burstLimit.
func patchAccount(a *plans.Account, op patchOp) error {
	switch op.Path {
	case "/throttleSettings/rateLimit":
		return setDouble(op, &a.ThrottleSettings.RateLimit)
	case "/throttleSettings/burstLimit":
		return setInt32(op, &a.ThrottleSettings.BurstLimit)
	}
	return badPath(op)
}
