package plans

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"tollgate/calendar"
)

// Throttle is a token bucket: BurstLimit is its capacity in requests,
// RateLimit its refill in requests per second (fractional allowed). Inside a
// usage plan a missing field means 0, so Throttle{} refuses everything.
// Rate 0 with burst N > 0 admits N requests and then none until the limit
// changes; burst 0 with rate > 0 is invalid.
type Throttle struct {
	BurstLimit int32   `json:"burstLimit"`
	RateLimit  float64 `json:"rateLimit"`
}

// Validate checks a throttle named field ("throttle", "account.throttleSettings", ...).
func (t Throttle) Validate(field string) error {
	if t.RateLimit < 0 || math.IsNaN(t.RateLimit) || math.IsInf(t.RateLimit, 0) {
		return Invalid(field+".rateLimit", "rateLimit must be a finite number of at least 0")
	}
	if t.BurstLimit < 0 {
		return Invalid(field+".burstLimit", "burstLimit must be at least 0")
	}
	if t.BurstLimit == 0 && t.RateLimit > 0 {
		return Invalid(field+".burstLimit", "burstLimit 0 with a rateLimit above 0 would refuse every request; set a burstLimit of at least 1")
	}
	return nil
}

// Quota periods.
const (
	PeriodDay   = "DAY"
	PeriodWeek  = "WEEK"
	PeriodMonth = "MONTH"
)

// Quota is the number of requests (Limit) a key may make per UTC calendar
// period, shifted by Offset days: DAY (offset 0 only), WEEK (offset 0..6,
// 0 = Sunday), MONTH (offset 0..27, 0 = the 1st). Anchor and TimeZone,
// tollgate's own fields (the plan tags QuotaAnchorTag and QuotaTimeZoneTag
// say the same), start each period at local midnight of a day of the
// month (1..28, "last") or of the week (MON..SUN) in an IANA time zone
// (package calendar); an anchor takes the place of the offset.
type Quota struct {
	Limit    int32  `json:"limit"`
	Offset   int32  `json:"offset"`
	Period   string `json:"period"`
	Anchor   string `json:"anchor,omitempty"`
	TimeZone string `json:"timeZone,omitempty"`
}

// Calendar returns q's period rule. Fields that do not parse (Validate
// refuses them) count as none and UTC.
func (q Quota) Calendar() calendar.Calendar {
	c := calendar.Calendar{Period: q.Period, Offset: int(q.Offset)}
	c.Anchor, _ = calendar.ParseAnchor(q.Period, q.Anchor)
	if loc, err := calendar.LoadZone(q.TimeZone); err == nil && loc != time.UTC {
		c.Zone = loc
	}
	return c
}

// Bounds returns the period of q that holds t: [start, end), in UTC.
func (q Quota) Bounds(t time.Time) (start, end time.Time) { return q.Calendar().Bounds(t) }

// Validate checks limit (≥ 0), period, the offset range of the period,
// the anchor and the time zone.
func (q Quota) Validate() error {
	if err := q.validate(); err != nil {
		return err
	}
	return q.validateCalendar("quota.anchor", "quota.timeZone")
}

// validateCalendar checks q's anchor against its period and its time
// zone, naming the field each came from.
func (q Quota) validateCalendar(anchorField, zoneField string) error {
	if _, err := calendar.LoadZone(q.TimeZone); err != nil {
		return Invalid(zoneField, "%s: %v", zoneField, err)
	}
	if q.Anchor == "" {
		return nil
	}
	if _, err := calendar.ParseAnchor(q.Period, q.Anchor); err != nil {
		return Invalid(anchorField, "%s: %v", anchorField, err)
	}
	if q.Offset != 0 {
		return Invalid(anchorField, "%s: an anchored period takes no quota offset (offset is %d); set offset 0", anchorField, q.Offset)
	}
	return nil
}

