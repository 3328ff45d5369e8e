package config

import (
	"context"
	"encoding/json"

	"tollgate/plans"
)

// Writer is what Apply changes through: the store's own operations, each
// validating as it does for the admin API.
type Writer interface {
	UpdateAccount(ctx context.Context, fn func(*plans.Account) error) (*plans.Account, error)
	ImportRestApi(ctx context.Context, def *plans.ApiDefinition) (*plans.RestApi, error)
	PutRestApi(ctx context.Context, id, mode string, def *plans.ApiDefinition) (*plans.RestApi, error)
	UpdateRestApi(ctx context.Context, id string, fn func(*plans.RestApi) error) (*plans.RestApi, error)
	DeleteRestApi(ctx context.Context, id string) error
	CreateDeployment(ctx context.Context, apiID string, d *plans.Deployment, stageName, stageDescription string, variables map[string]string) error
	UpdateStage(ctx context.Context, apiID, name string, fn func(*plans.Stage) error) (*plans.Stage, error)
	DeleteStage(ctx context.Context, apiID, name string) error
	CreateRateLimitRule(ctx context.Context, apiID, stage string, r *plans.RateLimitRule) error
	UpdateRateLimitRule(ctx context.Context, apiID, stage, id string, fn func(*plans.RateLimitRule) error) (*plans.RateLimitRule, error)
	DeleteRateLimitRule(ctx context.Context, apiID, stage, id string) error
	CreateUsagePlan(ctx context.Context, p *plans.UsagePlan) error
	UpdateUsagePlan(ctx context.Context, id string, fn func(*plans.UsagePlan) error) (*plans.UsagePlan, error)
	DeleteUsagePlan(ctx context.Context, id string) error
	CreateApiKey(ctx context.Context, k *plans.ApiKey, hash string) error
	UpdateApiKey(ctx context.Context, id string, fn func(*plans.ApiKey) error) (*plans.ApiKey, error)
	DeleteApiKey(ctx context.Context, id string) error
	CreateUsagePlanKey(ctx context.Context, planID, keyID string) (*plans.UsagePlanKey, error)
	DeleteUsagePlanKey(ctx context.Context, planID, keyID string) error
	SetAuditResource(ctx context.Context, id int64, resource string) error
	CreateDomainName(ctx context.Context, d *plans.DomainName, cert plans.DomainCertificate) error
	UpdateDomainName(ctx context.Context, name string, fn func(*plans.DomainName, *plans.DomainCertificate) error) (*plans.DomainName, error)
	DeleteDomainName(ctx context.Context, name string) error
	CreateBasePathMapping(ctx context.Context, domain string, m *plans.BasePathMapping) error
	UpdateBasePathMapping(ctx context.Context, domain, basePath string, fn func(*plans.BasePathMapping) error) (*plans.BasePathMapping, error)
	DeleteBasePathMapping(ctx context.Context, domain, basePath string) error
}

// CreatedKey is an API key Apply created, with its value: shown once, in
// Apply's answer, never in a document or the audit log.
type CreatedKey struct {
	Name  string `json:"name"`
	ID    string `json:"id"`
	Value string `json:"value"`
}

// Applier makes a plan's changes.
type Applier struct {
	Store Writer
	// NewKey returns a new API key value and the hash to store
	// (plans.NewKeyValue, plans.HashKey under the pepper).
	NewKey func() (value, hash string)
}

// Apply makes changes (from Plan of current) in order, each audited with
// source config as its own operation; the caller runs it in one
// transaction, so an error (naming the item) leaves everything as it was.
func (ap Applier) Apply(ctx context.Context, current *Document, changes []Change) ([]CreatedKey, error) {
	r := &run{Applier: ap, ctx: ctx, apiIDs: map[string]string{}, planIDs: map[string]string{}}
	for _, a := range current.Apis {
		r.apiIDs[a.Name] = a.ID
	}
	for _, p := range current.UsagePlans {
		r.planIDs[p.Name] = p.ID
	}
	r.mappings = map[string][]BasePathMapping{}
	for _, d := range current.DomainNames {
		r.mappings[d.DomainName] = d.BasePathMappings
	}
	r.memberships = map[string][]string{}
	for _, k := range current.ApiKeys {
		r.memberships[k.ID] = k.UsagePlans
	}
	for _, c := range changes {
		if err := r.apply(c); err != nil {
			return nil, itemError(listOf(c.Kind), c.Name, "", err)
		}
	}
	return r.created, nil
}

func listOf(kind string) string {
	switch kind {
	case KindApi, KindStage, KindRule:
		return "apis"
	case KindUsagePlan:
		return "usagePlans"
	case KindApiKey:
		return "apiKeys"
	case KindDomain:
		return "domainNames"
	}
	return kind
}

