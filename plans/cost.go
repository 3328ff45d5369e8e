package plans

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Plan tags of cost and customer budgets (docs/cost.md), settable with the
// AWS CLI (tag-resource); a bad value is a 400 naming the tag.
const (
	// CostTag says what one request costs in the plan's units: "N" (a
	// fixed weight, default 1), "header:<Name>" (the integer the upstream
	// sends in that response header) or "json:<path>[+<path>...]" (the sum
	// of those numeric fields of a JSON response body, dot paths such as
	// usage.input_tokens+usage.output_tokens).
	CostTag = "tollgate:cost"
	// CostReserveTag is the units a settled cost takes in the decision
	// (default 1); the settle after the response charges the difference.
	CostReserveTag = "tollgate:cost-reserve"
	// CostIfMissingTag says what a response without the header or field
	// costs: "0" or "reserve" (the default).
	CostIfMissingTag = "tollgate:cost-if-missing"
	// CustomerQuotaTag is "N": the units per quota period every key with
	// the same customerId shares in the plan (a key without one is its own
	// customer).
	CustomerQuotaTag = "tollgate:customer-quota"
)

// Values of CostIfMissingTag.
const (
	CostIfMissingZero    = "0"
	CostIfMissingReserve = "reserve"
)

// MaxCost is the largest weight, reservation or customer quota a tag may
// set.
const MaxCost = 1_000_000_000

// maxCostPaths is the most fields a json: cost may sum.
const maxCostPaths = 8

// Cost is what one request of a plan costs (CostTag and its companions).
// A fixed cost has Weight; a settled one names Header or JSON and takes
// Reserve in the decision.
type Cost struct {
	// Weight is the fixed cost of a request (1 by default, 0 allowed).
	Weight int32
	// Header names the response header whose integer is the cost.
	Header string
	// JSON lists the dot paths of the response body's numeric fields whose
	// sum is the cost, each split at its dots.
	JSON [][]string
	// Reserve is the units a settled cost takes in the decision.
	Reserve int32
	// IfMissingZero: a response without the header or fields costs 0 (else
	// Reserve).
	IfMissingZero bool
}

// DefaultCost is one unit per request, as AWS counts.
var DefaultCost = Cost{Weight: 1, Reserve: 1}

// Settled reports whether the cost is known only after the response.
func (c *Cost) Settled() bool { return c.Header != "" || len(c.JSON) > 0 }

// Decided is the units a request takes in its decision: its weight, or
// the reservation of a settled cost.
func (c *Cost) Decided() int32 {
	if c.Settled() {
		return c.Reserve
	}
	return c.Weight
}

// IfMissing is the cost of a response without the header or fields.
func (c *Cost) IfMissing() int32 {
	if c.IfMissingZero {
		return 0
	}
	return c.Reserve
}

// ParseCost reads the cost tags of a plan; errors are KindInvalid naming
// the tag ("tags.tollgate:cost").
func ParseCost(tags map[string]string) (Cost, error) {
	c := DefaultCost
	if v, ok := tags[CostTag]; ok {
		switch {
		case strings.HasPrefix(v, "header:"):
			name := strings.TrimPrefix(v, "header:")
			if !validHeaderName(name) {
				return c, Invalid("tags."+CostTag, "tag %s=%q: header:<Name> needs a valid HTTP header name", CostTag, v)
			}
			c.Header = name
		case strings.HasPrefix(v, "json:"):
			paths := strings.Split(strings.TrimPrefix(v, "json:"), "+")
			if len(paths) > maxCostPaths {
				return c, Invalid("tags."+CostTag, "tag %s=%q: at most %d fields", CostTag, v, maxCostPaths)
			}
			for _, p := range paths {
				segs := strings.Split(p, ".")
				for _, s := range segs {
					if s == "" {
						return c, Invalid("tags."+CostTag, "tag %s=%q: json:<path>[+<path>...] needs dot paths of field names, e.g. json:usage.input_tokens+usage.output_tokens", CostTag, v)
					}
				}
				c.JSON = append(c.JSON, segs)
			}
		default:
			n, err := parseUnits(v)
			if err != nil {
				return c, Invalid("tags."+CostTag, "tag %s=%q must be a weight (0 to %d), header:<Name> or json:<path>[+<path>...]", CostTag, v, MaxCost)
			}
			c.Weight = n
		}
	}
	if v, ok := tags[CostReserveTag]; ok {
		n, err := parseUnits(v)
		if err != nil {
			return c, Invalid("tags."+CostReserveTag, "tag %s=%q must be a whole number of units from 0 to %d", CostReserveTag, v, MaxCost)
		}
		c.Reserve = n
	}
	if v, ok := tags[CostIfMissingTag]; ok {
		switch v {
		case CostIfMissingZero:
			c.IfMissingZero = true
		case CostIfMissingReserve:
		default:
			return c, Invalid("tags."+CostIfMissingTag, "tag %s=%q must be %s or %s", CostIfMissingTag, v, CostIfMissingZero, CostIfMissingReserve)
		}
	}
	return c, nil
}

