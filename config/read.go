package config

import (
	"context"
	"encoding/json"
	"fmt"

	"tollgate/openapi"
	"tollgate/plans"
)

// Store is what Read and Apply need of the store (plans/postgres.DB);
// Apply's caller runs them in one transaction.
type Store interface {
	ListRestApis(ctx context.Context, p plans.Page) ([]plans.RestApi, string, error)
	GetRestApi(ctx context.Context, id string) (*plans.RestApi, error)
	ListResources(ctx context.Context, apiID string, p plans.Page) ([]plans.Resource, string, error)
	GatewayResponses(ctx context.Context, apiID string) (map[string]plans.GatewayResponse, error)
	Authorizers(ctx context.Context, apiID string) ([]plans.Authorizer, error)
	ListStages(ctx context.Context, apiID string) ([]plans.Stage, error)
	RateLimitRules(ctx context.Context, apiID string) (map[string][]plans.RateLimitRule, error)
	ListUsagePlans(ctx context.Context, keyID string, p plans.Page) ([]plans.UsagePlan, string, error)
	ListApiKeys(ctx context.Context, nameQuery, customerID string, p plans.Page) ([]plans.ApiKey, string, error)
	ListUsagePlanKeys(ctx context.Context, planID, nameQuery string, p plans.Page) ([]plans.UsagePlanKey, string, error)
	GetAccount(ctx context.Context) (*plans.Account, error)
	ListDomainNames(ctx context.Context, p plans.Page) ([]plans.DomainName, string, error)
	ListBasePathMappings(ctx context.Context, domain string, p plans.Page) ([]plans.BasePathMapping, string, error)
	// CountConfig counts the stored APIs, usage plans, API keys and
	// domain names, so that Read can tell a partial read from a whole one.
	CountConfig(ctx context.Context) (plans.ConfigCounts, error)
	Writer
}

// Read returns the stored configuration as a document, normalised. Any
// error, or a read that found fewer APIs, plans or keys than the store
// counts, fails the whole read: nothing may be planned (or pruned) from a
// partial state.
func Read(ctx context.Context, st Store) (*Document, error) {
	d := &Document{}
	acct, err := st.GetAccount(ctx)
	if err != nil {
		return nil, err
	}
	d.Account = &Account{Throttle: acct.ThrottleSettings}
	apis, err := all(func(p plans.Page) ([]plans.RestApi, string, error) { return st.ListRestApis(ctx, p) })
	if err != nil {
		return nil, err
	}
	apiNames := map[string]string{}
	for _, a := range apis {
		api, err := readApi(ctx, st, a)
		if err != nil {
			return nil, fmt.Errorf("config: reading API %s (%s): %w", a.Name, a.ID, err)
		}
		d.Apis = append(d.Apis, *api)
		apiNames[a.ID] = a.Name
	}
	ups, err := all(func(p plans.Page) ([]plans.UsagePlan, string, error) { return st.ListUsagePlans(ctx, "", p) })
	if err != nil {
		return nil, err
	}
	planNames := map[string]string{}
	members := map[string][]string{} // key id → plan names
	for _, p := range ups {
		d.UsagePlans = append(d.UsagePlans, dumpPlan(p, apiNames))
		planNames[p.ID] = p.Name
		pks, err := all(func(pg plans.Page) ([]plans.UsagePlanKey, string, error) {
			return st.ListUsagePlanKeys(ctx, p.ID, "", pg)
		})
		if err != nil {
			return nil, err
		}
		for _, pk := range pks {
			members[pk.ID] = append(members[pk.ID], p.Name)
		}
	}
	keys, err := all(func(p plans.Page) ([]plans.ApiKey, string, error) { return st.ListApiKeys(ctx, "", "", p) })
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		d.ApiKeys = append(d.ApiKeys, ApiKey{ID: k.ID, Name: k.Name, Description: k.Description, Enabled: k.Enabled,
			CustomerID: k.CustomerID, QuotaAnchor: k.QuotaAnchor, QuotaTimeZone: k.QuotaTimeZone, Tags: k.Tags, UsagePlans: members[k.ID]})
	}
	if d.DomainNames, err = readDomains(ctx, st, apiNames); err != nil {
		return nil, err
	}
	n, err := st.CountConfig(ctx)
	if err != nil {
		return nil, err
	}
	read := plans.ConfigCounts{Apis: len(d.Apis), UsagePlans: len(d.UsagePlans), ApiKeys: len(d.ApiKeys), DomainNames: len(d.DomainNames)}
	if n != read {
		return nil, plans.Unavailable(fmt.Errorf("read %+v of %+v", read, n),
			"the stored configuration could not be read whole; nothing was planned")
	}
	return Normalize(d)
}

