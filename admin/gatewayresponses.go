package admin

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"tollgate/plans"
)

const gatewayResponsePath = "/restapis/{restApiId}/gatewayresponses/{responseType}"

func (s *Server) gatewayResponseRoutes(r chi.Router) {
	r.Get("/restapis/{restApiId}/gatewayresponses", s.handle(s.getGatewayResponses))
	r.Put(gatewayResponsePath, s.handle(s.putGatewayResponse))
	r.Get(gatewayResponsePath, s.handle(s.getGatewayResponse))
	r.Delete(gatewayResponsePath, s.handle(s.deleteGatewayResponse))
	r.Patch(gatewayResponsePath, s.handle(s.updateGatewayResponse))
}

// responseType reads the route's responseType: one of
// plans.GatewayResponseTypes, else 400 naming responseType.
func responseType(r *http.Request) (string, error) {
	t := param(r, "responseType")
	if !plans.ValidGatewayResponseType(t) {
		return "", plans.Invalid("responseType", "responseType %q is not one tollgate produces: use one of %s", t, strings.Join(plans.GatewayResponseTypes, ", "))
	}
	return t, nil
}

// putGatewayResponse: PUT /restapis/{id}/gatewayresponses/{type} → 201
// GatewayResponse. Body: statusCode, responseParameters (none mapping a
// header the gateway writes itself: plans.CheckResponseParameters),
// responseTemplates. It reaches traffic with the next deployment.
func (s *Server) putGatewayResponse(w http.ResponseWriter, r *http.Request) error {
	t, err := responseType(r)
	if err != nil {
		return err
	}
	gr := &plans.GatewayResponse{}
	if err := decode(r, gr); err != nil {
		return err
	}
	if err := plans.CheckResponseParameters("responseParameters", gr.ResponseParameters); err != nil {
		return err
	}
	gr.ResponseType = t
	if err := s.store.PutGatewayResponse(r.Context(), param(r, "restApiId"), gr); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, gr)
	return nil
}

// allGatewayResponses returns every type's response: the one put, else
// the default (defaultResponse true), in plans.GatewayResponseTypes order.
func (s *Server) allGatewayResponses(r *http.Request) ([]plans.GatewayResponse, error) {
	put, err := s.store.GatewayResponses(r.Context(), param(r, "restApiId"))
	if err != nil {
		return nil, err
	}
	out := make([]plans.GatewayResponse, 0, len(plans.GatewayResponseTypes))
	for _, t := range plans.GatewayResponseTypes {
		gr, ok := put[t]
		if !ok {
			gr = plans.GatewayResponse{ResponseType: t, DefaultResponse: true}
		}
		out = append(out, gr)
	}
	return out, nil
}

// getGatewayResponses: GET /restapis/{id}/gatewayresponses → 200 list of
// every type tollgate produces (not paged: there are thirteen).
func (s *Server) getGatewayResponses(w http.ResponseWriter, r *http.Request) error {
	all, err := s.allGatewayResponses(r)
	if err != nil {
		return err
	}
	writeList(w, all, "")
	return nil
}

// getGatewayResponse: GET /restapis/{id}/gatewayresponses/{type} → 200.
func (s *Server) getGatewayResponse(w http.ResponseWriter, r *http.Request) error {
	t, err := responseType(r)
	if err != nil {
		return err
	}
	all, err := s.allGatewayResponses(r)
	if err != nil {
		return err
	}
	for _, gr := range all {
		if gr.ResponseType == t {
			writeJSON(w, http.StatusOK, gr)
		}
	}
	return nil
}

// deleteGatewayResponse: DELETE /restapis/{id}/gatewayresponses/{type} → 202.
func (s *Server) deleteGatewayResponse(w http.ResponseWriter, r *http.Request) error {
	t, err := responseType(r)
	if err != nil {
		return err
	}
	if err := s.store.DeleteGatewayResponse(r.Context(), param(r, "restApiId"), t); err != nil {
		return err
	}
	writeAccepted(w)
	return nil
}

// updateGatewayResponse: PATCH /restapis/{id}/gatewayresponses/{type} →
// 200 GatewayResponse. Paths /statusCode, /responseParameters/{name},
// /responseTemplates/{content type with "/" written "~1"}. A type with no
// response put starts from the default (as AWS), so a patch puts one.
func (s *Server) updateGatewayResponse(w http.ResponseWriter, r *http.Request) error {
	t, err := responseType(r)
	if err != nil {
		return err
	}
	gr, err := patchRecord(s, r, "UpdateGatewayResponse", func(fn func(*plans.GatewayResponse) error) (*plans.GatewayResponse, error) {
		return s.store.UpdateGatewayResponse(r.Context(), param(r, "restApiId"), t, fn)
	}, each(patchGatewayResponse))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, gr)
	return nil
}

// patchGatewayResponse applies one operation to gr.
func patchGatewayResponse(gr *plans.GatewayResponse, op patchOp) error {
	if op.Path == "/statusCode" {
		return setString(op, &gr.StatusCode)
	}
	if ok, err := patchMappings(op, &gr.ResponseParameters, &gr.ResponseTemplates); ok {
		return err
	}
	return badPath(op)
}
