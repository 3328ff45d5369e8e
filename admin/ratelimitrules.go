package admin

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	"tollgate/plans"
)

// RuleStore is the store's rate-limit rules (plans/postgres.DB), a
// tollgate extension of the admin API (docs/rules.md). Every method runs
// in one transaction; writes record a snapshot change naming the stage.
type RuleStore interface {
	// CreateRateLimitRule fills r's defaults and ID; 409 when the stage
	// has a rule of that name.
	CreateRateLimitRule(ctx context.Context, apiID, stage string, r *plans.RateLimitRule) error
	GetRateLimitRule(ctx context.Context, apiID, stage, id string) (*plans.RateLimitRule, error)
	ListRateLimitRules(ctx context.Context, apiID, stage string, p Page) ([]plans.RateLimitRule, string, error)
	UpdateRateLimitRule(ctx context.Context, apiID, stage, id string, fn func(*plans.RateLimitRule) error) (*plans.RateLimitRule, error)
	DeleteRateLimitRule(ctx context.Context, apiID, stage, id string) error
	// RateLimitRules returns an API's rules by stage name (GetExport).
	RateLimitRules(ctx context.Context, apiID string) (map[string][]plans.RateLimitRule, error)
}

const rulesPath = stagePath + "/ratelimitrules"

func (s *Server) ruleRoutes(r chi.Router) {
	r.Post(rulesPath, s.handle(s.createRule))
	r.Get(rulesPath, s.handle(s.getRules))
	r.Get(rulesPath+"/{ruleId}", s.handle(s.getRule))
	r.Patch(rulesPath+"/{ruleId}", s.handle(s.updateRule))
	r.Delete(rulesPath+"/{ruleId}", s.handle(s.deleteRule))
}

// createRule: POST /restapis/{id}/stages/{name}/ratelimitrules → 201
// RateLimitRule (resourcePath and httpMethod default to "*", mode to
// ENFORCE, keyBy to []).
func (s *Server) createRule(w http.ResponseWriter, r *http.Request) error {
	var in plans.RateLimitRule
	if err := decode(r, &in); err != nil {
		return err
	}
	in.ID = ""
	in.SetDefaults()
	if err := in.Validate(); err != nil {
		return err
	}
	if err := s.store.CreateRateLimitRule(r.Context(), param(r, "restApiId"), param(r, "stageName"), &in); err != nil {
		return err
	}
	s.published(r.Context(), "CreateRateLimitRule")
	writeJSON(w, http.StatusCreated, &in)
	return nil
}

// getRules: GET .../ratelimitrules[?position=&limit=] → 200 list by id.
func (s *Server) getRules(w http.ResponseWriter, r *http.Request) error {
	pg, err := page(r)
	if err != nil {
		return err
	}
	rules, next, err := s.store.ListRateLimitRules(r.Context(), param(r, "restApiId"), param(r, "stageName"), pg)
	if err != nil {
		return err
	}
	writeList(w, rules, next)
	return nil
}

// getRule: GET .../ratelimitrules/{ruleId} → 200 RateLimitRule.
func (s *Server) getRule(w http.ResponseWriter, r *http.Request) error {
	rule, err := s.store.GetRateLimitRule(r.Context(), param(r, "restApiId"), param(r, "stageName"), param(r, "ruleId"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rule)
	return nil
}

// updateRule: PATCH .../ratelimitrules/{ruleId} → 200 RateLimitRule;
// paths in patchRule.
func (s *Server) updateRule(w http.ResponseWriter, r *http.Request) error {
	apiID, stage, id := param(r, "restApiId"), param(r, "stageName"), param(r, "ruleId")
	rule, err := patchRecord(s, r, "UpdateRateLimitRule", func(fn func(*plans.RateLimitRule) error) (*plans.RateLimitRule, error) {
		return s.store.UpdateRateLimitRule(r.Context(), apiID, stage, id, fn)
	}, patchRule)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rule)
	return nil
}

