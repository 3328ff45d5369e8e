package gateway

import (
	"errors"
	"fmt"
	"maps"
	"sync"

	"tollgate/limit"
	"tollgate/plans"
)

// config is the compiled, immutable form of one *plans.Snapshot: what a
// request reads after loading it once from Server.cfg.
type config struct {
	version int64
	apis    map[string]*apiConfig
	domains map[string]*domainRoute // custom domain names by name (certStore.compileDomains)
}

// hasStage reports whether c serves stage of apiID.
func (c *config) hasStage(apiID, stage string) bool {
	ac := c.apis[apiID]
	return ac != nil && ac.stages[stage] != nil
}

// apiConfig is one RestApi: its compiled stages by name.
type apiConfig struct {
	stages map[string]*stageConfig
	// usage is the partner usage endpoint of the API (partner.go): a
	// method of a stage of its own that every plan covering one of the
	// API's stages covers.
	usage *method
}

// stageConfig is one stage: its path tree, variables, the usage plans
// that cover it, by plan id, and its rate-limit rules.
type stageConfig struct {
	apiID, name string
	root        *node
	vars        map[string]string
	plans       map[string]*stagePlan
	responses   gatewayResponses // nil when the deployment puts none
	rules       []*stageRule
	series      stageSeries // its metric series, found on first use
}

// stagePlan is a usage plan as one stage sees it. throttle is nil when the
// plan has no plan-level throttle; quota is nil without a quota. shadow:
// the plan is tagged tollgate:mode=shadow.
type stagePlan struct {
	id       string
	throttle *plans.Throttle
	quota    *limit.Quota
	shadow   bool
	non5xx   bool             // tagged tollgate:quota-counts=non-5xx
	cost     plans.Cost       // what a request costs (tollgate:cost)
	customer *limit.Quota     // the customer quota (tollgate:customer-quota); nil for none
	plan     *plans.UsagePlan // the snapshot's plan (read only)
	// keyQuotas keeps the quota of each key calendar met (plans.KeyCalendar
	// → *limit.Quota), so a key on its own calendar costs a request no
	// parsing; at most one entry per anchor and zone pair.
	keyQuotas sync.Map
}

// method is a compiled method of a resource: everything a request needs
// that does not depend on the caller. shared holds the stage method bucket
// (when the stage has one for this method) and the account bucket.
// planThrottles holds the per-method throttles plans set for
// this method, by plan id. rules are the stage's rate-limit rules that
// may apply to it (methodRules). authorization is the method's
// authorizationType when tollgate cannot perform it (plans.Method.Closed):
// every call is refused; "" for an open method.
type method struct {
	stage         *stageConfig
	path, verb    string
	authorization string
	keyRequired   bool
	integ         integration
	shared        []limit.Bucket
	planThrottles map[string]plans.Throttle
	// planCosts holds the method costs plans set for this method
	// (apiStages[].methodCosts), by plan id: each replaces its plan's cost.
	planCosts map[string]*plans.Cost
	cache     *methodCache // nil when the method does not cache
	rules     []*stageRule
	series    methodSeries // its metric series, found on first use
}

// compile validates snap and builds its compiled form. An error means the
// snapshot cannot be used.
func compile(snap *plans.Snapshot) (*config, error) {
	if snap == nil {
		return nil, errors.New("gateway: nil snapshot")
	}
	if err := snap.Validate(); err != nil {
		return nil, fmt.Errorf("gateway: invalid snapshot version %d: %w", snap.Version, err)
	}
	account := limit.Bucket{Level: limit.LevelAccount, RateLimit: snap.Account.RateLimit, BurstLimit: snap.Account.BurstLimit}
	covering := plansByStage(snap.Plans)
	cfg := &config{version: snap.Version, apis: make(map[string]*apiConfig, len(snap.Apis))}
	for apiID, api := range snap.Apis {
		ac := &apiConfig{stages: make(map[string]*stageConfig, len(api.Stages))}
		for name, st := range api.Stages {
			sc, err := compileStage(apiID, st, covering[stageRef{apiID, name}], snap.Account, account)
			if err != nil {
				return nil, fmt.Errorf("gateway: snapshot version %d: api %s stage %s: %w", snap.Version, apiID, name, err)
			}
			ac.stages[name] = sc
		}
		ac.usage = usageMethod(apiID, ac.stages)
		cfg.apis[apiID] = ac
	}
	return cfg, nil
}

// stageRef names one (api, stage).
type stageRef struct{ api, stage string }

// plansByStage indexes usage plans by the (api, stage) pairs they cover.
func plansByStage(all map[string]*plans.UsagePlan) map[stageRef][]*plans.UsagePlan {
	out := map[stageRef][]*plans.UsagePlan{}
	for _, p := range all {
		for _, as := range p.ApiStages {
			ref := stageRef{as.ApiID, as.Stage}
			out[ref] = append(out[ref], p)
		}
	}
	return out
}

