package admin

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"tollgate/plans"
)

func (s *Server) deploymentRoutes(r chi.Router) {
	r.Post("/restapis/{restApiId}/deployments", s.handle(s.createDeployment))
	r.Get("/restapis/{restApiId}/deployments", s.handle(s.getDeployments))
	r.Get("/restapis/{restApiId}/deployments/{deploymentId}", s.handle(s.getDeployment))
	r.Delete("/restapis/{restApiId}/deployments/{deploymentId}", s.handle(s.deleteDeployment))
}

// createDeploymentInput is CreateDeployment's body. With stageName, the
// stage is created (with stageDescription and variables) or repointed;
// cacheClusterEnabled and cacheClusterSize then update that stage too.
type createDeploymentInput struct {
	StageName           string            `json:"stageName"`
	StageDescription    string            `json:"stageDescription"`
	Description         string            `json:"description"`
	Variables           map[string]string `json:"variables"`
	CacheClusterEnabled *bool             `json:"cacheClusterEnabled"`
	CacheClusterSize    string            `json:"cacheClusterSize"`
}

// createDeployment: POST /restapis/{id}/deployments → 201 Deployment.
func (s *Server) createDeployment(w http.ResponseWriter, r *http.Request) error {
	var in createDeploymentInput
	if err := decode(r, &in); err != nil {
		return err
	}
	if err := validateDeploymentInput(&in); err != nil {
		return err
	}
	apiID := param(r, "restApiId")
	d := &plans.Deployment{Description: in.Description}
	if err := s.store.CreateDeployment(r.Context(), apiID, d, in.StageName, in.StageDescription, in.Variables); err != nil {
		return err
	}
	s.published(r.Context(), "CreateDeployment")
	if in.StageName != "" && (in.CacheClusterEnabled != nil || in.CacheClusterSize != "") {
		// The Store's CreateDeployment takes no cache settings; apply them
		// as a second write (AWS applies them to the stage it deploys to).
		if err := s.setStageCache(r, apiID, in.StageName, in.CacheClusterEnabled, in.CacheClusterSize); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusCreated, d)
	return nil
}

// validateDeploymentInput checks what the store cannot name well.
func validateDeploymentInput(in *createDeploymentInput) error {
	if err := plans.ValidateDescription("description", in.Description); err != nil {
		return err
	}
	if in.StageName == "" {
		if in.StageDescription != "" || len(in.Variables) > 0 || in.CacheClusterEnabled != nil || in.CacheClusterSize != "" {
			return plans.Invalid("stageName", "stageName is required with stageDescription, variables or cache settings")
		}
		return nil
	}
	if err := plans.ValidateStageName(in.StageName); err != nil {
		return err
	}
	// checked before the deployment is written: the cache settings are a
	// second write (setStageCache), which must not fail after the first
	if err := plans.ValidateCacheClusterSize(in.CacheClusterSize); err != nil {
		return err
	}
	return plans.ValidateDescription("stageDescription", in.StageDescription)
}

// setStageCache updates the cache settings of a stage after a deployment.
func (s *Server) setStageCache(r *http.Request, apiID, stage string, enabled *bool, size string) error {
	var flush bool
	_, err := s.store.UpdateStage(r.Context(), apiID, stage, func(st *plans.Stage) error {
		before := *st
		if enabled != nil {
			st.CacheClusterEnabled = *enabled
		}
		if size != "" {
			st.CacheClusterSize = size
		}
		flush = settleCacheCluster(&before, st)
		return nil
	})
	if err != nil {
		return err
	}
	s.published(r.Context(), "CreateDeployment")
	s.flushAfterResize(r, apiID, stage, flush)
	return nil
}

// getDeployments: GET /restapis/{id}/deployments → 200 list.
func (s *Server) getDeployments(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	ds, next, err := s.store.ListDeployments(r.Context(), param(r, "restApiId"), p)
	if err != nil {
		return err
	}
	writeList(w, ds, next)
	return nil
}

// getDeployment: GET /restapis/{id}/deployments/{did} → 200 Deployment.
func (s *Server) getDeployment(w http.ResponseWriter, r *http.Request) error {
	d, err := s.store.GetDeployment(r.Context(), param(r, "restApiId"), param(r, "deploymentId"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}

// deleteDeployment: DELETE /restapis/{id}/deployments/{did} → 202 (400
// while a stage points to it).
func (s *Server) deleteDeployment(w http.ResponseWriter, r *http.Request) error {
	if err := s.store.DeleteDeployment(r.Context(), param(r, "restApiId"), param(r, "deploymentId")); err != nil {
		return err
	}
	s.published(r.Context(), "DeleteDeployment")
	writeAccepted(w)
	return nil
}
