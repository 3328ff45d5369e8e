package admin

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"tollgate/plans"
)

const methodPath = "/restapis/{restApiId}/resources/{resourceId}/methods/{httpMethod}"

func (s *Server) methodRoutes(r chi.Router) {
	r.Put(methodPath, s.handle(s.putMethod))
	r.Get(methodPath, s.handle(s.getMethod))
	r.Patch(methodPath, s.handle(s.updateMethod))
	r.Delete(methodPath, s.handle(s.deleteMethod))
}

// methodTarget is the (api, resource, HTTP method) a method route names.
type methodTarget struct{ api, resource, method string }

// target reads the method route's parameters; the HTTP method must be one
// tollgate supports (400 naming httpMethod).
func target(r *http.Request) (methodTarget, error) {
	t := methodTarget{param(r, "restApiId"), param(r, "resourceId"), strings.ToUpper(param(r, "httpMethod"))}
	if !plans.ValidHTTPMethod(t.method) {
		return t, plans.Invalid("httpMethod", "httpMethod %q is not one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, ANY", t.method)
	}
	return t, nil
}

// putMethodInput is PutMethod's body (fields outside the subset ignored).
type putMethodInput struct {
	AuthorizationType   string          `json:"authorizationType"`
	AuthorizerID        string          `json:"authorizerId"`
	AuthorizationScopes []string        `json:"authorizationScopes"`
	APIKeyRequired      bool            `json:"apiKeyRequired"`
	RequestParameters   map[string]bool `json:"requestParameters"`
}

// putMethod: PUT .../methods/{httpMethod} → 201 Method (replacing any).
func (s *Server) putMethod(w http.ResponseWriter, r *http.Request) error {
	t, err := target(r)
	if err != nil {
		return err
	}
	var in putMethodInput
	if err := decode(r, &in); err != nil {
		return err
	}
	m := &plans.Method{HTTPMethod: t.method, AuthorizationType: in.AuthorizationType, AuthorizerID: in.AuthorizerID,
		AuthorizationScopes: in.AuthorizationScopes, APIKeyRequired: in.APIKeyRequired, RequestParameters: in.RequestParameters}
	m.Normalize()
	if err := m.Validate(); err != nil {
		return err
	}
	if err := s.store.PutMethod(r.Context(), t.api, t.resource, m); err != nil {
		return err
	}
	s.published(r.Context(), "PutMethod")
	writeJSON(w, http.StatusCreated, m)
	return nil
}

// getMethod: GET .../methods/{httpMethod} → 200 Method with its integration.
func (s *Server) getMethod(w http.ResponseWriter, r *http.Request) error {
	t, err := target(r)
	if err != nil {
		return err
	}
	m, err := s.store.GetMethod(r.Context(), t.api, t.resource, t.method)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, m)
	return nil
}

// updateMethod: PATCH .../methods/{httpMethod}; paths /apiKeyRequired,
// /authorizationType (NONE opens a method an authorizer or AWS_IAM
// closed), /authorizerId, /authorizationScopes (add or remove one scope),
// /requestParameters/{name}.
func (s *Server) updateMethod(w http.ResponseWriter, r *http.Request) error {
	t, err := target(r)
	if err != nil {
		return err
	}
	m, err := patchRecord(s, r, "UpdateMethod", func(fn func(*plans.Method) error) (*plans.Method, error) {
		return s.store.UpdateMethod(r.Context(), t.api, t.resource, t.method, fn)
	}, each(patchMethod))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, m)
	return nil
}

// patchMethod applies one operation to m.
func patchMethod(m *plans.Method, op patchOp) error {
	switch op.Path {
	case "/apiKeyRequired":
		return setBool(op, &m.APIKeyRequired)
	case "/authorizationType":
		if err := needOp(op, opReplace); err != nil {
			return err
		}
		return setString(op, &m.AuthorizationType)
	case "/authorizerId":
		return setString(op, &m.AuthorizerID)
	case "/authorizationScopes":
		return patchList(op, &m.AuthorizationScopes)
	}
	if name, ok := strings.CutPrefix(op.Path, "/requestParameters/"); ok && name != "" {
		if op.Op == opRemove {
			delete(m.RequestParameters, name)
			return nil
		}
		required, err := parseBool(op)
		if err != nil {
			return err
		}
		if m.RequestParameters == nil {
			m.RequestParameters = map[string]bool{}
		}
		m.RequestParameters[name] = required
		return nil
	}
	return badPath(op)
}

// deleteMethod: DELETE .../methods/{httpMethod} → 202.
func (s *Server) deleteMethod(w http.ResponseWriter, r *http.Request) error {
	t, err := target(r)
	if err != nil {
		return err
	}
	if err := s.store.DeleteMethod(r.Context(), t.api, t.resource, t.method); err != nil {
		return err
	}
	s.published(r.Context(), "DeleteMethod")
	writeAccepted(w)
	return nil
}
