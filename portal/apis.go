package portal

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-chi/chi/v5"

	"tollgate/openapi"
	"tollgate/plans"
)

// apiView is an API stage a partner's plans cover.
type apiView struct {
	ID, Name, Stage, BaseURL string
}

// apisPage lists the API stages the partner's usage plans cover.
func (s *Server) apisPage(w http.ResponseWriter, r *http.Request) {
	apis, err := s.partnerAPIs(r.Context(), sessionOf(r.Context()).account)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "apis", page{Title: "APIs", Nav: "apis", Data: apis})
}

// partnerAPIs returns the API stages of the partner's usage plans, by API
// name and stage.
func (s *Server) partnerAPIs(ctx context.Context, acct *plans.PortalAccount) ([]apiView, error) {
	ps, err := s.partnerPlans(ctx, acct)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []apiView
	for _, p := range ps {
		for _, as := range p.ApiStages {
			if seen[as.ApiID+"/"+as.Stage] {
				continue
			}
			seen[as.ApiID+"/"+as.Stage] = true
			api, err := s.catalog.GetRestApi(ctx, as.ApiID)
			if err != nil {
				return nil, err
			}
			out = append(out, apiView{ID: api.ID, Name: api.Name, Stage: as.Stage, BaseURL: s.baseURL(api.ID, as.Stage)})
		}
	}
	slices.SortFunc(out, func(a, b apiView) int { return strings.Compare(a.Name+"\x00"+a.Stage, b.Name+"\x00"+b.Stage) })
	return out, nil
}

// baseURL is where partners call an API's stage.
func (s *Server) baseURL(apiID, stage string) string {
	return strings.ReplaceAll(s.opts.GatewayURL, "{apiId}", apiID) + "/" + stage
}

// ownAPI returns the partner's API stage apiID/stage; one its plans do not
// cover is not found.
func (s *Server) ownAPI(ctx context.Context, apiID, stage string) (apiView, error) {
	apis, err := s.partnerAPIs(ctx, sessionOf(ctx).account)
	if err != nil {
		return apiView{}, err
	}
	for _, a := range apis {
		if a.ID == apiID && a.Stage == stage {
			return a, nil
		}
	}
	return apiView{}, plans.NotFound("no such API")
}

// export returns the stage's OpenAPI 3 document as GET .../exports/oas30
// writes it, without the API Gateway extensions (integration URIs are the
// operator's).
func (s *Server) export(ctx context.Context, apiID, stage string) ([]byte, error) {
	api, err := s.catalog.GetRestApi(ctx, apiID)
	if err != nil {
		return nil, err
	}
	st, err := s.catalog.GetStage(ctx, apiID, stage)
	if err != nil {
		return nil, err
	}
	d, err := s.catalog.GetDeployment(ctx, apiID, st.DeploymentID)
	if err != nil {
		return nil, err
	}
	doc, _, err := openapi.Export(plans.StageDefinition(api, d), openapi.ExportOptions{Stage: stage,
		Version: d.CreatedDate.Time.UTC().Format(time.RFC3339)})
	return doc, err
}

// openapiDoc serves the stage's export (the reference page links it).
func (s *Server) openapiDoc(w http.ResponseWriter, r *http.Request) {
	apiID, stage := chi.URLParam(r, "apiId"), chi.URLParam(r, "stage")
	if _, err := s.ownAPI(r.Context(), apiID, stage); err != nil {
		s.fail(w, r, err)
		return
	}
	doc, err := s.export(r.Context(), apiID, stage)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", `attachment; filename="`+apiID+"-"+stage+`-oas30.json"`)
	_, _ = w.Write(doc)
}

// reference is the reference page: the export, read back with kin-openapi
// and laid out by the template (no script runs: the page works under the
// portal's CSP as plain HTML).
type reference struct {
	API        apiView
	Title      string
	Version    string
	Summary    string
	KeyHeader  string // the header a key goes in, when an operation needs one
	Operations []operation
}

type operation struct {
	Method, Path string
	KeyRequired  bool
	Closed       bool // secured by an authorizer or IAM: the gateway refuses every call
	Parameters   []parameter
	Responses    []response
}

type parameter struct {
	Name, In string
	Required bool
}

type response struct{ Code, Description string }

// referencePage renders the stage's reference from its export.
func (s *Server) referencePage(w http.ResponseWriter, r *http.Request) {
	apiID, stage := chi.URLParam(r, "apiId"), chi.URLParam(r, "stage")
	api, err := s.ownAPI(r.Context(), apiID, stage)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	raw, err := s.export(r.Context(), apiID, stage)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ref := reference{API: api, Title: doc.Info.Title, Version: doc.Info.Version, Summary: doc.Info.Description}
	for _, path := range doc.Paths.InMatchingOrder() {
		item := doc.Paths.Value(path)
		for _, m := range sortedMethods(item.Operations()) {
			ref.Operations = append(ref.Operations, operationView(doc, m, path, item.Operations()[m], &ref))
		}
	}
	slices.SortStableFunc(ref.Operations, func(a, b operation) int { return strings.Compare(a.Path, b.Path) })
	s.render(w, r, http.StatusOK, "reference", page{Title: api.Name + " (" + stage + ")", Nav: "apis", Data: ref})
}

// sortedMethods orders an operation map's methods as a reader expects.
func sortedMethods(ops map[string]*openapi3.Operation) []string {
	order := []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"}
	var out []string
	for _, m := range order {
		if ops[m] != nil {
			out = append(out, m)
		}
	}
	return out
}

// operationView lays out one operation; it notes on ref the header of the
// API key when the operation requires one. An operation secured by an API
// Gateway authorizer or IAM (x-amazon-apigateway-authorizer or -authtype
// on its scheme) is closed: the gateway refuses every call of it.
func operationView(doc *openapi3.T, method, path string, op *openapi3.Operation, ref *reference) operation {
	o := operation{Method: method, Path: path}
	if op.Security != nil {
		for _, req := range *op.Security {
			for name := range req {
				ss := doc.Components.SecuritySchemes[name]
				if ss == nil || ss.Value == nil {
					continue
				}
				_, authorizer := ss.Value.Extensions["x-amazon-apigateway-authorizer"]
				_, authType := ss.Value.Extensions["x-amazon-apigateway-authtype"]
				switch {
				case authorizer || authType:
					o.Closed = true
				case ss.Value.Type == "apiKey":
					o.KeyRequired, ref.KeyHeader = true, ss.Value.Name
				}
			}
		}
	}
	for _, p := range op.Parameters {
		if p.Value != nil {
			o.Parameters = append(o.Parameters, parameter{Name: p.Value.Name, In: p.Value.In, Required: p.Value.Required})
		}
	}
	if op.Responses != nil {
		for code, rr := range op.Responses.Map() {
			desc := ""
			if rr.Value != nil && rr.Value.Description != nil {
				desc = *rr.Value.Description
			}
			o.Responses = append(o.Responses, response{Code: code, Description: desc})
		}
		slices.SortFunc(o.Responses, func(a, b response) int { return strings.Compare(a.Code, b.Code) })
	}
	return o
}