type run struct {
	Applier
	ctx         context.Context
	apiIDs      map[string]string            // API name → id
	planIDs     map[string]string            // plan name → id
	memberships map[string][]string          // key id → plan names stored
	mappings    map[string][]BasePathMapping // domain name → mappings stored
	created     []CreatedKey
}

// audit returns ctx carrying the audit entry of one change: the actor of
// the request's entry, source config, the store operation, the resource
// path and what changed.
func (r *run) audit(c Change, op, resource string) (context.Context, *plans.AuditEntry) {
	e := &plans.AuditEntry{Source: plans.SourceConfig, Operation: op, Resource: resource, Actor: "config", Region: plans.DefaultRegion}
	if req := plans.AuditOf(r.ctx); req != nil {
		e.Actor, e.Region = req.Actor, req.Region
	}
	what := map[string]any{"config": c.Action + " " + c.Kind + " " + c.Name}
	if c.Fields != nil {
		what["fields"] = c.Fields
	} else if c.want != nil && c.Kind != KindApi {
		what["item"] = c.want
	}
	e.Change, _ = json.Marshal(what)
	return plans.WithAudit(r.ctx, e), e
}

// named gives a recorded audit entry the path of what its change created,
// in the same transaction.
func (r *run) named(ctx context.Context, e *plans.AuditEntry, resource string) error {
	e.Resource = resource
	if !e.Recorded {
		return nil
	}
	return r.Store.SetAuditResource(ctx, e.ID, resource)
}

func (r *run) apply(c Change) error {
	switch c.Kind {
	case KindAccount:
		ctx, _ := r.audit(c, "UpdateAccount", "/account")
		t := c.want.(*Account).Throttle
		_, err := r.Store.UpdateAccount(ctx, func(a *plans.Account) error { a.ThrottleSettings = t; return nil })
		return err
	case KindApi:
		return r.applyApi(c)
	case KindStage:
		return r.applyStage(c)
	case KindRule:
		return r.applyRule(c)
	case KindUsagePlan:
		return r.applyPlan(c)
	case KindApiKey:
		return r.applyKey(c)
	case KindDomain:
		return r.applyDomain(c)
	}
	return nil
}

func (r *run) applyApi(c Change) error {
	switch c.Action {
	case Delete:
		ctx, _ := r.audit(c, "DeleteRestApi", "/restapis/"+c.apiID)
		return r.Store.DeleteRestApi(ctx, c.apiID)
	case Create:
		want := c.want.(Api)
		def, err := definitionOf(want)
		if err != nil {
			return err
		}
		ctx, e := r.audit(c, "ImportRestApi", "/restapis")
		api, err := r.Store.ImportRestApi(ctx, def)
		if err != nil {
			return err
		}
		if err := r.named(ctx, e, "/restapis/"+api.ID); err != nil {
			return err
		}
		r.apiIDs[want.Name] = api.ID
		return r.setApi(ctx, api.ID, want)
	}
	want := c.want.(Api)
	ctx, _ := r.audit(c, "UpdateRestApi", "/restapis/"+c.apiID)
	if c.redeploy {
		def, err := definitionOf(want)
		if err != nil {
			return err
		}
		if _, err := r.Store.PutRestApi(ctx, c.apiID, plans.PutModeOverwrite, def); err != nil {
			return err
		}
		if len(c.deployStages) > 0 {
			d := &plans.Deployment{Description: "tollgate config apply"}
			if err := r.Store.CreateDeployment(ctx, c.apiID, d, "", "", nil); err != nil {
				return err
			}
			for _, s := range c.deployStages {
				if _, err := r.Store.UpdateStage(ctx, c.apiID, s, func(st *plans.Stage) error { st.DeploymentID = d.ID; return nil }); err != nil {
					return err
				}
			}
		}
	}
	return r.setApi(ctx, c.apiID, want)
}

// setApi sets an API's name, description and tags.
func (r *run) setApi(ctx context.Context, id string, want Api) error {
	_, err := r.Store.UpdateRestApi(ctx, id, func(a *plans.RestApi) error {
		a.Name, a.Description, a.Tags = want.Name, want.Description, want.Tags
		return nil
	})
	return err
}

func (r *run) applyStage(c Change) error {
	apiID := r.apiIDs[c.api]
	switch c.Action {
	case Delete:
		ctx, _ := r.audit(c, "DeleteStage", "/restapis/"+apiID+"/stages/"+c.stage)
		return r.Store.DeleteStage(ctx, apiID, c.stage)
	case Create:
		ctx, _ := r.audit(c, "CreateStage", "/restapis/"+apiID+"/stages/"+c.stage)
		want := c.want.(Stage)
		if err := r.Store.CreateDeployment(ctx, apiID, &plans.Deployment{Description: "tollgate config apply"}, c.stage, want.Description, want.Variables); err != nil {
			return err
		}
		return r.setStage(ctx, apiID, want)
	}
	ctx, _ := r.audit(c, "UpdateStage", "/restapis/"+apiID+"/stages/"+c.stage)
	return r.setStage(ctx, apiID, c.want.(Stage))
}

