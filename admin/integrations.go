package admin

import (
	"net/http"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	"tollgate/plans"
)

const integrationPath = methodPath + "/integration"

func (s *Server) integrationRoutes(r chi.Router) {
	r.Put(integrationPath, s.handle(s.putIntegration))
	r.Get(integrationPath, s.handle(s.getIntegration))
	r.Patch(integrationPath, s.handle(s.updateIntegration))
	r.Delete(integrationPath, s.handle(s.deleteIntegration))
}

// putIntegrationInput is PutIntegration's body. "httpMethod" is the
// integration's method (the SDK's IntegrationHttpMethod).
type putIntegrationInput struct {
	Type                string            `json:"type"`
	HTTPMethod          string            `json:"httpMethod"`
	URI                 string            `json:"uri"`
	TimeoutInMillis     int32             `json:"timeoutInMillis"`
	CacheKeyParameters  []string          `json:"cacheKeyParameters"`
	CacheNamespace      string            `json:"cacheNamespace"`
	RequestParameters   map[string]string `json:"requestParameters"`
	PassthroughBehavior string            `json:"passthroughBehavior"`
	ConnectionType      string            `json:"connectionType"`
	RequestTemplates    map[string]string `json:"requestTemplates"`
}

// putIntegration: PUT .../integration → 201 Integration. Types other than
// HTTP_PROXY and MOCK are 400 naming the type.
func (s *Server) putIntegration(w http.ResponseWriter, r *http.Request) error {
	t, err := target(r)
	if err != nil {
		return err
	}
	var in putIntegrationInput
	if err := decode(r, &in); err != nil {
		return err
	}
	integ := &plans.Integration{
		Type: in.Type, HTTPMethod: strings.ToUpper(in.HTTPMethod), URI: in.URI, TimeoutInMillis: in.TimeoutInMillis,
		CacheKeyParameters: in.CacheKeyParameters, CacheNamespace: in.CacheNamespace,
		RequestParameters: in.RequestParameters, PassthroughBehavior: in.PassthroughBehavior, ConnectionType: in.ConnectionType,
		RequestTemplates: in.RequestTemplates,
	}
	if integ.CacheNamespace == "" {
		integ.CacheNamespace = t.resource // AWS defaults the namespace to the resource id
	}
	integ.Normalize()
	if err := integ.Validate(); err != nil {
		return err
	}
	if err := s.store.PutIntegration(r.Context(), t.api, t.resource, t.method, integ); err != nil {
		return err
	}
	s.published(r.Context(), "PutIntegration")
	writeJSON(w, http.StatusCreated, integ)
	return nil
}

// getIntegration: GET .../integration → 200 Integration.
func (s *Server) getIntegration(w http.ResponseWriter, r *http.Request) error {
	t, err := target(r)
	if err != nil {
		return err
	}
	integ, err := s.store.GetIntegration(r.Context(), t.api, t.resource, t.method)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, integ)
	return nil
}

// updateIntegration: PATCH .../integration; paths /uri, /httpMethod,
// /timeoutInMillis, /cacheNamespace, /connectionType, add|remove
// /cacheKeyParameters/{param} (or /cacheKeyParameters with the parameter as
// value), /requestParameters/{name} and /requestTemplates/{content type
// with "/" written "~1"}.
func (s *Server) updateIntegration(w http.ResponseWriter, r *http.Request) error {
	t, err := target(r)
	if err != nil {
		return err
	}
	integ, err := patchRecord(s, r, "UpdateIntegration", func(fn func(*plans.Integration) error) (*plans.Integration, error) {
		return s.store.UpdateIntegration(r.Context(), t.api, t.resource, t.method, fn)
	}, each(patchIntegration))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, integ)
	return nil
}

// patchIntegration applies one operation to in.
func patchIntegration(in *plans.Integration, op patchOp) error {
	switch op.Path {
	case "/uri":
		if err := needOp(op, opReplace); err != nil {
			return err
		}
		return setString(op, &in.URI)
	case "/httpMethod":
		if err := needOp(op, opReplace); err != nil {
			return err
		}
		in.HTTPMethod = strings.ToUpper(op.Value)
		return nil
	case "/timeoutInMillis":
		return setInt32(op, &in.TimeoutInMillis)
	case "/cacheNamespace":
		return setString(op, &in.CacheNamespace)
	case "/connectionType":
		if err := needOp(op, opReplace); err != nil {
			return err
		}
		return setString(op, &in.ConnectionType)
	case "/cacheKeyParameters":
		return patchCacheKeyParameter(in, op, op.Value)
	}
	if name, ok := strings.CutPrefix(op.Path, "/cacheKeyParameters/"); ok && name != "" {
		return patchCacheKeyParameter(in, op, name)
	}
	if ct, ok := strings.CutPrefix(op.Path, "/requestTemplates/"); ok && ct != "" {
		ct = strings.ReplaceAll(ct, "~1", "/") // "application~1json"
		if op.Op == opRemove {
			delete(in.RequestTemplates, ct)
			return nil
		}
		if in.RequestTemplates == nil {
			in.RequestTemplates = map[string]string{}
		}
		in.RequestTemplates[ct] = op.Value
		return nil
	}
	if name, ok := strings.CutPrefix(op.Path, "/requestParameters/"); ok && name != "" {
		if op.Op == opRemove {
			delete(in.RequestParameters, name)
			return nil
		}
		if in.RequestParameters == nil {
			in.RequestParameters = map[string]string{}
		}
		in.RequestParameters[name] = op.Value
		return nil
	}
	return badPath(op)
}

// patchCacheKeyParameter adds or removes one cache key parameter.
func patchCacheKeyParameter(in *plans.Integration, op patchOp, name string) error {
	if name == "" {
		return plans.Invalid(op.Path, "%s: name the cache key parameter in the path or the value", op.Path)
	}
	i := slices.Index(in.CacheKeyParameters, name)
	switch op.Op {
	case opAdd:
		if i < 0 {
			in.CacheKeyParameters = append(in.CacheKeyParameters, name)
		}
		return nil
	case opRemove:
		if i < 0 {
			return plans.Invalid(op.Path, "cache key parameter %q is not set", name)
		}
		in.CacheKeyParameters = slices.Delete(in.CacheKeyParameters, i, i+1)
		return nil
	}
	return badPath(op)
}

// deleteIntegration: DELETE .../integration → 202.
func (s *Server) deleteIntegration(w http.ResponseWriter, r *http.Request) error {
	t, err := target(r)
	if err != nil {
		return err
	}
	if err := s.store.DeleteIntegration(r.Context(), t.api, t.resource, t.method); err != nil {
		return err
	}
	s.published(r.Context(), "DeleteIntegration")
	writeAccepted(w)
	return nil
}
