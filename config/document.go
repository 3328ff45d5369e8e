package config

import (
	"bytes"
	"encoding/json"

	"tollgate/plans"
)

// Document is the whole configuration. JSON and YAML use the same field
// names (docs/config.schema.json). A nil Account leaves the account
// throttle as it is.
type Document struct {
	Account    *Account    `json:"account,omitempty"`
	Apis       []Api       `json:"apis"`
	UsagePlans []UsagePlan `json:"usagePlans"`
	ApiKeys    []ApiKey    `json:"apiKeys"`
	// DomainNames are custom domain names with their base path mappings.
	DomainNames []DomainName `json:"domainNames,omitempty"`
}

// Account is the account throttle (PATCH /account).
type Account struct {
	Throttle plans.Throttle `json:"throttle"`
}

// Api is a REST API: its definition (tollgate's OpenAPI 3 export with the
// x-amazon-apigateway-* extensions: resources, methods, integrations,
// gateway responses) and its stages.
type Api struct {
	ID          string            `json:"id,omitempty"`
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Tags        map[string]string `json:"tags,omitempty"`
	Definition  json.RawMessage   `json:"definition"`
	Stages      []Stage           `json:"stages"`
}

// Stage is a stage of an API with its settings and rate-limit rules. It
// serves the API's definition: applying a changed definition deploys it
// to the document's stages.
type Stage struct {
	Name                string                `json:"name"`
	Description         string                `json:"description,omitempty"`
	CacheClusterEnabled bool                  `json:"cacheClusterEnabled,omitempty"`
	CacheClusterSize    string                `json:"cacheClusterSize,omitempty"`
	TracingEnabled      bool                  `json:"tracingEnabled,omitempty"`
	Variables           map[string]string     `json:"variables,omitempty"`
	MethodSettings      MethodSettings        `json:"methodSettings,omitempty"`
	Tags                map[string]string     `json:"tags,omitempty"`
	RateLimitRules      []plans.RateLimitRule `json:"rateLimitRules,omitempty"`
}

// DomainName is a custom domain name (REGIONAL) and its base path
// mappings. Its certificate is not part of a document (a private key never
// leaves the store): apply leaves a stored certificate as it is, and a
// domain it creates has none until one is uploaded (update-domain-name)
// or a node serves one from its files.
type DomainName struct {
	DomainName              string            `json:"domainName"`
	CertificateName         string            `json:"certificateName,omitempty"`
	RegionalCertificateName string            `json:"regionalCertificateName,omitempty"`
	RegionalCertificateArn  string            `json:"regionalCertificateArn,omitempty"`
	SecurityPolicy          string            `json:"securityPolicy,omitempty"`
	Tags                    map[string]string `json:"tags,omitempty"`
	BasePathMappings        []BasePathMapping `json:"basePathMappings,omitempty"`
}

// BasePathMapping maps a base path ("(none)" for the root) of a domain
// name to an API (by name) and, optionally, a stage.
type BasePathMapping struct {
	BasePath string `json:"basePath"`
	Api      string `json:"api"`
	Stage    string `json:"stage,omitempty"`
}

// UsagePlan is a usage plan; its api stages name APIs by name.
type UsagePlan struct {
	ID          string            `json:"id,omitempty"`
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Throttle    *plans.Throttle   `json:"throttle,omitempty"`
	Quota       *plans.Quota      `json:"quota,omitempty"`
	ApiStages   []ApiStage        `json:"apiStages,omitempty"`
	Tags        map[string]string `json:"tags,omitempty"`
	// Alerts, Cost and CustomerQuota are tollgate's own fields of a usage
	// plan (docs/usage.md, docs/cost.md).
	Alerts        []int32              `json:"alerts,omitempty"`
	Cost          *plans.CostSettings  `json:"cost,omitempty"`
	CustomerQuota *plans.CustomerQuota `json:"customerQuota,omitempty"`
}

// ApiStage is a stage a usage plan covers, with per-method throttles by
// raw path ("/pets/GET").
type ApiStage struct {
	Api      string                    `json:"api"`
	Stage    string                    `json:"stage"`
	Throttle map[string]plans.Throttle `json:"throttle,omitempty"`
	// MethodCosts are per-method weights keyed as Throttle (docs/cost.md).
	MethodCosts map[string]int32 `json:"methodCosts,omitempty"`
}

// ApiKey is an API key's metadata and the usage plans (by name) it is in;
// its value is never part of a document.
type ApiKey struct {
	ID          string `json:"id,omitempty"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Enabled     bool   `json:"enabled"`
	CustomerID  string `json:"customerId,omitempty"`
	// QuotaAnchor and QuotaTimeZone are the key's own quota calendar
	// (plans.ApiKey's fields of the same names).
	QuotaAnchor   string            `json:"quotaAnchor,omitempty"`
	QuotaTimeZone string            `json:"quotaTimeZone,omitempty"`
	Tags          map[string]string `json:"tags,omitempty"`
	UsagePlans    []string          `json:"usagePlans,omitempty"`
}

// MethodSettings are a stage's methodSettings. An entry of a document
// starts from plans.DefaultMethodSetting, so a field left out means AWS's
// default (throttles -1: inherit), never 0.
type MethodSettings map[string]plans.MethodSetting

// UnmarshalJSON reads each entry over plans.DefaultMethodSetting.
func (m *MethodSettings) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make(MethodSettings, len(raw))
	for k, v := range raw {
		ms := plans.DefaultMethodSetting()
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ms); err != nil {
			return plans.Invalid("methodSettings."+k, "methodSettings %q: %v", k, err)
		}
		out[k] = ms
	}
	*m = out
	return nil
}