// parseUnits reads a whole number of units, 0..MaxCost.
func parseUnits(v string) (int32, error) {
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 0 || n > MaxCost || v != strconv.FormatInt(n, 10) {
		return 0, strconv.ErrSyntax
	}
	return int32(n), nil
}

// validHeaderName reports whether name is an HTTP field name (RFC 9110
// token).
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// Cost returns the plan's cost: its cost field, else its tags, field by
// field (DefaultCost when they do not parse: Validate refuses such a
// plan).
func (p *UsagePlan) Cost() Cost {
	c, err := ParseCost(p.CostSettings.overTags(p.Tags))
	if err != nil {
		return DefaultCost
	}
	return c
}

// CustomerQuota returns the plan's customer quota (the customerQuota
// field, else CustomerQuotaTag) and whether it has one.
func (p *UsagePlan) CustomerQuota() (int32, bool) {
	if p.CustomerBudget != nil {
		return p.CustomerBudget.Limit, true
	}
	v, ok := p.Tags[CustomerQuotaTag]
	if !ok {
		return 0, false
	}
	n, err := parseUnits(v)
	return n, err == nil
}

// validateCost checks the cost and customer quota fields and tags of p,
// and its api stages' method costs.
func (p *UsagePlan) validateCost() error {
	if _, err := ParseCost(p.Tags); err != nil {
		return err
	}
	if c := p.CostSettings; c != nil {
		if err := c.Validate(); err != nil {
			return err
		}
	}
	if q := p.CustomerBudget; q != nil {
		if err := q.Validate(); err != nil {
			return err
		}
		if p.Quota == nil {
			return Invalid("customerQuota", "customerQuota needs the plan's quota: the customer quota counts per its period")
		}
	}
	for _, as := range p.ApiStages {
		for key, w := range as.MethodCosts {
			if _, _, err := ParseMethodThrottleKey(key); err != nil {
				return Invalid("apiStages.methodCosts", "method cost key %q must be <resource path>/<METHOD>, e.g. /pets/GET", key)
			}
			if w < 0 || w > MaxCost {
				return Invalid("apiStages.methodCosts."+key, "method cost %s must be a whole number of units from 0 to %d", key, MaxCost)
			}
		}
	}
	if v, ok := p.Tags[CustomerQuotaTag]; ok {
		if _, err := parseUnits(v); err != nil {
			return Invalid("tags."+CustomerQuotaTag, "tag %s=%q must be a whole number of units from 0 to %d", CustomerQuotaTag, v, MaxCost)
		}
		if p.Quota == nil {
			return Invalid("tags."+CustomerQuotaTag, "tag %s needs the plan's quota: the customer quota counts per its period", CustomerQuotaTag)
		}
	}
	return nil
}

