package admin

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"tollgate/plans"
)

func (s *Server) restApiRoutes(r chi.Router) {
	r.Post("/restapis", s.handle(s.createRestApi))
	r.Get("/restapis", s.handle(s.getRestApis))
	r.Get("/restapis/{restApiId}", s.handle(s.getRestApi))
	r.Patch("/restapis/{restApiId}", s.handle(s.updateRestApi))
	r.Put("/restapis/{restApiId}", s.handle(s.putRestApi))
	r.Get("/restapis/{restApiId}/stages/{stageName}/exports/{exportType}", s.handle(s.getExport))
	r.Delete("/restapis/{restApiId}", s.handle(s.deleteRestApi))
}

// createRestApiInput is CreateRestApi's body (fields outside the subset
// are ignored).
type createRestApiInput struct {
	Name         string            `json:"name"`
	Description  string            `json:"description"`
	ApiKeySource string            `json:"apiKeySource"`
	Tags         map[string]string `json:"tags"`
}

// createRestApi: POST /restapis → 201 RestApi. ?mode=import is ImportRestApi.
func (s *Server) createRestApi(w http.ResponseWriter, r *http.Request) error {
	if r.URL.Query().Get("mode") != "" {
		return s.importRestApi(w, r)
	}
	var in createRestApiInput
	if err := decode(r, &in); err != nil {
		return err
	}
	api := &plans.RestApi{Name: in.Name, Description: in.Description, ApiKeySource: in.ApiKeySource, Tags: in.Tags}
	api.Normalize()
	if err := api.Validate(); err != nil {
		return err
	}
	if err := s.store.CreateRestApi(r.Context(), api); err != nil {
		return err
	}
	s.published(r.Context(), "CreateRestApi")
	writeJSON(w, http.StatusCreated, api)
	return nil
}

// getRestApis: GET /restapis → 200 list of RestApi.
func (s *Server) getRestApis(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	apis, next, err := s.store.ListRestApis(r.Context(), p)
	if err != nil {
		return err
	}
	writeList(w, apis, next)
	return nil
}

// getRestApi: GET /restapis/{id} → 200 RestApi.
func (s *Server) getRestApi(w http.ResponseWriter, r *http.Request) error {
	api, err := s.store.GetRestApi(r.Context(), param(r, "restApiId"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api)
	return nil
}

// updateRestApi: PATCH /restapis/{id}; paths /name, /description.
func (s *Server) updateRestApi(w http.ResponseWriter, r *http.Request) error {
	api, err := patchRecord(s, r, "UpdateRestApi", func(fn func(*plans.RestApi) error) (*plans.RestApi, error) {
		return s.store.UpdateRestApi(r.Context(), param(r, "restApiId"), fn)
	}, each(patchRestApi))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api)
	return nil
}

// patchRestApi applies one operation to a.
func patchRestApi(a *plans.RestApi, op patchOp) error {
	switch op.Path {
	case "/name":
		if err := needOp(op, opReplace); err != nil {
			return err
		}
		return setString(op, &a.Name)
	case "/description":
		return setString(op, &a.Description)
	}
	return badPath(op)
}

// deleteRestApi: DELETE /restapis/{id} → 202.
func (s *Server) deleteRestApi(w http.ResponseWriter, r *http.Request) error {
	if err := s.store.DeleteRestApi(r.Context(), param(r, "restApiId")); err != nil {
		return err
	}
	s.published(r.Context(), "DeleteRestApi")
	writeAccepted(w)
	return nil
}
