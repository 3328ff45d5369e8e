package config

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"strings"

	"tollgate/openapi"
	"tollgate/plans"
)

// Normalize returns a copy of d in the one form both sides of a
// comparison take: lists sorted by name, empty maps and lists absent,
// each API's definition re-exported canonically (Import then Export, with
// the API's own name and description), rules validated (which normalises
// keyBy) without ids, plan throttle keys as raw paths. Errors name the
// item whose definition or rule is invalid.
func Normalize(d *Document) (*Document, error) {
	out := &Document{Account: d.Account}
	for _, a := range d.Apis {
		n, err := normalizeApi(a)
		if err != nil {
			return nil, err
		}
		out.Apis = append(out.Apis, n)
	}
	slices.SortStableFunc(out.Apis, func(x, y Api) int { return cmp.Or(strings.Compare(x.Name, y.Name), strings.Compare(x.ID, y.ID)) })
	for _, p := range d.UsagePlans {
		out.UsagePlans = append(out.UsagePlans, normalizePlan(p))
	}
	slices.SortStableFunc(out.UsagePlans, func(x, y UsagePlan) int { return cmp.Or(strings.Compare(x.Name, y.Name), strings.Compare(x.ID, y.ID)) })
	for _, k := range d.ApiKeys {
		k.Tags = nilIfEmpty(k.Tags)
		k.UsagePlans = slices.Compact(slices.Sorted(slices.Values(k.UsagePlans)))
		if len(k.UsagePlans) == 0 {
			k.UsagePlans = nil
		}
		out.ApiKeys = append(out.ApiKeys, k)
	}
	slices.SortStableFunc(out.ApiKeys, func(x, y ApiKey) int { return cmp.Or(strings.Compare(x.Name, y.Name), strings.Compare(x.ID, y.ID)) })
	for _, dn := range d.DomainNames {
		out.DomainNames = append(out.DomainNames, normalizeDomain(dn))
	}
	slices.SortFunc(out.DomainNames, func(x, y DomainName) int { return strings.Compare(x.DomainName, y.DomainName) })
	return out, nil
}

func nilIfEmpty[V any](m map[string]V) map[string]V {
	if len(m) == 0 {
		return nil
	}
	return m
}

func normalizeApi(a Api) (Api, error) {
	a.Tags = nilIfEmpty(a.Tags)
	def, err := definitionOf(a)
	if err != nil {
		return a, err
	}
	b, _, err := openapi.Export(def, openapi.ExportOptions{Extensions: true})
	if err != nil {
		return a, err
	}
	a.Definition = compact(b)
	a.Stages = slices.Clone(a.Stages)
	for i := range a.Stages {
		if a.Stages[i], err = normalizeStage(a.Name, a.Stages[i]); err != nil {
			return a, err
		}
	}
	slices.SortFunc(a.Stages, func(x, y Stage) int { return strings.Compare(x.Name, y.Name) })
	return a, nil
}

// definitionOf imports an API's definition (an empty one when it has
// none) with the API's name and description and without rate-limit rules
// (they live in the stages).
func definitionOf(a Api) (*plans.ApiDefinition, error) {
	raw := a.Definition
	if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
		raw = json.RawMessage(`{"openapi":"3.0.1","info":{"title":"x","version":"1.0"},"paths":{}}`)
	}
	def, _, err := openapi.Import(raw, openapi.ImportOptions{})
	if err != nil {
		return nil, itemError("apis", a.Name, "definition", err)
	}
	def.Name, def.Description, def.RateLimitRules = a.Name, a.Description, nil
	if def.ApiKeySource == "" {
		def.ApiKeySource = plans.ApiKeySourceHeader
	}
	return def, nil
}

func compact(b []byte) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