// compileStage builds one stage's tree and the plan view of it.
func compileStage(apiID string, st *plans.StageConfig, covering []*plans.UsagePlan, acct plans.Throttle, account limit.Bucket) (*stageConfig, error) {
	sc := &stageConfig{
		apiID:     apiID,
		name:      st.Stage.StageName,
		root:      &node{},
		vars:      maps.Clone(st.Stage.Variables),
		plans:     make(map[string]*stagePlan, len(covering)),
		responses: compileGatewayResponses(st.GatewayResponses),
		rules:     compileRules(st.RateLimitRules),
	}
	for _, p := range covering {
		sc.plans[p.ID] = newStagePlan(p)
	}
	for i := range st.Resources {
		res := &st.Resources[i]
		methods := make(map[string]*method, len(res.ResourceMethods))
		for verb, m := range res.ResourceMethods {
			if m == nil {
				continue
			}
			methods[verb] = compileMethod(sc, &st.Stage, res.Path, verb, m, covering, acct, account)
		}
		if err := addResource(sc.root, res.Path, methods); err != nil {
			return nil, err
		}
	}
	return sc, nil
}

// newStagePlan copies the plan-level limits of p.
func newStagePlan(p *plans.UsagePlan) *stagePlan {
	sp := &stagePlan{id: p.ID, shadow: p.Shadow(), non5xx: p.CountsNon5xx(), cost: p.Cost(), plan: p}
	if p.Throttle != nil {
		t := *p.Throttle
		sp.throttle = &t
	}
	sp.quota = limitQuota(p)
	if n, ok := p.CustomerQuota(); ok && sp.quota != nil {
		c := *sp.quota // the plan quota's period
		c.Limit = n
		sp.customer = &c
	}
	return sp
}

// limitQuota returns the quota of p as the limiter decides it: its
// period anchored and zoned as its fields and tags say (nil without one).
func limitQuota(p *plans.UsagePlan) *limit.Quota { return limitQuotaOf(p.QuotaRule()) }

// keyQuota returns the plan's quota as the limiter decides it for a key
// with calendar c: the key's own anchor and zone in place of the plan's
// (plans.KeyCalendar); the plan's own (shared) quota when c is zero.
func (sp *stagePlan) keyQuota(c plans.KeyCalendar) *limit.Quota {
	if c.IsZero() || sp.quota == nil {
		return sp.quota
	}
	if q, ok := sp.keyQuotas.Load(c); ok {
		return q.(*limit.Quota)
	}
	q, _ := sp.keyQuotas.LoadOrStore(c, limitQuotaOf(c.Apply(sp.plan.QuotaRule())))
	return q.(*limit.Quota)
}

// limitQuotaOf returns the quota rule q (nil for none) as the limiter
// decides it.
func limitQuotaOf(q *plans.Quota) *limit.Quota {
	if q == nil {
		return nil
	}
	c := q.Calendar()
	return &limit.Quota{Limit: q.Limit, Period: q.Period, Offset: q.Offset, Anchor: c.Anchor, Zone: c.Zone}
}

// compileMethod resolves one method's integration and buckets. The stage
// method bucket and the plans' per-method throttles are looked up by the
// method as configured (ANY stays ANY), as the methodSettings keys are.
func compileMethod(sc *stageConfig, stage *plans.Stage, path, verb string, m *plans.Method, covering []*plans.UsagePlan, acct plans.Throttle, account limit.Bucket) *method {
	cm := &method{
		stage:       sc,
		path:        path,
		verb:        verb,
		keyRequired: m.APIKeyRequired,
		integ:       compileIntegration(m.MethodIntegration, stage.Variables),
		shared:      make([]limit.Bucket, 0, 2),
		cache:       compileCache(stage, path, verb, m.MethodIntegration),
		rules:       methodRules(sc.rules, path, verb),
	}
	if m.Closed() {
		cm.authorization = m.AuthorizationType
	}
	if t, ok := stage.StageThrottle(path, verb, acct); ok {
		cm.shared = append(cm.shared, limit.Bucket{Level: limit.LevelStage, RateLimit: t.RateLimit, BurstLimit: t.BurstLimit, Method: verb, Path: path})
	}
	cm.shared = append(cm.shared, account)
	for _, p := range covering {
		if t, ok := p.MethodThrottle(sc.apiID, sc.name, path, verb); ok {
			if cm.planThrottles == nil {
				cm.planThrottles = map[string]plans.Throttle{}
			}
			cm.planThrottles[p.ID] = t
		}
		if c, ok := p.MethodCost(sc.apiID, sc.name, path, verb); ok {
			if cm.planCosts == nil {
				cm.planCosts = map[string]*plans.Cost{}
			}
			cm.planCosts[p.ID] = &c
		}
	}
	return cm
}