func (q Quota) validate() error {
	if q.Limit < 0 {
		return Invalid("quota.limit", "quota limit must be at least 0")
	}
	max := int32(0)
	switch q.Period {
	case PeriodDay:
	case PeriodWeek:
		max = 6
	case PeriodMonth:
		max = 27
	case "":
		return Invalid("quota.period", "quota period is required: DAY, WEEK or MONTH")
	default:
		return Invalid("quota.period", "quota period %q must be DAY, WEEK or MONTH", q.Period)
	}
	if q.Offset < 0 || q.Offset > max {
		return Invalid("quota.offset", "quota offset for period %s must be between 0 and %d", q.Period, max)
	}
	return nil
}

// ApiStage is one (API, stage) a usage plan covers, with optional per-method
// throttles keyed by raw path and method ("/pets/GET"; the root is "//GET").
type ApiStage struct {
	ApiID    string              `json:"apiId"`
	Stage    string              `json:"stage"`
	Throttle map[string]Throttle `json:"throttle,omitempty"`
	// MethodCosts are per-method weights, keyed as Throttle: a request of
	// such a method costs that many units in the plan, in place of the
	// plan's cost (tollgate's own field, docs/cost.md).
	MethodCosts map[string]int32 `json:"methodCosts,omitempty"`
}

// UsagePlan is a set of limits applied per API key. A nil Throttle or Quota
// means no limit in that dimension. JSON shape of AWS's UsagePlan.
type UsagePlan struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	ApiStages   []ApiStage        `json:"apiStages"`
	Throttle    *Throttle         `json:"throttle,omitempty"`
	Quota       *Quota            `json:"quota,omitempty"`
	Tags        map[string]string `json:"tags,omitempty"`
	// Alerts are the shares of the quota, in percent, whose crossing
	// sends a quota.threshold webhook once per key and period (tollgate's
	// own field; the tag AlertsTag says the same, the field wins).
	Alerts []int32 `json:"alerts,omitempty"`
	// CostSettings is what one request costs (tollgate's own field
	// "cost"; the cost tags say the same, a field that is set wins).
	CostSettings *CostSettings `json:"cost,omitempty"`
	// CustomerBudget is the customer quota (tollgate's own field
	// "customerQuota"; CustomerQuotaTag says the same, the field wins).
	CustomerBudget *CustomerQuota `json:"customerQuota,omitempty"`
}

