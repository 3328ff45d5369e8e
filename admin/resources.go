package admin

import (
	"net/http"
	"slices"

	"github.com/go-chi/chi/v5"

	"tollgate/plans"
)

func (s *Server) resourceRoutes(r chi.Router) {
	r.Get("/restapis/{restApiId}/resources", s.handle(s.getResources))
	r.Post("/restapis/{restApiId}/resources/{resourceId}", s.handle(s.createResource))
	r.Get("/restapis/{restApiId}/resources/{resourceId}", s.handle(s.getResource))
	r.Patch("/restapis/{restApiId}/resources/{resourceId}", s.handle(s.updateResource))
	r.Delete("/restapis/{restApiId}/resources/{resourceId}", s.handle(s.deleteResource))
	s.methodRoutes(r)
	s.integrationRoutes(r)
	s.responseRoutes(r)
	s.gatewayResponseRoutes(r)
	s.authorizerRoutes(r)
}

// resourceView is a Resource as sent: without ?embed=methods each method
// is an empty object (as AWS, which lists only the method names); with it,
// the whole Method including its methodIntegration.
type resourceView struct {
	ID              string         `json:"id"`
	ParentID        string         `json:"parentId,omitempty"`
	PathPart        string         `json:"pathPart,omitempty"`
	Path            string         `json:"path"`
	ResourceMethods map[string]any `json:"resourceMethods,omitempty"`
}

// viewResource builds the resourceView of res.
func viewResource(res *plans.Resource, embed bool) resourceView {
	v := resourceView{ID: res.ID, ParentID: res.ParentID, PathPart: res.PathPart, Path: res.Path}
	if len(res.ResourceMethods) > 0 {
		v.ResourceMethods = make(map[string]any, len(res.ResourceMethods))
		for name, m := range res.ResourceMethods {
			if embed {
				v.ResourceMethods[name] = m
			} else {
				v.ResourceMethods[name] = struct{}{}
			}
		}
	}
	return v
}

// embedMethods reports whether ?embed= asks for "methods".
func embedMethods(r *http.Request) bool {
	return slices.Contains(r.URL.Query()["embed"], "methods")
}

// getResources: GET /restapis/{id}/resources[?embed=methods] → 200 list.
func (s *Server) getResources(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	rs, next, err := s.store.ListResources(r.Context(), param(r, "restApiId"), p)
	if err != nil {
		return err
	}
	embed := embedMethods(r)
	views := make([]resourceView, len(rs))
	for i := range rs {
		views[i] = viewResource(&rs[i], embed)
	}
	writeList(w, views, next)
	return nil
}

// getResource: GET /restapis/{id}/resources/{rid}[?embed=methods] → 200.
func (s *Server) getResource(w http.ResponseWriter, r *http.Request) error {
	res, err := s.store.GetResource(r.Context(), param(r, "restApiId"), param(r, "resourceId"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, viewResource(res, embedMethods(r)))
	return nil
}

// createResource: POST /restapis/{id}/resources/{parentId} {pathPart} → 201.
func (s *Server) createResource(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		PathPart string `json:"pathPart"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	if err := plans.ValidatePathPart(in.PathPart); err != nil {
		return err
	}
	res, err := s.store.CreateResource(r.Context(), param(r, "restApiId"), param(r, "resourceId"), in.PathPart)
	if err != nil {
		return err
	}
	s.published(r.Context(), "CreateResource")
	writeJSON(w, http.StatusCreated, viewResource(res, true))
	return nil
}

// updateResource: PATCH /restapis/{id}/resources/{rid}; path /pathPart
// (the store recomputes the subtree's paths).
func (s *Server) updateResource(w http.ResponseWriter, r *http.Request) error {
	res, err := patchRecord(s, r, "UpdateResource", func(fn func(*plans.Resource) error) (*plans.Resource, error) {
		return s.store.UpdateResource(r.Context(), param(r, "restApiId"), param(r, "resourceId"), fn)
	}, each(patchResource))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, viewResource(res, true))
	return nil
}

// deleteResource: DELETE /restapis/{id}/resources/{rid} → 202.
func (s *Server) deleteResource(w http.ResponseWriter, r *http.Request) error {
	if err := s.store.DeleteResource(r.Context(), param(r, "restApiId"), param(r, "resourceId")); err != nil {
		return err
	}
	s.published(r.Context(), "DeleteResource")
	writeAccepted(w)
	return nil
}

// patchResource applies one operation to res: replace /pathPart (not on
// the root).
func patchResource(res *plans.Resource, op patchOp) error {
	if op.Path != "/pathPart" || op.Op != opReplace {
		return badPath(op)
	}
	if res.Path == "/" {
		return plans.Invalid("/pathPart", "the root resource has no pathPart")
	}
	if err := plans.ValidatePathPart(op.Value); err != nil {
		return err
	}
	res.PathPart = op.Value
	return nil
}
