package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"tollgate/plans"
)

// Change actions and kinds.
const (
	Create = "create"
	Update = "update"
	Delete = "delete"

	KindAccount   = "account"
	KindApi       = "api"
	KindStage     = "stage"
	KindRule      = "rateLimitRule"
	KindUsagePlan = "usagePlan"
	KindApiKey    = "apiKey"
	KindDomain    = "domainName"
)

// Change is one difference between the stored configuration and a
// document: what apply does. Name is the item's name, with its API and
// stage for stages and rules ("shop/prod", "shop/prod/burst"); Fields
// holds, for an update, each field that differs, stored and wanted.
type Change struct {
	Action string                 `json:"action"`
	Kind   string                 `json:"kind"`
	Name   string                 `json:"name"`
	ID     string                 `json:"id,omitempty"`
	Fields map[string]FieldChange `json:"fields,omitempty"`

	// What apply works from.
	api, stage    string // names of the API and stage (stages, rules)
	apiID, ruleID string // stored ids
	want          any    // the document's item (create, update)
	redeploy      bool   // an API whose definition changed: deploy to its stages
	deployStages  []string
}

// FieldChange is one field of an update: its stored and wanted values.
type FieldChange struct {
	Stored json.RawMessage `json:"stored"`
	Wanted json.RawMessage `json:"wanted"`
}

// Plan returns the changes that make current (from Read) into desired
// (normalised here), in the order Apply makes them: the account, APIs
// with their stages and rules, usage plans, domain names, API keys, then,
// when prune is set, deletions of what desired lacks (keys, plans, domain
// names, rules, stages, APIs). Without prune nothing is deleted.
func Plan(current, desired *Document, prune bool) ([]Change, error) {
	want, err := Normalize(desired)
	if err != nil {
		return nil, err
	}
	var out, deletes []Change
	if want.Account != nil && current.Account != nil && want.Account.Throttle != current.Account.Throttle {
		out = append(out, Change{Action: Update, Kind: KindAccount, Name: "account",
			Fields: fields(map[string]any{"throttle": current.Account.Throttle}, map[string]any{"throttle": want.Account.Throttle}), want: want.Account})
	}
	apiPairs, gone, err := match(want.Apis, current.Apis, func(a Api) (string, string) { return a.ID, a.Name }, "apis")
	if err != nil {
		return nil, err
	}
	for _, p := range apiPairs {
		ch, del := planApi(p.want, p.have)
		out, deletes = append(out, ch...), append(deletes, del...)
	}
	for _, a := range gone {
		deletes = append(deletes, Change{Action: Delete, Kind: KindApi, Name: a.Name, ID: a.ID, apiID: a.ID})
	}
	planPairs, gonePlans, err := match(want.UsagePlans, current.UsagePlans, func(p UsagePlan) (string, string) { return p.ID, p.Name }, "usagePlans")
	if err != nil {
		return nil, err
	}
	for _, p := range planPairs {
		out = append(out, planItem(KindUsagePlan, p.want.Name, p.want, p.have, func(u UsagePlan) UsagePlan { u.ID = ""; return u })...)
	}
	domainPairs, goneDomains, err := match(want.DomainNames, current.DomainNames, func(d DomainName) (string, string) { return d.DomainName, d.DomainName }, "domainNames")
	if err != nil {
		return nil, err
	}
	for _, p := range domainPairs {
		out = append(out, planItem(KindDomain, p.want.DomainName, p.want, p.have, func(d DomainName) DomainName { return d })...)
	}
	keyPairs, goneKeys, err := match(want.ApiKeys, current.ApiKeys, func(k ApiKey) (string, string) { return k.ID, k.Name }, "apiKeys")
	if err != nil {
		return nil, err
	}
	for _, p := range keyPairs {
		out = append(out, planItem(KindApiKey, p.want.Name, p.want, p.have, func(k ApiKey) ApiKey { k.ID = ""; return k })...)
	}
	if !prune {
		return out, nil
	}
	for _, k := range goneKeys {
		out = append(out, Change{Action: Delete, Kind: KindApiKey, Name: k.Name, ID: k.ID})
	}
	for _, p := range gonePlans {
		out = append(out, Change{Action: Delete, Kind: KindUsagePlan, Name: p.Name, ID: p.ID})
	}
	for _, d := range goneDomains {
		out = append(out, Change{Action: Delete, Kind: KindDomain, Name: d.DomainName, ID: d.DomainName})
	}
	return append(out, deletes...), nil
}

type pair[T any] struct {
	want T
	have *T // nil: to create
}

// match pairs each wanted item with a stored one: by id when the item
// gives one that is stored, else by name. It returns the stored items no
// wanted item matched. Two wanted items of one name, or a name several
// unmatched stored items share, is an error naming it.
func match[T any](want, have []T, key func(T) (id, name string), list string) ([]pair[T], []T, error) {
	used := make([]bool, len(have))
	byID := map[string]int{}
	for i, h := range have {
		id, _ := key(h)
		byID[id] = i
	}
	seen := map[string]bool{}
	var out []pair[T]
	for _, w := range want {
		id, name := key(w)
		if seen[name] {
			return nil, nil, plans.Invalid(list+"["+name+"]", "%s[%s]: the document has two items of this name", list, name)
		}
		seen[name] = true
		if i, ok := byID[id]; ok && id != "" && !used[i] {
			used[i] = true
			out = append(out, pair[T]{w, &have[i]})
			continue
		}
		found := -1
		for i, h := range have {
			if _, n := key(h); n == name && !used[i] {
				if found >= 0 {
					return nil, nil, plans.Invalid(list+"["+name+"]", "%s[%s]: several stored items have this name; give the id of the one meant", list, name)
				}
				found = i
			}
		}
		if found < 0 {
			out = append(out, pair[T]{w, nil})
			continue
		}
		used[found] = true
		out = append(out, pair[T]{w, &have[found]})
	}
	var gone []T
	for i, h := range have {
		if !used[i] {
			gone = append(gone, h)
		}
	}
	return out, gone, nil
}

