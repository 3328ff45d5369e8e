package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"tollgate/config"
	"tollgate/plans"
)

// ConfigStore is what the whole-configuration endpoints need
// (plans/postgres.DB): the store's reads and writes, run in one
// transaction by Atomically (apply: locks the configuration) or
// Consistently (dump and plan: read-only, locks nothing).
type ConfigStore interface {
	config.Store
	Atomically(ctx context.Context, bound time.Duration, fn func(ctx context.Context) error) error
	Consistently(ctx context.Context, bound time.Duration, fn func(ctx context.Context) error) error
}

// configBound limits one config plan or apply, all of it.
const configBound = 5 * time.Minute

func (s *Server) configRoutes(r chi.Router) {
	if s.config == nil {
		return
	}
	r.Get("/config", s.handle(s.getConfig))
	r.Post("/config/plan", s.handle(s.planConfig))
	r.Post("/config/apply", s.handle(s.applyConfig))
}

// getConfig: GET /config → 200 the whole configuration (docs/config.md),
// YAML when Accept asks for it, else JSON; never a key value.
func (s *Server) getConfig(w http.ResponseWriter, r *http.Request) error {
	var d *config.Document
	err := s.config.Consistently(r.Context(), configBound, func(ctx context.Context) error {
		var err error
		d, err = config.Read(ctx, s.config)
		return err
	})
	if err != nil {
		return err
	}
	d = config.Dump(d)
	if strings.Contains(strings.ToLower(r.Header.Get("Accept")), "yaml") {
		b, err := config.YAML(d)
		if err != nil {
			return err
		}
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(b)
		return nil
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}

// configResult is the answer of plan and apply: the changes (made, for
// apply) and, for apply, the values of the keys it created, shown once.
type configResult struct {
	Changes     []config.Change     `json:"changes"`
	Applied     bool                `json:"applied"`
	CreatedKeys []config.CreatedKey `json:"createdKeys,omitempty"`
}

// planConfig: POST /config/plan[?prune=true] with a document (YAML or
// JSON) → 200 the changes apply would make, nothing changed.
func (s *Server) planConfig(w http.ResponseWriter, r *http.Request) error {
	return s.runConfig(w, r, false)
}

// applyConfig: POST /config/apply[?prune=true] with a document → 200 the
// changes made, in one transaction (all or nothing; an error names the
// item), published once.
func (s *Server) applyConfig(w http.ResponseWriter, r *http.Request) error {
	return s.runConfig(w, r, true)
}

func (s *Server) runConfig(w http.ResponseWriter, r *http.Request, apply bool) error {
	prune, err := boolQuery(r, "prune")
	if err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	desired, err := config.Parse(body)
	if err != nil {
		return err
	}
	out := configResult{Changes: []config.Change{}}
	run := s.config.Consistently
	if apply {
		run = s.config.Atomically
	}
	err = run(r.Context(), configBound, func(ctx context.Context) error {
		current, err := config.Read(ctx, s.config)
		if err != nil {
			return err
		}
		changes, err := config.Plan(current, desired, prune)
		if err != nil || !apply {
			out.Changes = append(out.Changes, changes...)
			return err
		}
		if err := mayApply(principalOf(ctx), changes); err != nil {
			return err
		}
		summarize(ctx, prune, changes)
		ap := config.Applier{Store: s.config, NewKey: func() (string, string) {
			v := s.keyFmt.New()
			return v, plans.HashKey(v, s.pepper)
		}}
		out.CreatedKeys, err = ap.Apply(ctx, current, changes)
		out.Changes = append(out.Changes, changes...)
		out.Applied = err == nil && len(changes) > 0
		return err
	})
	if err != nil {
		return err
	}
	if out.Applied {
		s.published(r.Context(), "ApplyConfig")
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// mayApply refuses an apply whose changes include one the principal's
// role may not make (an operator's apply that changes the account).
func mayApply(p principal, changes []config.Change) error {
	for _, c := range changes {
		if c.Kind == config.KindAccount && !may(p.Role, areaAccount, true) {
			return &plans.Error{Kind: plans.KindForbidden, Field: "account", Message: "User: " + p.Name +
				" is not authorized to perform: apigateway:UpdateAccount (the document changes the account; role " +
				string(p.Role) + " may not change account)"}
		}
	}
	return nil
}

// summarize makes the apply's own audit entry (recorded when its
// transaction commits) the list of what it changed, rather than the whole
// document; each change has an entry of its own.
func summarize(ctx context.Context, prune bool, changes []config.Change) {
	e := plans.AuditOf(ctx)
	if e == nil {
		return
	}
	list := make([]string, len(changes))
	for i, c := range changes {
		list[i] = c.Action + " " + c.Kind + " " + c.Name
	}
	e.Change, _ = json.Marshal(map[string]any{"prune": prune, "changes": list})
}