func normalizeStage(api string, s Stage) (Stage, error) {
	s.Variables, s.Tags = nilIfEmpty(s.Variables), nilIfEmpty(s.Tags)
	if len(s.MethodSettings) == 0 {
		s.MethodSettings = nil
	}
	rules := make([]plans.RateLimitRule, len(s.RateLimitRules))
	for i, r := range s.RateLimitRules {
		if err := r.Validate(); err != nil {
			return s, itemError("apis", api+"/"+s.Name, "rateLimitRules."+r.Name, err)
		}
		rules[i] = r
	}
	slices.SortFunc(rules, func(x, y plans.RateLimitRule) int { return strings.Compare(x.Name, y.Name) })
	s.RateLimitRules = rules
	if len(rules) == 0 {
		s.RateLimitRules = nil
	}
	return s, nil
}

func normalizePlan(p UsagePlan) UsagePlan {
	p.Tags = nilIfEmpty(p.Tags)
	if len(p.Alerts) == 0 {
		p.Alerts = nil
	} else {
		p.Alerts = slices.Clone(p.Alerts)
		slices.Sort(p.Alerts)
	}
	stages := make([]ApiStage, len(p.ApiStages))
	for i, as := range p.ApiStages {
		tmp := plans.UsagePlan{ApiStages: []plans.ApiStage{{Throttle: as.Throttle, MethodCosts: as.MethodCosts}}}
		tmp.Normalize()
		as.Throttle, as.MethodCosts = tmp.ApiStages[0].Throttle, tmp.ApiStages[0].MethodCosts
		stages[i] = as
	}
	slices.SortFunc(stages, func(x, y ApiStage) int {
		return cmp.Or(strings.Compare(x.Api, y.Api), strings.Compare(x.Stage, y.Stage))
	})
	p.ApiStages = stages
	if len(stages) == 0 {
		p.ApiStages = nil
	}
	return p
}

// itemError names the item of an error: "usagePlans[gold].quota: ...",
// keeping its kind.
func itemError(list, name, field string, err error) error {
	kind := plans.ErrorKind(err)
	if kind == plans.KindInternal {
		kind = plans.KindInvalid
	}
	where := list + "[" + name + "]"
	if field != "" {
		where += "." + field
	}
	return &plans.Error{Kind: kind, Field: where, Message: where + ": " + plans.ErrorMessage(err), Err: err}
}

// Dump returns d as `tollgate config dump` writes it: rate-limit rules
// without ids (they belong to one server); APIs, plans and keys keep
// theirs, so that applying the dump to the same stack matches by id.
func Dump(d *Document) *Document {
	out := *d
	out.Apis = slices.Clone(d.Apis)
	for i := range out.Apis {
		out.Apis[i].Stages = slices.Clone(out.Apis[i].Stages)
		for j := range out.Apis[i].Stages {
			st := &out.Apis[i].Stages[j]
			st.RateLimitRules = slices.Clone(st.RateLimitRules)
			for k := range st.RateLimitRules {
				st.RateLimitRules[k].ID = ""
			}
		}
	}
	return &out
}

// normalizeDomain writes the domain as the store keeps it: lower case,
// security policy TLS_1_2 when unset, base paths "(none)" for the root,
// mappings sorted by base path.
func normalizeDomain(dn DomainName) DomainName {
	d := plans.DomainName{DomainName: dn.DomainName, SecurityPolicy: dn.SecurityPolicy}
	d.Normalize()
	dn.DomainName, dn.SecurityPolicy, dn.Tags = d.DomainName, d.SecurityPolicy, nilIfEmpty(dn.Tags)
	ms := make([]BasePathMapping, len(dn.BasePathMappings))
	for i, m := range dn.BasePathMappings {
		pm := plans.BasePathMapping{BasePath: m.BasePath, Stage: m.Stage}
		pm.Normalize()
		ms[i] = BasePathMapping{BasePath: pm.BasePath, Api: m.Api, Stage: pm.Stage}
	}
	slices.SortFunc(ms, func(x, y BasePathMapping) int { return strings.Compare(x.BasePath, y.BasePath) })
	dn.BasePathMappings = ms
	if len(ms) == 0 {
		dn.BasePathMappings = nil
	}
	return dn
}