func (r *run) setStage(ctx context.Context, apiID string, want Stage) error {
	_, err := r.Store.UpdateStage(ctx, apiID, want.Name, func(s *plans.Stage) error {
		s.Description, s.CacheClusterEnabled, s.CacheClusterSize = want.Description, want.CacheClusterEnabled, want.CacheClusterSize
		s.TracingEnabled, s.Variables, s.Tags = want.TracingEnabled, want.Variables, want.Tags
		s.MethodSettings = map[string]plans.MethodSetting(want.MethodSettings)
		if s.MethodSettings == nil {
			s.MethodSettings = map[string]plans.MethodSetting{}
		}
		return nil
	})
	return err
}

func (r *run) applyRule(c Change) error {
	apiID := r.apiIDs[c.api]
	base := "/restapis/" + apiID + "/stages/" + c.stage + "/ratelimitrules"
	switch c.Action {
	case Delete:
		ctx, _ := r.audit(c, "DeleteRateLimitRule", base+"/"+c.ruleID)
		return r.Store.DeleteRateLimitRule(ctx, apiID, c.stage, c.ruleID)
	case Create:
		ctx, e := r.audit(c, "CreateRateLimitRule", base)
		rule := c.want.(plans.RateLimitRule)
		if err := r.Store.CreateRateLimitRule(ctx, apiID, c.stage, &rule); err != nil {
			return err
		}
		return r.named(ctx, e, base+"/"+rule.ID)
	}
	ctx, _ := r.audit(c, "UpdateRateLimitRule", base+"/"+c.ruleID)
	want := c.want.(plans.RateLimitRule)
	_, err := r.Store.UpdateRateLimitRule(ctx, apiID, c.stage, c.ruleID, func(rule *plans.RateLimitRule) error {
		id := rule.ID
		*rule = want
		rule.ID = id
		return nil
	})
	return err
}

// apiStages resolves a plan's api stages from API names to ids.
func (r *run) apiStages(p UsagePlan) ([]plans.ApiStage, error) {
	out := make([]plans.ApiStage, 0, len(p.ApiStages))
	for _, as := range p.ApiStages {
		id, ok := r.apiIDs[as.Api]
		if !ok {
			return nil, plans.Invalid("apiStages", "apiStages: no API named %q", as.Api)
		}
		out = append(out, plans.ApiStage{ApiID: id, Stage: as.Stage, Throttle: as.Throttle, MethodCosts: as.MethodCosts})
	}
	return out, nil
}

func (r *run) applyPlan(c Change) error {
	if c.Action == Delete {
		ctx, _ := r.audit(c, "DeleteUsagePlan", "/usageplans/"+c.ID)
		return r.Store.DeleteUsagePlan(ctx, c.ID)
	}
	want := c.want.(UsagePlan)
	stages, err := r.apiStages(want)
	if err != nil {
		return err
	}
	if c.Action == Create {
		ctx, e := r.audit(c, "CreateUsagePlan", "/usageplans")
		p := &plans.UsagePlan{Name: want.Name, Description: want.Description, Throttle: want.Throttle, Quota: want.Quota, Tags: want.Tags, ApiStages: stages,
			Alerts: want.Alerts, CostSettings: want.Cost, CustomerBudget: want.CustomerQuota}
		if err := r.Store.CreateUsagePlan(ctx, p); err != nil {
			return err
		}
		r.planIDs[want.Name] = p.ID
		return r.named(ctx, e, "/usageplans/"+p.ID)
	}
	ctx, _ := r.audit(c, "UpdateUsagePlan", "/usageplans/"+c.ID)
	_, err = r.Store.UpdateUsagePlan(ctx, c.ID, func(p *plans.UsagePlan) error {
		p.Name, p.Description, p.Throttle, p.Quota, p.Tags, p.ApiStages = want.Name, want.Description, want.Throttle, want.Quota, want.Tags, stages
		p.Alerts, p.CostSettings, p.CustomerBudget = want.Alerts, want.Cost, want.CustomerQuota
		return nil
	})
	return err
}