// Validate checks name, description, throttle, quota, api stages and their
// per-method throttle keys (raw or "~1"-escaped). It does not change p
// (Normalize does). Whether the APIs and stages exist is checked by the
// store.
func (p *UsagePlan) Validate() error {
	if err := ValidateName("name", p.Name); err != nil {
		return err
	}
	if err := ValidateDescription("description", p.Description); err != nil {
		return err
	}
	if p.Throttle != nil {
		if err := p.Throttle.Validate("throttle"); err != nil {
			return err
		}
	}
	if p.Quota != nil {
		if err := p.Quota.Validate(); err != nil {
			return err
		}
	}
	if err := p.validateCalendarTags(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, as := range p.ApiStages {
		if as.ApiID == "" || as.Stage == "" {
			return Invalid("apiStages", "each api stage needs apiId and stage")
		}
		if seen[as.ApiID+":"+as.Stage] {
			return Invalid("apiStages", "api stage %s:%s is listed twice", as.ApiID, as.Stage)
		}
		seen[as.ApiID+":"+as.Stage] = true
		for key, t := range as.Throttle {
			if _, _, err := ParseMethodThrottleKey(key); err != nil {
				return err
			}
			if err := t.Validate("apiStages.throttle." + key); err != nil {
				return err
			}
		}
	}
	if err := ValidateTags(p.Tags); err != nil {
		return err
	}
	if err := validateModeTag(p.Tags); err != nil {
		return err
	}
	if err := validateAlerts("alerts", p.Alerts); err != nil {
		return err
	}
	if v, ok := p.Tags[AlertsTag]; ok {
		if _, err := ParseAlerts(v); err != nil {
			return Invalid("tags."+AlertsTag, "tag %s=%q: %v", AlertsTag, v, err)
		}
	}
	if err := validateQuotaCountsTag(p.Tags); err != nil {
		return err
	}
	return p.validateCost()
}

// ModeTag is the usage plan tag that puts a plan in shadow mode:
// "tollgate:mode=shadow" (or "enforce", the default). A shadow plan's
// throttles and quota are decided and counted in their own counters, a
// would-be refusal is logged and counted, and the request goes on
// (docs/rules.md). A tag, so the AWS CLI can set it (tag-resource).
const ModeTag = "tollgate:mode"

// Values of ModeTag.
const (
	ModeTagShadow  = "shadow"
	ModeTagEnforce = "enforce"
)

func validateModeTag(tags map[string]string) error {
	return validateTagValue(tags, ModeTag, ModeTagShadow, ModeTagEnforce)
}

// validateTagValue checks that tag, when set, is a or b.
func validateTagValue(tags map[string]string, tag, a, b string) error {
	v, ok := tags[tag]
	if !ok || v == a || v == b {
		return nil
	}
	return Invalid("tags."+tag, "tag %s=%q must be %s or %s", tag, v, a, b)
}

// QuotaAnchorTag and QuotaTimeZoneTag are the usage plan tags of an
// anchored quota period (docs/usage.md, "Anchored periods"): the day each
// period starts on, 1..28 or "last" for MONTH, MON..SUN for WEEK, and the
// IANA zone whose local midnight starts it (default UTC). They say what
// the fields Quota.Anchor and Quota.TimeZone say, for the AWS CLI
// (tag-resource); a field that is set wins over its tag.
const (
	QuotaAnchorTag   = "tollgate:quota-anchor"
	QuotaTimeZoneTag = "tollgate:quota-timezone"
)

// QuotaRule returns the plan's quota with its anchor and time zone from
// the tags where the fields are empty: the rule every period of the plan
// is decided by (nil without a quota).
func (p *UsagePlan) QuotaRule() *Quota {
	if p.Quota == nil {
		return nil
	}
	q := *p.Quota
	if q.Anchor == "" {
		q.Anchor = p.Tags[QuotaAnchorTag]
	}
	if q.TimeZone == "" {
		q.TimeZone = p.Tags[QuotaTimeZoneTag]
	}
	return &q
}

// validateCalendarTags checks the anchor and time zone tags whatever the
// fields say: the zone always, the anchor against the quota's period (its
// form alone when the plan has no quota).
func (p *UsagePlan) validateCalendarTags() error {
	anchor, zone := p.Tags[QuotaAnchorTag], p.Tags[QuotaTimeZoneTag]
	if _, ok := p.Tags[QuotaTimeZoneTag]; ok {
		if !validZone(zone) {
			return Invalid("tags."+QuotaTimeZoneTag, "tag %s=%q is not an IANA time zone name such as Asia/Tokyo", QuotaTimeZoneTag, zone)
		}
	}
	if _, ok := p.Tags[QuotaAnchorTag]; !ok {
		return nil
	}
	if p.Quota == nil {
		if !anyAnchor(anchor) {
			return Invalid("tags."+QuotaAnchorTag, "tag %s=%q must be a day 1..28 or last (MONTH), or MON..SUN (WEEK)", QuotaAnchorTag, anchor)
		}
		return nil
	}
	// checked as if it alone said the anchor, even where the field wins
	// today: a PATCH clearing the field must not find a bad tag
	q := *p.Quota
	q.Anchor = anchor
	if anchor == "" {
		return Invalid("tags."+QuotaAnchorTag, "tag %s is empty: a day 1..28 or last (MONTH), or MON..SUN (WEEK)", QuotaAnchorTag)
	}
	return q.validateCalendar("tags."+QuotaAnchorTag, "tags."+QuotaTimeZoneTag)
}

// AlertsTag is the usage plan tag of quota alerts (docs/usage.md,
// "Alerts"): a comma list of percentages of the quota, such as
// "80,90,100"; the field UsagePlan.Alerts says the same.
const AlertsTag = "tollgate:alerts"

// maxAlert is the highest alert percentage: a settled cost may take a
// quota past its limit, never past twice it.
const maxAlert = 200

// ParseAlerts reads a comma list of alert percentages (1..200, each
// once), sorted.
func ParseAlerts(s string) ([]int32, error) {
	var out []int32
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(f), "%"))
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a whole percentage such as 80", f)
		}
		out = append(out, int32(n))
	}
	if err := validateAlerts("", out); err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}