// planItem is the create or update of a plan or key.
func planItem[T any](kind, name string, want T, have *T, bare func(T) T) []Change {
	if have == nil {
		return []Change{{Action: Create, Kind: kind, Name: name, want: want}}
	}
	f := fields(bare(*have), bare(want))
	if len(f) == 0 {
		return nil
	}
	id, _ := idName(*have)
	return []Change{{Action: Update, Kind: kind, Name: name, ID: id, Fields: f, want: want}}
}

func idName(v any) (string, string) {
	switch t := v.(type) {
	case UsagePlan:
		return t.ID, t.Name
	case ApiKey:
		return t.ID, t.Name
	case Api:
		return t.ID, t.Name
	case DomainName:
		return t.DomainName, t.DomainName
	}
	return "", ""
}

// planApi is the changes of one API: its own fields, then its stages and
// their rules; deletions of stages and rules come apart.
func planApi(want Api, have *Api) (changes, deletes []Change) {
	bare := func(a Api) Api { a.ID, a.Stages = "", nil; return a }
	if have == nil {
		changes = append(changes, Change{Action: Create, Kind: KindApi, Name: want.Name, want: want})
		for _, s := range want.Stages {
			changes = append(changes, stageChanges(want.Name, "", s, nil)...)
		}
		return changes, nil
	}
	f := fields(bare(*have), bare(want))
	existing := map[string]bool{}
	for _, s := range have.Stages {
		existing[s.Name] = true
	}
	if len(f) > 0 {
		ch := Change{Action: Update, Kind: KindApi, Name: want.Name, ID: have.ID, apiID: have.ID, Fields: f, want: want}
		if _, ok := f["definition"]; ok {
			ch.redeploy = true
			for _, s := range want.Stages {
				if existing[s.Name] {
					ch.deployStages = append(ch.deployStages, s.Name)
				}
			}
		}
		changes = append(changes, ch)
	}
	stored := map[string]*Stage{}
	for i := range have.Stages {
		stored[have.Stages[i].Name] = &have.Stages[i]
	}
	wanted := map[string]bool{}
	for _, s := range want.Stages {
		wanted[s.Name] = true
		changes = append(changes, stageChanges(want.Name, have.ID, s, stored[s.Name])...)
		if st := stored[s.Name]; st != nil {
			deletes = append(deletes, ruleDeletes(want.Name, have.ID, s, st)...)
		}
	}
	for _, s := range have.Stages {
		if !wanted[s.Name] {
			deletes = append(deletes, Change{Action: Delete, Kind: KindStage, Name: want.Name + "/" + s.Name, api: want.Name, stage: s.Name, apiID: have.ID})
		}
	}
	return changes, deletes
}

func stageChanges(api, apiID string, want Stage, have *Stage) []Change {
	name := api + "/" + want.Name
	bare := func(s Stage) Stage { s.RateLimitRules = nil; return s }
	var out []Change
	if have == nil {
		out = append(out, Change{Action: Create, Kind: KindStage, Name: name, api: api, stage: want.Name, apiID: apiID, want: want})
	} else if f := fields(bare(*have), bare(want)); len(f) > 0 {
		out = append(out, Change{Action: Update, Kind: KindStage, Name: name, api: api, stage: want.Name, apiID: apiID, Fields: f, want: want})
	}
	stored := map[string]plans.RateLimitRule{}
	if have != nil {
		for _, r := range have.RateLimitRules {
			stored[r.Name] = r
		}
	}
	for _, r := range want.RateLimitRules {
		rn := name + "/" + r.Name
		h, ok := stored[r.Name]
		if !ok {
			out = append(out, Change{Action: Create, Kind: KindRule, Name: rn, api: api, stage: want.Name, apiID: apiID, want: r})
			continue
		}
		id := h.ID
		h.ID = ""
		if f := fields(h, r); len(f) > 0 {
			out = append(out, Change{Action: Update, Kind: KindRule, Name: rn, ID: id, api: api, stage: want.Name, apiID: apiID, ruleID: id, Fields: f, want: r})
		}
	}
	return out
}

func ruleDeletes(api, apiID string, want Stage, have *Stage) []Change {
	wanted := map[string]bool{}
	for _, r := range want.RateLimitRules {
		wanted[r.Name] = true
	}
	var out []Change
	for _, r := range have.RateLimitRules {
		if !wanted[r.Name] {
			out = append(out, Change{Action: Delete, Kind: KindRule, Name: api + "/" + want.Name + "/" + r.Name, ID: r.ID,
				api: api, stage: want.Name, apiID: apiID, ruleID: r.ID})
		}
	}
	return out
}

// fields compares two values field by field (their JSON objects) and
// returns the fields that differ.
func fields(have, want any) map[string]FieldChange {
	h, w := object(have), object(want)
	out := map[string]FieldChange{}
	keys := map[string]bool{}
	for k := range h {
		keys[k] = true
	}
	for k := range w {
		keys[k] = true
	}
	for _, k := range slices.Sorted(mapsKeys(keys)) {
		if !bytes.Equal(h[k], w[k]) {
			out[k] = FieldChange{Stored: orNull(h[k]), Wanted: orNull(w[k])}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func mapsKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func object(v any) map[string]json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("config: %v", err)) // documents hold only encodable values
	}
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	for k, x := range m {
		m[k] = compact(x)
	}
	return m
}

func orNull(b json.RawMessage) json.RawMessage {
	if b == nil {
		return json.RawMessage("null")
	}
	return b
}
