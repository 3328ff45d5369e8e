package admin

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"tollgate/plans"
)

const (
	methodResponsePath      = methodPath + "/responses/{statusCode}"
	integrationResponsePath = integrationPath + "/responses/{statusCode}"
	msgNoResponse           = "Invalid Response status code specified"
)

func (s *Server) responseRoutes(r chi.Router) {
	r.Put(methodResponsePath, s.handle(s.putMethodResponse))
	r.Get(methodResponsePath, s.handle(s.getMethodResponse))
	r.Delete(methodResponsePath, s.handle(s.deleteMethodResponse))
	r.Patch(methodResponsePath, s.handle(s.updateMethodResponse))
	r.Put(integrationResponsePath, s.handle(s.putIntegrationResponse))
	r.Get(integrationResponsePath, s.handle(s.getIntegrationResponse))
	r.Delete(integrationResponsePath, s.handle(s.deleteIntegrationResponse))
	r.Patch(integrationResponsePath, s.handle(s.updateIntegrationResponse))
}

// responseTarget reads a response route's method target and status code
// (400 naming statusCode unless it is 100..599).
func responseTarget(r *http.Request) (methodTarget, string, error) {
	t, err := target(r)
	if err != nil {
		return t, "", err
	}
	code := param(r, "statusCode")
	return t, code, plans.ValidateStatusCode("statusCode", code)
}