// validateAlerts checks alert percentages: 1..maxAlert, each once. field
// "" gives a plain error (ParseAlerts), else one naming field.
func validateAlerts(field string, a []int32) error {
	var err error
	for i, n := range a {
		switch {
		case n < 1 || n > maxAlert:
			err = fmt.Errorf("alert %d%% must be between 1 and %d", n, maxAlert)
		case slices.Contains(a[:i], n):
			err = fmt.Errorf("alert %d%% is listed twice", n)
		}
		if err != nil {
			break
		}
	}
	if err == nil || field == "" {
		return err
	}
	return Invalid(field, "%s: %v", field, err)
}

// AlertThresholds returns the plan's alert percentages, sorted: the field,
// else the tag (nil for none).
func (p *UsagePlan) AlertThresholds() []int32 {
	if len(p.Alerts) > 0 {
		a := slices.Clone(p.Alerts)
		slices.Sort(a)
		return a
	}
	a, _ := ParseAlerts(p.Tags[AlertsTag])
	return a
}

// QuotaCountsTag is the usage plan tag choosing which requests its quota
// and usage count: "tollgate:quota-counts=all" (the default, as Amazon
// API Gateway) or "non-5xx": a request the upstream answers 5xx, or whose
// integration fails or times out (502, 504 from the gateway), is given
// back to the quota and not counted in usage (docs/usage.md). A tag, so
// the AWS CLI can set it (tag-resource).
const QuotaCountsTag = "tollgate:quota-counts"

// Values of QuotaCountsTag.
const (
	QuotaCountsAll    = "all"
	QuotaCountsNon5xx = "non-5xx"
)

func validateQuotaCountsTag(tags map[string]string) error {
	return validateTagValue(tags, QuotaCountsTag, QuotaCountsAll, QuotaCountsNon5xx)
}

// CountsNon5xx reports whether the plan is tagged
// tollgate:quota-counts=non-5xx.
func (p *UsagePlan) CountsNon5xx() bool { return p.Tags[QuotaCountsTag] == QuotaCountsNon5xx }

// Shadow reports whether the plan is tagged tollgate:mode=shadow.
func (p *UsagePlan) Shadow() bool { return p.Tags[ModeTag] == ModeTagShadow }

// Normalize puts p in its stored form: apiStages never nil, and each
// per-method throttle keyed by its raw "<resource path>/<METHOD>" ("~1"
// escapes undone, as ParseMethodThrottleKey reads them; an empty map
// dropped). A key that does not parse is kept as it is, for Validate to
// refuse. Call it before Validate where the result is stored or compared.
func (p *UsagePlan) Normalize() {
	if p.ApiStages == nil {
		p.ApiStages = []ApiStage{}
	}
	if c := p.CostSettings; c != nil && c.Weight == nil && c.Header == "" && c.JSON == nil && c.Reserve == nil && c.IfMissing == "" {
		p.CostSettings = nil
	}
	for i := range p.ApiStages {
		as := &p.ApiStages[i]
		as.Throttle = normalizeMethodKeys(as.Throttle)
		as.MethodCosts = normalizeMethodKeys(as.MethodCosts)
	}
}