// all reads every page of a list.
func all[T any](list func(plans.Page) ([]T, string, error)) ([]T, error) {
	var out []T
	p := plans.Page{Limit: 500}
	for {
		items, next, err := list(p)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
		if next == "" {
			return out, nil
		}
		p.Position = next
	}
}

func readApi(ctx context.Context, st Store, a plans.RestApi) (*Api, error) {
	rs, err := all(func(p plans.Page) ([]plans.Resource, string, error) { return st.ListResources(ctx, a.ID, p) })
	if err != nil {
		return nil, err
	}
	grs, err := st.GatewayResponses(ctx, a.ID)
	if err != nil {
		return nil, err
	}
	as, err := st.Authorizers(ctx, a.ID)
	if err != nil {
		return nil, err
	}
	def := plans.Definition(&a, rs, grs, as)
	b, _, err := openapi.Export(def, openapi.ExportOptions{Extensions: true})
	if err != nil {
		return nil, err
	}
	stages, err := st.ListStages(ctx, a.ID)
	if err != nil {
		return nil, err
	}
	rules, err := st.RateLimitRules(ctx, a.ID)
	if err != nil {
		return nil, err
	}
	out := &Api{ID: a.ID, Name: a.Name, Description: a.Description, Tags: a.Tags, Definition: json.RawMessage(b)}
	for _, s := range stages {
		out.Stages = append(out.Stages, Stage{Name: s.StageName, Description: s.Description, CacheClusterEnabled: s.CacheClusterEnabled,
			CacheClusterSize: s.CacheClusterSize, TracingEnabled: s.TracingEnabled, Variables: s.Variables,
			MethodSettings: s.MethodSettings, Tags: s.Tags, RateLimitRules: rules[s.StageName]})
	}
	return out, nil
}

func dumpPlan(p plans.UsagePlan, apiNames map[string]string) UsagePlan {
	out := UsagePlan{ID: p.ID, Name: p.Name, Description: p.Description, Throttle: p.Throttle, Quota: p.Quota, Tags: p.Tags,
		Alerts: p.Alerts, Cost: p.CostSettings, CustomerQuota: p.CustomerBudget}
	for _, as := range p.ApiStages {
		name := apiNames[as.ApiID]
		if name == "" {
			name = as.ApiID
		}
		out.ApiStages = append(out.ApiStages, ApiStage{Api: name, Stage: as.Stage, Throttle: as.Throttle, MethodCosts: as.MethodCosts})
	}
	return out
}

func readDomains(ctx context.Context, st Store, apiNames map[string]string) ([]DomainName, error) {
	ds, err := all(func(p plans.Page) ([]plans.DomainName, string, error) { return st.ListDomainNames(ctx, p) })
	if err != nil {
		return nil, err
	}
	var out []DomainName
	for _, d := range ds {
		ms, err := all(func(p plans.Page) ([]plans.BasePathMapping, string, error) {
			return st.ListBasePathMappings(ctx, d.DomainName, p)
		})
		if err != nil {
			return nil, err
		}
		dn := DomainName{DomainName: d.DomainName, CertificateName: d.CertificateName, RegionalCertificateName: d.RegionalCertificateName,
			RegionalCertificateArn: d.RegionalCertificateArn, SecurityPolicy: d.SecurityPolicy, Tags: d.Tags}
		for _, m := range ms {
			api := apiNames[m.RestApiID]
			if api == "" {
				api = m.RestApiID
			}
			dn.BasePathMappings = append(dn.BasePathMappings, BasePathMapping{BasePath: m.BasePath, Api: api, Stage: m.Stage})
		}
		out = append(out, dn)
	}
	return out, nil
}