// putMethodResponse: PUT .../methods/{m}/responses/{code} → 201
// MethodResponse (replacing any of that code). Body: responseParameters,
// responseModels.
func (s *Server) putMethodResponse(w http.ResponseWriter, r *http.Request) error {
	t, code, err := responseTarget(r)
	if err != nil {
		return err
	}
	mr := &plans.MethodResponse{}
	if err := decode(r, mr); err != nil {
		return err
	}
	mr.StatusCode = code
	_, err = s.store.UpdateMethod(r.Context(), t.api, t.resource, t.method, func(m *plans.Method) error {
		if m.MethodResponses == nil {
			m.MethodResponses = map[string]*plans.MethodResponse{}
		}
		m.MethodResponses[code] = mr
		return nil
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, mr)
	return nil
}

// getMethodResponse: GET .../methods/{m}/responses/{code} → 200.
func (s *Server) getMethodResponse(w http.ResponseWriter, r *http.Request) error {
	t, code, err := responseTarget(r)
	if err != nil {
		return err
	}
	m, err := s.store.GetMethod(r.Context(), t.api, t.resource, t.method)
	if err != nil {
		return err
	}
	mr := m.MethodResponses[code]
	if mr == nil {
		return plans.NotFound(msgNoResponse)
	}
	writeJSON(w, http.StatusOK, mr)
	return nil
}

// deleteMethodResponse: DELETE .../methods/{m}/responses/{code} → 202.
func (s *Server) deleteMethodResponse(w http.ResponseWriter, r *http.Request) error {
	t, code, err := responseTarget(r)
	if err != nil {
		return err
	}
	_, err = s.store.UpdateMethod(r.Context(), t.api, t.resource, t.method, func(m *plans.Method) error {
		if m.MethodResponses[code] == nil {
			return plans.NotFound(msgNoResponse)
		}
		delete(m.MethodResponses, code)
		return nil
	})
	if err != nil {
		return err
	}
	writeAccepted(w)
	return nil
}

// putIntegrationResponse: PUT .../integration/responses/{code} → 201
// IntegrationResponse (replacing any of that code). Body:
// selectionPattern, responseParameters (none mapping a header the gateway
// writes itself: plans.CheckResponseParameters), responseTemplates,
// contentHandling.
func (s *Server) putIntegrationResponse(w http.ResponseWriter, r *http.Request) error {
	t, code, err := responseTarget(r)
	if err != nil {
		return err
	}
	ir := &plans.IntegrationResponse{}
	if err := decode(r, ir); err != nil {
		return err
	}
	if err := plans.CheckResponseParameters("responseParameters", ir.ResponseParameters); err != nil {
		return err
	}
	ir.StatusCode = code
	_, err = s.store.UpdateIntegration(r.Context(), t.api, t.resource, t.method, func(in *plans.Integration) error {
		if in.IntegrationResponses == nil {
			in.IntegrationResponses = map[string]*plans.IntegrationResponse{}
		}
		in.IntegrationResponses[code] = ir
		return nil
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, ir)
	return nil
}

// getIntegrationResponse: GET .../integration/responses/{code} → 200.
func (s *Server) getIntegrationResponse(w http.ResponseWriter, r *http.Request) error {
	t, code, err := responseTarget(r)
	if err != nil {
		return err
	}
	in, err := s.store.GetIntegration(r.Context(), t.api, t.resource, t.method)
	if err != nil {
		return err
	}
	ir := in.IntegrationResponses[code]
	if ir == nil {
		return plans.NotFound(msgNoResponse)
	}
	writeJSON(w, http.StatusOK, ir)
	return nil
}

// deleteIntegrationResponse: DELETE .../integration/responses/{code} → 202.
func (s *Server) deleteIntegrationResponse(w http.ResponseWriter, r *http.Request) error {
	t, code, err := responseTarget(r)
	if err != nil {
		return err
	}
	_, err = s.store.UpdateIntegration(r.Context(), t.api, t.resource, t.method, func(in *plans.Integration) error {
		if in.IntegrationResponses[code] == nil {
			return plans.NotFound(msgNoResponse)
		}
		delete(in.IntegrationResponses, code)
		return nil
	})
	if err != nil {
		return err
	}
	writeAccepted(w)
	return nil
}

// patchMapEntry applies add/replace (value) or remove of key in *m; key
// is unescaped ("application~1json" → "application/json").
func patchMapEntry(op patchOp, m *map[string]string, key string) error {
	key = strings.ReplaceAll(key, "~1", "/")
	if key == "" {
		return badPath(op)
	}
	if op.Op == opRemove {
		delete(*m, key)
		return nil
	}
	if *m == nil {
		*m = map[string]string{}
	}
	(*m)[key] = op.Value
	return nil
}

// patchMethodResponse applies one operation to mr: add/replace/remove
// /responseParameters/{name} (value true or false) and
// /responseModels/{content type}.
func patchMethodResponse(mr *plans.MethodResponse, op patchOp) error {
	if name, ok := strings.CutPrefix(op.Path, "/responseParameters/"); ok && name != "" {
		if op.Op == opRemove {
			delete(mr.ResponseParameters, name)
			return nil
		}
		required, err := parseBool(op)
		if err != nil {
			return err
		}
		if mr.ResponseParameters == nil {
			mr.ResponseParameters = map[string]bool{}
		}
		mr.ResponseParameters[name] = required
		return nil
	}
	if ct, ok := strings.CutPrefix(op.Path, "/responseModels/"); ok {
		return patchMapEntry(op, &mr.ResponseModels, ct)
	}
	return badPath(op)
}

// patchIntegrationResponse applies one operation to ir: /selectionPattern,
// /contentHandling, /responseParameters/{name}, /responseTemplates/{content type}.
func patchIntegrationResponse(ir *plans.IntegrationResponse, op patchOp) error {
	switch op.Path {
	case "/selectionPattern":
		return setString(op, &ir.SelectionPattern)
	case "/contentHandling":
		return setString(op, &ir.ContentHandling)
	}
	if ok, err := patchMappings(op, &ir.ResponseParameters, &ir.ResponseTemplates); ok {
		return err
	}
	return badPath(op)
}

// patchMappings applies add/replace/remove of /responseParameters/{name}
// and /responseTemplates/{content type}; ok is false for other paths. An
// added or replaced parameter may not map a header the gateway writes
// itself (plans.CheckResponseParameter); one stored earlier can be removed.
func patchMappings(op patchOp, params, templates *map[string]string) (ok bool, err error) {
	if name, found := strings.CutPrefix(op.Path, "/responseParameters/"); found {
		if op.Op != opRemove {
			if err := plans.CheckResponseParameter("responseParameters", name); err != nil {
				return true, err
			}
		}
		return true, patchMapEntry(op, params, name)
	}
	if ct, found := strings.CutPrefix(op.Path, "/responseTemplates/"); found {
		return true, patchMapEntry(op, templates, ct)
	}
	return false, nil
}

// patchResponse runs a PATCH of one response inside its method's (or
// integration's) store update: entry finds the response (404 when
// missing), apply changes it; the store validates the whole record.
func patchResponse[P, R any](s *Server, r *http.Request, op string, update func(fn func(*P) error) (*P, error),
	entry func(*P) *R, apply func(*R, patchOp) error) (*R, error) {
	var out *R
	_, err := patchRecord(s, r, op, update, func(p *P, ops []patchOp) error {
		if out = entry(p); out == nil {
			return plans.NotFound(msgNoResponse)
		}
		return each(apply)(out, ops)
	})
	return out, err
}

// updateMethodResponse: PATCH .../methods/{m}/responses/{code} → 200.
func (s *Server) updateMethodResponse(w http.ResponseWriter, r *http.Request) error {
	t, code, err := responseTarget(r)
	if err != nil {
		return err
	}
	out, err := patchResponse(s, r, "UpdateMethodResponse", func(fn func(*plans.Method) error) (*plans.Method, error) {
		return s.store.UpdateMethod(r.Context(), t.api, t.resource, t.method, fn)
	}, func(m *plans.Method) *plans.MethodResponse { return m.MethodResponses[code] }, patchMethodResponse)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// updateIntegrationResponse: PATCH .../integration/responses/{code} → 200.
func (s *Server) updateIntegrationResponse(w http.ResponseWriter, r *http.Request) error {
	t, code, err := responseTarget(r)
	if err != nil {
		return err
	}
	out, err := patchResponse(s, r, "UpdateIntegrationResponse", func(fn func(*plans.Integration) error) (*plans.Integration, error) {
		return s.store.UpdateIntegration(r.Context(), t.api, t.resource, t.method, fn)
	}, func(in *plans.Integration) *plans.IntegrationResponse { return in.IntegrationResponses[code] }, patchIntegrationResponse)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