// normalizeMethodKeys keys m by raw "<resource path>/<METHOD>" (nil when
// empty); a key that does not parse is kept for Validate to refuse.
func normalizeMethodKeys[V any](m map[string]V) map[string]V {
	if len(m) == 0 {
		return nil
	}
	norm := make(map[string]V, len(m))
	for key, v := range m {
		if path, method, err := ParseMethodThrottleKey(key); err == nil {
			key = path + "/" + method
		}
		norm[key] = v
	}
	return norm
}

// ParseMethodThrottleKey splits a per-method throttle key of a usage plan
// api stage, raw ("/pets/GET", root "//GET") or "~1"-escaped
// ("~1pets/GET"), into the resource path and method.
func ParseMethodThrottleKey(key string) (path, method string, err error) {
	key = UnescapeResourcePath(key)
	i := strings.LastIndexByte(key, '/')
	if i < 1 || !strings.HasPrefix(key, "/") || !ValidHTTPMethod(key[i+1:]) {
		return "", "", Invalid("apiStages.throttle", "method throttle key %q must be <resource path>/<METHOD>, e.g. /pets/GET", key)
	}
	path = key[:i]
	if path == "/" || path == "" {
		path = "/"
	} else if strings.HasSuffix(path, "/") {
		return "", "", Invalid("apiStages.throttle", "method throttle key %q must be <resource path>/<METHOD>, e.g. /pets/GET", key)
	}
	return path, key[i+1:], nil
}

// MethodThrottle returns the plan's per-method throttle for a method on a
// resource path of (apiID, stage), if the plan sets one.
func (p *UsagePlan) MethodThrottle(apiID, stage, path, method string) (Throttle, bool) {
	for _, as := range p.ApiStages {
		if as.ApiID != apiID || as.Stage != stage {
			continue
		}
		if t, ok := as.Throttle[path+"/"+method]; ok {
			return t, true
		}
		for key, t := range as.Throttle { // a plan that was not normalised
			if kp, km, err := ParseMethodThrottleKey(key); err == nil && kp == path && km == method {
				return t, true
			}
		}
		return Throttle{}, false
	}
	return Throttle{}, false
}

// CheckMethodThrottlePaths refuses a per-method throttle of as that was
// added or changed since before (its throttles as stored; nil for a new
// plan or api stage) and names no method of deployed, the stage's
// deployment (see DeployedMethods): a typo would silently set no limit.
// Throttles left as they were are not checked, so one whose method a later
// deployment dropped blocks no other change. Errors: KindInvalid naming
// the throttle's patch path ("/apiStages/a1b2c3d4e5:prod/throttle/~1nope/GET").
func (as *ApiStage) CheckMethodThrottlePaths(before map[string]Throttle, deployed map[string]bool) error {
	return checkMethodKeys(as, "throttle", as.Throttle, before, deployed)
}

// CheckMethodCostPaths is CheckMethodThrottlePaths for the method costs
// of as (before: its method costs as stored).
func (as *ApiStage) CheckMethodCostPaths(before map[string]int32, deployed map[string]bool) error {
	return checkMethodKeys(as, "methodCosts", as.MethodCosts, before, deployed)
}

// checkMethodKeys refuses an entry of m (as's per-method map named field)
// added or changed since before that names no method of deployed.
func checkMethodKeys[V comparable](as *ApiStage, field string, m, before map[string]V, deployed map[string]bool) error {
	for key, v := range m {
		if old, ok := before[key]; ok && old == v {
			continue
		}
		if !deployed[key] {
			i := max(strings.LastIndexByte(key, '/'), 0)
			path, method := key[:i], key[i+1:]
			return Invalid(fmt.Sprintf("/apiStages/%s:%s/%s/%s/%s", as.ApiID, as.Stage, field, EscapeResourcePath(path), method),
				"per-method %s %s of api stage %s:%s names no method the stage serves (no %s %s)", field, key, as.ApiID, as.Stage, method, path)
		}
	}
	return nil
}