func (r *run) applyKey(c Change) error {
	if c.Action == Delete {
		ctx, _ := r.audit(c, "DeleteApiKey", "/apikeys/"+c.ID)
		return r.Store.DeleteApiKey(ctx, c.ID)
	}
	want := c.want.(ApiKey)
	id := c.ID
	var ctx context.Context
	if c.Action == Create {
		var e *plans.AuditEntry
		ctx, e = r.audit(c, "CreateApiKey", "/apikeys")
		value, hash := r.NewKey()
		k := &plans.ApiKey{}
		want.set(k)
		if err := r.Store.CreateApiKey(ctx, k, hash); err != nil {
			return err
		}
		id = k.ID
		r.created = append(r.created, CreatedKey{Name: k.Name, ID: k.ID, Value: value})
		if err := r.named(ctx, e, "/apikeys/"+k.ID); err != nil {
			return err
		}
	} else {
		ctx, _ = r.audit(c, "UpdateApiKey", "/apikeys/"+id)
		if _, err := r.Store.UpdateApiKey(ctx, id, func(k *plans.ApiKey) error {
			want.set(k)
			return nil
		}); err != nil {
			return err
		}
	}
	return r.syncMemberships(ctx, id, want.UsagePlans)
}

// set writes the document's fields of an API key over k's.
func (a ApiKey) set(k *plans.ApiKey) {
	k.Name, k.Description, k.Enabled, k.CustomerID, k.Tags = a.Name, a.Description, a.Enabled, a.CustomerID, a.Tags
	k.QuotaAnchor, k.QuotaTimeZone = a.QuotaAnchor, a.QuotaTimeZone
}

// syncMemberships makes key id a member of exactly the plans named.
func (r *run) syncMemberships(ctx context.Context, id string, want []string) error {
	have := map[string]bool{}
	for _, p := range r.memberships[id] {
		have[p] = true
	}
	wanted := map[string]bool{}
	for _, p := range want {
		wanted[p] = true
	}
	for _, p := range r.memberships[id] {
		if !wanted[p] {
			if err := r.Store.DeleteUsagePlanKey(ctx, r.planIDs[p], id); err != nil {
				return err
			}
		}
	}
	for _, p := range want {
		if have[p] {
			continue
		}
		planID, ok := r.planIDs[p]
		if !ok {
			return plans.Invalid("usagePlans", "usagePlans: no usage plan named %q", p)
		}
		if _, err := r.Store.CreateUsagePlanKey(ctx, planID, id); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) applyDomain(c Change) error {
	path := "/domainnames/" + c.Name
	if c.Action == Delete {
		ctx, _ := r.audit(c, "DeleteDomainName", path)
		return r.Store.DeleteDomainName(ctx, c.Name)
	}
	want := c.want.(DomainName)
	set := func(d *plans.DomainName) {
		d.CertificateName, d.RegionalCertificateName, d.RegionalCertificateArn = want.CertificateName, want.RegionalCertificateName, want.RegionalCertificateArn
		d.SecurityPolicy, d.Tags = want.SecurityPolicy, want.Tags
	}
	var ctx context.Context
	if c.Action == Create {
		ctx, _ = r.audit(c, "CreateDomainName", path)
		d := &plans.DomainName{DomainName: want.DomainName}
		set(d)
		d.Normalize()
		if err := d.Validate(); err != nil {
			return err
		}
		if err := r.Store.CreateDomainName(ctx, d, plans.DomainCertificate{}); err != nil {
			return err
		}
	} else {
		ctx, _ = r.audit(c, "UpdateDomainName", path)
		if _, err := r.Store.UpdateDomainName(ctx, c.Name, func(d *plans.DomainName, _ *plans.DomainCertificate) error {
			set(d)
			return nil
		}); err != nil {
			return err
		}
	}
	return r.syncMappings(ctx, want)
}

// syncMappings makes the domain's base path mappings exactly want's.
func (r *run) syncMappings(ctx context.Context, want DomainName) error {
	stored := map[string]BasePathMapping{}
	for _, m := range r.mappings[want.DomainName] {
		stored[m.BasePath] = m
	}
	wanted := map[string]bool{}
	for _, m := range want.BasePathMappings {
		wanted[m.BasePath] = true
	}
	for _, m := range r.mappings[want.DomainName] {
		if !wanted[m.BasePath] {
			if err := r.Store.DeleteBasePathMapping(ctx, want.DomainName, m.BasePath); err != nil {
				return err
			}
		}
	}
	for _, m := range want.BasePathMappings {
		apiID, ok := r.apiIDs[m.Api]
		if !ok {
			return plans.Invalid("basePathMappings", "basePathMappings %s: no API named %q", m.BasePath, m.Api)
		}
		old, ok := stored[m.BasePath]
		switch {
		case !ok:
			if err := r.Store.CreateBasePathMapping(ctx, want.DomainName, &plans.BasePathMapping{BasePath: m.BasePath, RestApiID: apiID, Stage: m.Stage}); err != nil {
				return err
			}
		case old != m:
			if _, err := r.Store.UpdateBasePathMapping(ctx, want.DomainName, m.BasePath, func(pm *plans.BasePathMapping) error {
				pm.RestApiID, pm.Stage = apiID, m.Stage
				return nil
			}); err != nil {
				return err
			}
		}
	}
	return nil
}
