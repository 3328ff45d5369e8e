package admin

import (
	"context"
	"net/http"
	"strings"
	"time"

	"tollgate/openapi"
	"tollgate/plans"
)

// ApiImporter is the store's whole-API writes (plans/postgres.DB), each in
// one transaction.
type ApiImporter interface {
	ImportRestApi(ctx context.Context, def *plans.ApiDefinition) (*plans.RestApi, error)
	PutRestApi(ctx context.Context, id, mode string, def *plans.ApiDefinition) (*plans.RestApi, error)
}

// importedApi is ImportRestApi's and PutRestApi's answer: the RestApi and
// the warnings of what the document had that tollgate skipped.
type importedApi struct {
	*plans.RestApi
	Warnings []string `json:"warnings,omitempty"`
}

// readDefinition reads the request body as an OpenAPI document, its
// paths placed as the basepath parameter says (ignore, prepend, split).
// With failonwarnings=true any warning is a 400 and nothing is stored.
func readDefinition(r *http.Request) (*plans.ApiDefinition, []string, error) {
	failOnWarnings, err := boolQuery(r, "failonwarnings")
	if err != nil {
		return nil, nil, err
	}
	body, err := readBody(r)
	if err != nil {
		return nil, nil, err
	}
	def, warnings, err := openapi.Import(body, openapi.ImportOptions{BasePath: r.URL.Query().Get("basepath")})
	if err != nil {
		return nil, nil, err
	}
	if failOnWarnings && len(warnings) > 0 {
		return nil, nil, plans.Invalid("failonwarnings", "the document has %d warning(s) and failonwarnings is set, so nothing was imported: %s",
			len(warnings), strings.Join(warnings, "; "))
	}
	return def, warnings, nil
}

// importRestApi: POST /restapis?mode=import[&failonwarnings=] with an
// OpenAPI 3.0 or Swagger 2.0 document (JSON or YAML) → 201 RestApi with
// warnings. All or nothing: a bad document is 400 naming the location.
func (s *Server) importRestApi(w http.ResponseWriter, r *http.Request) error {
	if mode := r.URL.Query().Get("mode"); mode != "import" {
		return plans.Invalid("mode", "mode %q must be import", mode)
	}
	def, warnings, err := readDefinition(r)
	if err != nil {
		return err
	}
	api, err := s.store.ImportRestApi(r.Context(), def)
	if err != nil {
		return err
	}
	s.published(r.Context(), "ImportRestApi")
	writeJSON(w, http.StatusCreated, importedApi{api, warnings})
	return nil
}

// putRestApi: PUT /restapis/{id}?mode=overwrite|merge (default merge, as
// AWS)[&failonwarnings=] with an OpenAPI document → 200 RestApi with
// warnings. The change reaches traffic with the next deployment.
func (s *Server) putRestApi(w http.ResponseWriter, r *http.Request) error {
	mode := r.URL.Query().Get("mode")
	if mode == "" {
		mode = plans.PutModeMerge
	}
	if mode != plans.PutModeOverwrite && mode != plans.PutModeMerge {
		return plans.Invalid("mode", "mode %q must be overwrite or merge", mode)
	}
	def, warnings, err := readDefinition(r)
	if err != nil {
		return err
	}
	api, err := s.store.PutRestApi(r.Context(), param(r, "restApiId"), mode, def)
	if err != nil {
		return err
	}
	s.published(r.Context(), "PutRestApi")
	writeJSON(w, http.StatusOK, importedApi{api, warnings})
	return nil
}

// getExport: GET /restapis/{id}/stages/{name}/exports/{oas30|swagger}
// [?extensions=apigateway] → 200 the deployment the stage serves as an
// OpenAPI document, YAML when Accept asks for application/yaml, else JSON.
// With the extensions, the stage's rate-limit rules are written too
// (plans.RulesExtension; an empty list when it has none, so that an
// overwrite import of the document leaves the stage without rules).
func (s *Server) getExport(w http.ResponseWriter, r *http.Request) error {
	opts, err := exportOptions(r)
	if err != nil {
		return err
	}
	apiID := param(r, "restApiId")
	api, err := s.store.GetRestApi(r.Context(), apiID)
	if err != nil {
		return err
	}
	st, err := s.store.GetStage(r.Context(), apiID, param(r, "stageName"))
	if err != nil {
		return err
	}
	d, err := s.store.GetDeployment(r.Context(), apiID, st.DeploymentID)
	if err != nil {
		return err
	}
	opts.Stage, opts.Version = st.StageName, d.CreatedDate.Time.UTC().Format(time.RFC3339)
	def := plans.StageDefinition(api, d)
	if opts.Extensions {
		if def.RateLimitRules, err = s.stageRules(r.Context(), apiID, st.StageName); err != nil {
			return err
		}
	}
	doc, _, err := openapi.Export(def, opts)
	if err != nil {
		return err
	}
	ct := "application/json"
	if opts.YAML {
		ct = "application/yaml"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(doc)
	return nil
}

// stageRules returns the rate-limit rules of one stage, by its name
// (empty for a stage without rules), as Export writes them.
func (s *Server) stageRules(ctx context.Context, apiID, stage string) (map[string][]plans.RateLimitRule, error) {
	all, err := s.store.RateLimitRules(ctx, apiID)
	if err != nil {
		return nil, err
	}
	rules := all[stage]
	if rules == nil {
		rules = []plans.RateLimitRule{}
	}
	return map[string][]plans.RateLimitRule{stage: rules}, nil
}

// exportOptions reads the export type (oas30 or swagger), extensions
// (apigateway; also AWS's integrations, authorizers and postman are
// refused) and the Accept header.
func exportOptions(r *http.Request) (openapi.ExportOptions, error) {
	var opts openapi.ExportOptions
	switch t := param(r, "exportType"); t {
	case "oas30":
	case "swagger":
		opts.Swagger = true
	default:
		return opts, plans.Invalid("exportType", "exportType %q must be oas30 or swagger", t)
	}
	for ext := range strings.SplitSeq(r.URL.Query().Get("extensions"), ",") {
		switch strings.TrimSpace(ext) {
		case "":
		case "apigateway", "integrations":
			opts.Extensions = true
		default:
			return opts, plans.Invalid("extensions", "extensions %q must be apigateway", ext)
		}
	}
	accept := strings.ToLower(strings.Join(r.Header.Values("Accept"), ",")) // SDKs may add their own
	opts.YAML = strings.Contains(accept, "yaml")
	return opts, nil
}
