package openapi

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"tollgate/plans"
)

// extRules is tollgate's own extension at the document's root: the API's
// rate-limit rules by stage name (plans.RulesExtension).
const extRules = plans.RulesExtension

func byName(a, b plans.RateLimitRule) int { return strings.Compare(a.Name, b.Name) }

// rateLimitRules reads x-tollgate-rate-limit-rules: an object whose keys
// are stage names and whose values are lists of rules in the admin API's
// JSON shape (any "id" is ignored; unknown fields are errors, so a typo
// cannot silently drop a limit). Defaults are filled, every rule is
// validated and each stage's are sorted by name (a name twice is an
// error); errors name the location
// ("x-tollgate-rate-limit-rules.prod[0].burstLimit").
func (im *importer) rateLimitRules(def *plans.ApiDefinition) error {
	raw, ok := im.doc.Extensions[extRules]
	if !ok {
		return nil
	}
	var lists map[string][]json.RawMessage
	if err := remarshal(raw, &lists); err != nil {
		return jsonFieldError(loc{extRules}, err)
	}
	def.RateLimitRules = make(map[string][]plans.RateLimitRule, len(lists))
	for _, stage := range sortedKeys(lists) {
		if err := plans.ValidateStageName(stage); err != nil {
			return located(loc{extRules}, err)
		}
		rules, err := importStageRules(loc{extRules, stage}, lists[stage])
		if err != nil {
			return err
		}
		def.RateLimitRules[stage] = rules
	}
	return nil
}

// importStageRules decodes and checks the rules of one stage (loc names
// its list), sorted by name.
func importStageRules(list loc, raws []json.RawMessage) ([]plans.RateLimitRule, error) {
	rules := make([]plans.RateLimitRule, len(raws))
	names := map[string]bool{}
	for i, raw := range raws {
		at := list.at(index(i))
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rules[i]); err != nil {
			return nil, jsonFieldError(at, err)
		}
		if err := checkImportedRule(&rules[i]); err != nil {
			return nil, located(at, err)
		}
		if names[rules[i].Name] {
			return nil, errorf(at.at("name"), "rule %q is listed twice", rules[i].Name)
		}
		names[rules[i].Name] = true
	}
	slices.SortFunc(rules, byName)
	return rules, nil
}

func checkImportedRule(r *plans.RateLimitRule) error {
	r.ID = ""
	r.SetDefaults()
	return r.Validate()
}

// exportRules returns the extension's value for rules by stage: each
// stage's rules ordered by name, without ids (they belong to one server).
func exportRules(byStage map[string][]plans.RateLimitRule) map[string][]plans.RateLimitRule {
	out := make(map[string][]plans.RateLimitRule, len(byStage))
	for stage, rules := range byStage {
		list := make([]plans.RateLimitRule, len(rules))
		for i, r := range rules {
			r.ID = ""
			list[i] = r
		}
		slices.SortFunc(list, byName)
		out[stage] = list
	}
	return out
}
