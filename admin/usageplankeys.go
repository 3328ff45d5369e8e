package admin

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"tollgate/plans"
)

func (s *Server) usagePlanKeyRoutes(r chi.Router) {
	r.Post("/usageplans/{usagePlanId}/keys", s.handle(s.createUsagePlanKey))
	r.Get("/usageplans/{usagePlanId}/keys", s.handle(s.getUsagePlanKeys))
	r.Get("/usageplans/{usagePlanId}/keys/{keyId}", s.handle(s.getUsagePlanKey))
	r.Delete("/usageplans/{usagePlanId}/keys/{keyId}", s.handle(s.deleteUsagePlanKey))
}

// createUsagePlanKey: POST /usageplans/{id}/keys {keyId, keyType: API_KEY}
// → 201 UsagePlanKey; 409 when the key is in the plan already or in another
// plan covering one of the same (api, stage) pairs.
func (s *Server) createUsagePlanKey(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		KeyID   string `json:"keyId"`
		KeyType string `json:"keyType"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	if in.KeyID == "" {
		return plans.Invalid("keyId", "keyId is required")
	}
	if in.KeyType != plans.KeyTypeAPIKey {
		return plans.Invalid("keyType", "keyType %q is not supported: only API_KEY", in.KeyType)
	}
	k, err := s.store.CreateUsagePlanKey(r.Context(), param(r, "usagePlanId"), in.KeyID)
	if err != nil {
		return err
	}
	s.published(r.Context(), "CreateUsagePlanKey")
	writeJSON(w, http.StatusCreated, k)
	return nil
}

// getUsagePlanKeys: GET /usageplans/{id}/keys[?name=prefix] → 200 list.
func (s *Server) getUsagePlanKeys(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	keys, next, err := s.store.ListUsagePlanKeys(r.Context(), param(r, "usagePlanId"), r.URL.Query().Get("name"), p)
	if err != nil {
		return err
	}
	writeList(w, keys, next)
	return nil
}

// getUsagePlanKey: GET /usageplans/{id}/keys/{keyId} → 200 UsagePlanKey.
func (s *Server) getUsagePlanKey(w http.ResponseWriter, r *http.Request) error {
	k, err := s.store.GetUsagePlanKey(r.Context(), param(r, "usagePlanId"), param(r, "keyId"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, k)
	return nil
}

// deleteUsagePlanKey: DELETE /usageplans/{id}/keys/{keyId} → 202.
func (s *Server) deleteUsagePlanKey(w http.ResponseWriter, r *http.Request) error {
	if err := s.store.DeleteUsagePlanKey(r.Context(), param(r, "usagePlanId"), param(r, "keyId")); err != nil {
		return err
	}
	s.published(r.Context(), "DeleteUsagePlanKey")
	writeAccepted(w)
	return nil
}
