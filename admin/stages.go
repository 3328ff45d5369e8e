package admin

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"tollgate/plans"
)

const stagePath = "/restapis/{restApiId}/stages/{stageName}"

func (s *Server) stageRoutes(r chi.Router) {
	r.Post("/restapis/{restApiId}/stages", s.handle(s.createStage))
	r.Get("/restapis/{restApiId}/stages", s.handle(s.getStages))
	r.Get(stagePath, s.handle(s.getStage))
	r.Patch(stagePath, s.handle(s.updateStage))
	r.Delete(stagePath, s.handle(s.deleteStage))
	r.Delete(stagePath+"/cache/data", s.handle(s.flushStageCache))
}

// Cache cluster statuses reported in cacheClusterStatus (AWS's names).
const (
	cacheAvailable    = "AVAILABLE"
	cacheNotAvailable = "NOT_AVAILABLE"
	defaultCacheSize  = "0.5"
)

// createStageInput is CreateStage's body.
type createStageInput struct {
	StageName           string            `json:"stageName"`
	DeploymentID        string            `json:"deploymentId"`
	Description         string            `json:"description"`
	CacheClusterEnabled bool              `json:"cacheClusterEnabled"`
	CacheClusterSize    string            `json:"cacheClusterSize"`
	Variables           map[string]string `json:"variables"`
	Tags                map[string]string `json:"tags"`
	TracingEnabled      bool              `json:"tracingEnabled"`
}

// createStage: POST /restapis/{id}/stages → 201 Stage (409 on a duplicate
// name; the deployment must exist).
func (s *Server) createStage(w http.ResponseWriter, r *http.Request) error {
	var in createStageInput
	if err := decode(r, &in); err != nil {
		return err
	}
	if in.DeploymentID == "" {
		return plans.Invalid("deploymentId", "deploymentId is required")
	}
	st := &plans.Stage{
		StageName: in.StageName, DeploymentID: in.DeploymentID, Description: in.Description,
		CacheClusterEnabled: in.CacheClusterEnabled, CacheClusterSize: in.CacheClusterSize,
		MethodSettings: map[string]plans.MethodSetting{}, Variables: in.Variables, Tags: in.Tags,
		TracingEnabled: in.TracingEnabled,
	}
	settleCacheCluster(&plans.Stage{}, st)
	if err := st.Validate(); err != nil {
		return err
	}
	if err := s.store.CreateStage(r.Context(), param(r, "restApiId"), st); err != nil {
		return err
	}
	s.published(r.Context(), "CreateStage")
	writeJSON(w, http.StatusCreated, st)
	return nil
}

// settleCacheCluster fills the derived cache fields of after (status, and
// size 0.5 when enabled without one) and reports whether the change from
// before must flush the stage cache: enabling, disabling or resizing it
// (AWS replaces the cache cluster then).
func settleCacheCluster(before, after *plans.Stage) bool {
	if after.CacheClusterEnabled && after.CacheClusterSize == "" {
		after.CacheClusterSize = defaultCacheSize
	}
	after.CacheClusterStatus = cacheNotAvailable
	if after.CacheClusterEnabled {
		after.CacheClusterStatus = cacheAvailable
	}
	return before.CacheClusterEnabled != after.CacheClusterEnabled ||
		after.CacheClusterEnabled && before.CacheClusterSize != after.CacheClusterSize
}

// flushAfterResize flushes the stage cache after a committed cache cluster
// change; a failure is logged (the stage change is committed).
func (s *Server) flushAfterResize(r *http.Request, apiID, stage string, flush bool) {
	if !flush || s.pub == nil {
		return
	}
	if err := s.pub.FlushStageCache(r.Context(), apiID, stage); err != nil {
		s.log.Warn("admin: cache flush after a cache cluster change failed", "api", apiID, "stage", stage, "err", err)
	}
}

// getStages: GET /restapis/{id}/stages[?deploymentId=] → 200
// {"item": [...]} (no paging, as AWS).
func (s *Server) getStages(w http.ResponseWriter, r *http.Request) error {
	stages, err := s.store.ListStages(r.Context(), param(r, "restApiId"))
	if err != nil {
		return err
	}
	if d := r.URL.Query().Get("deploymentId"); d != "" {
		kept := stages[:0]
		for _, st := range stages {
			if st.DeploymentID == d {
				kept = append(kept, st)
			}
		}
		stages = kept
	}
	writeList(w, stages, "")
	return nil
}

// getStage: GET /restapis/{id}/stages/{name} → 200 Stage.
func (s *Server) getStage(w http.ResponseWriter, r *http.Request) error {
	st, err := s.store.GetStage(r.Context(), param(r, "restApiId"), param(r, "stageName"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

// deleteStage: DELETE /restapis/{id}/stages/{name} → 202 (400 while a
// usage plan covers it).
func (s *Server) deleteStage(w http.ResponseWriter, r *http.Request) error {
	if err := s.store.DeleteStage(r.Context(), param(r, "restApiId"), param(r, "stageName")); err != nil {
		return err
	}
	s.published(r.Context(), "DeleteStage")
	writeAccepted(w)
	return nil
}

// flushStageCache: DELETE /restapis/{id}/stages/{name}/cache/data → 202
// once the stage's cache generation is bumped. The stage must exist (404);
// a Publisher failure is 503, since nothing was flushed.
func (s *Server) flushStageCache(w http.ResponseWriter, r *http.Request) error {
	apiID, name := param(r, "restApiId"), param(r, "stageName")
	if _, err := s.store.GetStage(r.Context(), apiID, name); err != nil {
		return err
	}
	if s.pub == nil {
		return plans.Unavailable(nil, "cache flush is not available: no publisher configured")
	}
	if err := s.pub.FlushStageCache(r.Context(), apiID, name); err != nil {
		return plans.Unavailable(err, "cache flush failed; retry")
	}
	writeAccepted(w)
	return nil
}