// CostSettings is the native form of the cost tags (the usage plan's
// "cost" field): at most one of Weight, Header and JSON, with Reserve and
// IfMissing for a settled cost. A field that is set wins over its tag.
type CostSettings struct {
	Weight    *int32   `json:"weight,omitempty"`
	Header    string   `json:"header,omitempty"`
	JSON      []string `json:"json,omitempty"`
	Reserve   *int32   `json:"reserve,omitempty"`
	IfMissing string   `json:"ifMissing,omitempty"`
}

// CustomerQuota is the native form of CustomerQuotaTag (the usage plan's
// "customerQuota" field): Limit units per quota period shared by the keys
// of one customerId.
type CustomerQuota struct {
	Limit int32 `json:"limit"`
}

// Validate checks c, naming the field ("cost.weight", ...).
func (c *CostSettings) Validate() error {
	set := 0
	if c.Weight != nil {
		set++
		if *c.Weight < 0 || *c.Weight > MaxCost {
			return Invalid("cost.weight", "cost.weight must be a whole number of units from 0 to %d", MaxCost)
		}
	}
	if c.Header != "" {
		set++
		if !validHeaderName(c.Header) {
			return Invalid("cost.header", "cost.header %q is not a valid HTTP header name", c.Header)
		}
	}
	if c.JSON != nil {
		set++
		if len(c.JSON) == 0 || len(c.JSON) > maxCostPaths {
			return Invalid("cost.json", "cost.json must list 1 to %d dot paths of numeric fields, e.g. [\"usage.input_tokens\",\"usage.output_tokens\"]", maxCostPaths)
		}
		for _, p := range c.JSON {
			if strings.Contains(p, "+") || slices.Contains(strings.Split(p, "."), "") {
				return Invalid("cost.json", "cost.json path %q must be a dot path of field names such as usage.total_tokens", p)
			}
		}
	}
	if set > 1 {
		return Invalid("cost", "cost takes one of weight, header and json")
	}
	if c.Reserve != nil && (*c.Reserve < 0 || *c.Reserve > MaxCost) {
		return Invalid("cost.reserve", "cost.reserve must be a whole number of units from 0 to %d", MaxCost)
	}
	if c.IfMissing != "" && c.IfMissing != CostIfMissingZero && c.IfMissing != CostIfMissingReserve {
		return Invalid("cost.ifMissing", "cost.ifMissing %q must be %s or %s", c.IfMissing, CostIfMissingZero, CostIfMissingReserve)
	}
	return nil
}

// overTags returns tags with the tag form of each field of c that is set
// in place of its tag (c nil: tags).
func (c *CostSettings) overTags(tags map[string]string) map[string]string {
	if c == nil {
		return tags
	}
	out := maps.Clone(tags)
	if out == nil {
		out = map[string]string{}
	}
	switch {
	case c.Weight != nil:
		out[CostTag] = strconv.Itoa(int(*c.Weight))
	case c.Header != "":
		out[CostTag] = "header:" + c.Header
	case len(c.JSON) > 0:
		out[CostTag] = "json:" + strings.Join(c.JSON, "+")
	}
	if c.Reserve != nil {
		out[CostReserveTag] = strconv.Itoa(int(*c.Reserve))
	}
	if c.IfMissing != "" {
		out[CostIfMissingTag] = c.IfMissing
	}
	return out
}

// Validate checks a customer quota field.
func (q *CustomerQuota) Validate() error {
	if q.Limit < 0 || q.Limit > MaxCost {
		return Invalid("customerQuota.limit", "customerQuota.limit must be a whole number of units from 0 to %d", MaxCost)
	}
	return nil
}

// MethodCost returns the weight one request of a method on a resource
// path of (apiID, stage) costs in the plan, if the plan's api stage sets
// one in methodCosts: a fixed weight that takes the place of the plan's
// cost for that method.
func (p *UsagePlan) MethodCost(apiID, stage, path, method string) (Cost, bool) {
	for _, as := range p.ApiStages {
		if as.ApiID != apiID || as.Stage != stage {
			continue
		}
		w, ok := as.MethodCosts[path+"/"+method]
		if !ok {
			return Cost{}, false
		}
		return Cost{Weight: w, Reserve: w}, true
	}
	return Cost{}, false
}