// deleteRule: DELETE .../ratelimitrules/{ruleId} → 202.
func (s *Server) deleteRule(w http.ResponseWriter, r *http.Request) error {
	if err := s.store.DeleteRateLimitRule(r.Context(), param(r, "restApiId"), param(r, "stageName"), param(r, "ruleId")); err != nil {
		return err
	}
	s.published(r.Context(), "DeleteRateLimitRule")
	writeAccepted(w)
	return nil
}

// patchRule applies ops to a rule, then validates it as a whole. Paths:
// replace /name, /resourcePath, /httpMethod, /mode; replace /algorithm
// (parameters the new algorithm does not take are dropped); add or
// replace /rateLimit, /burstLimit, /limit, /windowSeconds,
// /maxDelayMillis, and remove them; /keyBy: replace with a
// comma-separated list ("" for none), add one value (appended), remove
// one value (or, without a value, all).
func patchRule(rule *plans.RateLimitRule, ops []patchOp) error {
	if err := applyAll(ops, func(op patchOp) error { return applyRuleOp(rule, op) }); err != nil {
		return err
	}
	return rule.Validate()
}

func applyRuleOp(rule *plans.RateLimitRule, op patchOp) error {
	switch op.Path {
	case "/name", "/resourcePath", "/httpMethod":
		if err := needOp(op, opReplace); err != nil {
			return err
		}
		return setString(op, ruleString(rule, op.Path))
	case "/mode":
		return setEnum(op, &rule.Mode, plans.ModeEnforce, plans.ModeShadow)
	case "/algorithm":
		if err := setEnum(op, &rule.Algorithm, plans.TokenBucket, plans.SlidingWindow, plans.FixedWindow,
			plans.Concurrency, plans.LeakyBucket); err != nil {
			return err
		}
		rule.DropUnusedParams()
		return nil
	case "/keyBy":
		return patchKeyBy(rule, op)
	case "/rateLimit":
		return setOptional(op, &rule.RateLimit, parseDouble)
	}
	if dst := ruleInt(rule, op.Path); dst != nil {
		return setOptional(op, dst, parseInt32)
	}
	return badPath(op)
}

func ruleString(rule *plans.RateLimitRule, path string) *string {
	switch path {
	case "/name":
		return &rule.Name
	case "/resourcePath":
		return &rule.ResourcePath
	}
	return &rule.HTTPMethod
}

// ruleInt returns the int32 parameter at path, or nil for another path.
func ruleInt(rule *plans.RateLimitRule, path string) **int32 {
	switch path {
	case "/burstLimit":
		return &rule.BurstLimit
	case "/limit":
		return &rule.Limit
	case "/windowSeconds":
		return &rule.WindowSeconds
	case "/maxDelayMillis":
		return &rule.MaxDelayMillis
	}
	return nil
}

// setOptional applies add or replace (parsed by parse) or remove of an
// optional parameter.
func setOptional[T any](op patchOp, dst **T, parse func(patchOp) (T, error)) error {
	if op.Op == opRemove {
		*dst = nil
		return nil
	}
	v, err := parse(op)
	if err != nil {
		return err
	}
	*dst = &v
	return nil
}

// patchKeyBy applies replace (a comma-separated list), add (one value,
// appended) or remove (one value, or all without a value) of /keyBy.
func patchKeyBy(rule *plans.RateLimitRule, op patchOp) error {
	value := strings.TrimSpace(op.Value)
	switch op.Op {
	case opReplace:
		rule.KeyBy = []string{}
		for v := range strings.SplitSeq(value, ",") {
			if v = strings.TrimSpace(v); v != "" {
				rule.KeyBy = append(rule.KeyBy, v)
			}
		}
		return nil
	case opAdd:
		rule.KeyBy = append(rule.KeyBy, value)
		return nil
	}
	if value == "" {
		rule.KeyBy = []string{}
		return nil
	}
	p, err := plans.ParseKeyBy(value)
	if err != nil {
		return err
	}
	i := slices.Index(rule.KeyBy, p.String())
	if i < 0 {
		return plans.Invalid("/keyBy", "/keyBy: the rule does not count by %q", value)
	}
	rule.KeyBy = slices.Delete(rule.KeyBy, i, i+1)
	return nil
}
