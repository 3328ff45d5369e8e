package admin

import (
	"net/http"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	"tollgate/plans"
)

const authorizerPath = "/restapis/{restApiId}/authorizers/{authorizerId}"

func (s *Server) authorizerRoutes(r chi.Router) {
	r.Post("/restapis/{restApiId}/authorizers", s.handle(s.createAuthorizer))
	r.Get("/restapis/{restApiId}/authorizers", s.handle(s.getAuthorizers))
	r.Get(authorizerPath, s.handle(s.getAuthorizer))
	r.Patch(authorizerPath, s.handle(s.updateAuthorizer))
	r.Delete(authorizerPath, s.handle(s.deleteAuthorizer))
}

// createAuthorizer: POST /restapis/{id}/authorizers → 201 Authorizer.
// tollgate keeps it but cannot run it: a method it secures is closed
// (docs/migrating-from-aws.md, "Authorizers").
func (s *Server) createAuthorizer(w http.ResponseWriter, r *http.Request) error {
	var a plans.Authorizer
	if err := decode(r, &a); err != nil {
		return err
	}
	a.ID = ""
	if err := s.store.CreateAuthorizer(r.Context(), param(r, "restApiId"), &a); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, a)
	return nil
}

// getAuthorizers: GET /restapis/{id}/authorizers → 200 list (not paged:
// an API has few).
func (s *Server) getAuthorizers(w http.ResponseWriter, r *http.Request) error {
	as, err := s.store.Authorizers(r.Context(), param(r, "restApiId"))
	if err != nil {
		return err
	}
	writeList(w, as, "")
	return nil
}

// getAuthorizer: GET /restapis/{id}/authorizers/{authorizerId} → 200.
func (s *Server) getAuthorizer(w http.ResponseWriter, r *http.Request) error {
	a, err := s.store.GetAuthorizer(r.Context(), param(r, "restApiId"), param(r, "authorizerId"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a)
	return nil
}

// updateAuthorizer: PATCH /restapis/{id}/authorizers/{authorizerId} → 200
// Authorizer. Paths /name, /type, /authType, /authorizerUri,
// /authorizerCredentials, /identitySource, /identityValidationExpression,
// /authorizerResultTtlInSeconds and /providerARNs (add or remove one ARN
// as the value, or replace the list with a comma-separated one).
func (s *Server) updateAuthorizer(w http.ResponseWriter, r *http.Request) error {
	apiID, id := param(r, "restApiId"), param(r, "authorizerId")
	a, err := patchRecord(s, r, "UpdateAuthorizer", func(fn func(*plans.Authorizer) error) (*plans.Authorizer, error) {
		return s.store.UpdateAuthorizer(r.Context(), apiID, id, fn)
	}, each(patchAuthorizer))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a)
	return nil
}

// patchAuthorizer applies one operation to a.
func patchAuthorizer(a *plans.Authorizer, op patchOp) error {
	fields := map[string]*string{"/name": &a.Name, "/authType": &a.AuthType, "/authorizerUri": &a.AuthorizerURI,
		"/authorizerCredentials": &a.AuthorizerCredentials, "/identitySource": &a.IdentitySource,
		"/identityValidationExpression": &a.IdentityValidationExpression}
	if dst, ok := fields[op.Path]; ok {
		return setString(op, dst)
	}
	switch op.Path {
	case "/type":
		return setEnum(op, &a.Type, plans.AuthorizerToken, plans.AuthorizerRequest, plans.AuthorizerCognito)
	case "/authorizerResultTtlInSeconds":
		var ttl int32
		if err := setInt32(op, &ttl); err != nil {
			return err
		}
		a.AuthorizerResultTTLInSeconds = &ttl
		return nil
	case "/providerARNs":
		return patchList(op, &a.ProviderARNs)
	}
	return badPath(op)
}

// patchList applies add or remove of one value, or replace of the whole
// list by a comma-separated value, to a list of strings.
func patchList(op patchOp, list *[]string) error {
	switch op.Op {
	case opAdd:
		if !slices.Contains(*list, op.Value) {
			*list = append(*list, op.Value)
		}
	case opRemove:
		*list = slices.DeleteFunc(*list, func(v string) bool { return v == op.Value })
	case opReplace:
		*list = nil
		for v := range strings.SplitSeq(op.Value, ",") {
			if v = strings.TrimSpace(v); v != "" {
				*list = append(*list, v)
			}
		}
	default:
		return needOp(op, opAdd, opRemove, opReplace)
	}
	return nil
}

// deleteAuthorizer: DELETE /restapis/{id}/authorizers/{authorizerId} →
// 202; 409 while a method uses it.
func (s *Server) deleteAuthorizer(w http.ResponseWriter, r *http.Request) error {
	if err := s.store.DeleteAuthorizer(r.Context(), param(r, "restApiId"), param(r, "authorizerId")); err != nil {
		return err
	}
	writeAccepted(w)
	return nil
}
