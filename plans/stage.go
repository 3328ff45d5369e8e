package plans

import (
	"regexp"
	"strings"
)

// Cache TTL bounds and default, in seconds (AWS: 0..3600, default 300; 0
// disables caching).
const (
	MaxCacheTTLSeconds     = 3600
	DefaultCacheTTLSeconds = 300
)

// Values of MethodSetting.UnauthorizedCacheControlHeaderStrategy.
const (
	FailWith403                  = "FAIL_WITH_403"
	SucceedWithResponseHeader    = "SUCCEED_WITH_RESPONSE_HEADER"
	SucceedWithoutResponseHeader = "SUCCEED_WITHOUT_RESPONSE_HEADER"
)

// AllMethods is the methodSettings key of the stage default entry.
const AllMethods = "*/*"

// Inherit is the value of a throttle field that inherits from the next level
// (method → */* → account).
const Inherit = -1

// Cache cluster sizes AWS accepts, in GB.
// ValidateCacheClusterSize checks a stage's cacheClusterSize: "" (the
// default) or one of AWS's sizes in GB. Errors: KindInvalid naming
// "cacheClusterSize".
func ValidateCacheClusterSize(size string) error {
	if size != "" && !cacheClusterSizes[size] {
		return Invalid("cacheClusterSize", "cacheClusterSize %q must be one of 0.5, 1.6, 6.1, 13.5, 28.4, 58.2, 118, 237", size)
	}
	return nil
}

var cacheClusterSizes = map[string]bool{
	"0.5": true, "1.6": true, "6.1": true, "13.5": true, "28.4": true,
	"58.2": true, "118": true, "237": true,
}

// Stage is a named deployment of an API with its own settings. JSON shape of
// AWS's Stage. MethodSettings keys are "*/*" or "<~1-escaped resource
// path>/<METHOD>" (see MethodSettingKey).
type Stage struct {
	StageName           string                   `json:"stageName"`
	DeploymentID        string                   `json:"deploymentId"`
	Description         string                   `json:"description,omitempty"`
	CacheClusterEnabled bool                     `json:"cacheClusterEnabled"`
	CacheClusterSize    string                   `json:"cacheClusterSize,omitempty"`
	CacheClusterStatus  string                   `json:"cacheClusterStatus"`
	MethodSettings      map[string]MethodSetting `json:"methodSettings"`
	Variables           map[string]string        `json:"variables,omitempty"`
	Tags                map[string]string        `json:"tags,omitempty"`
	TracingEnabled      bool                     `json:"tracingEnabled"`
	CreatedDate         Epoch                    `json:"createdDate"`
	LastUpdatedDate     Epoch                    `json:"lastUpdatedDate"`
}

// MethodSetting is one entry of a stage's methodSettings. Throttle fields of
// -1 (Inherit) take the next level's value. JSON shape of AWS's
// MethodSetting; ThrottlingRateLimit is in requests per second,
// ThrottlingBurstLimit in requests, CacheTTLInSeconds in seconds.
type MethodSetting struct {
	MetricsEnabled                         bool    `json:"metricsEnabled"`
	LoggingLevel                           string  `json:"loggingLevel"`
	DataTraceEnabled                       bool    `json:"dataTraceEnabled"`
	ThrottlingBurstLimit                   int32   `json:"throttlingBurstLimit"`
	ThrottlingRateLimit                    float64 `json:"throttlingRateLimit"`
	CachingEnabled                         bool    `json:"cachingEnabled"`
	CacheTTLInSeconds                      int32   `json:"cacheTtlInSeconds"`
	CacheDataEncrypted                     bool    `json:"cacheDataEncrypted"`
	RequireAuthorizationForCacheControl    bool    `json:"requireAuthorizationForCacheControl"`
	UnauthorizedCacheControlHeaderStrategy string  `json:"unauthorizedCacheControlHeaderStrategy"`
}

// DefaultMethodSetting is the entry a new per-method setting starts from
// when the stage has no "*/*" entry (AWS defaults): caching off, TTL 300,
// authorization required for Cache-Control, SUCCEED_WITH_RESPONSE_HEADER,
// throttles inheriting.
func DefaultMethodSetting() MethodSetting {
	return MethodSetting{
		LoggingLevel:                           "OFF",
		ThrottlingBurstLimit:                   Inherit,
		ThrottlingRateLimit:                    Inherit,
		CacheTTLInSeconds:                      DefaultCacheTTLSeconds,
		RequireAuthorizationForCacheControl:    true,
		UnauthorizedCacheControlHeaderStrategy: SucceedWithResponseHeader,
	}
}

// NewMethodSetting returns the entry a new key of s.MethodSettings starts
// as: a copy of the "*/*" entry's caching fields (or AWS defaults), with
// throttle fields at -1.
func (s *Stage) NewMethodSetting() MethodSetting {
	ms := DefaultMethodSetting()
	if all, ok := s.MethodSettings[AllMethods]; ok {
		ms.CachingEnabled = all.CachingEnabled
		ms.CacheTTLInSeconds = all.CacheTTLInSeconds
		ms.CacheDataEncrypted = all.CacheDataEncrypted
		ms.RequireAuthorizationForCacheControl = all.RequireAuthorizationForCacheControl
		ms.UnauthorizedCacheControlHeaderStrategy = all.UnauthorizedCacheControlHeaderStrategy
	}
	return ms
}

// EscapeResourcePath turns a resource path into its methodSettings form:
// the leading "/" dropped and every other "/" written "~1"
// ("/pets/{petId}" → "~1pets~1{petId}"), as AWS.
func EscapeResourcePath(path string) string {
	return strings.ReplaceAll(path, "/", "~1")
}

// UnescapeResourcePath is the inverse of EscapeResourcePath ("~1" → "/").
func UnescapeResourcePath(escaped string) string {
	return strings.ReplaceAll(escaped, "~1", "/")
}

// MethodSettingKey returns the methodSettings key of a method on a resource
// path: "~1pets~1{petId}/GET".
func MethodSettingKey(path, method string) string {
	return EscapeResourcePath(path) + "/" + method
}

var stageNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// ValidateStageName requires [A-Za-z0-9_-]{1,128}.
func ValidateStageName(name string) error {
	if !stageNamePattern.MatchString(name) {
		return Invalid("stageName", "stageName %q must match [A-Za-z0-9_-]{1,128}", name)
	}
	return nil
}

// Validate checks the stage's name, description, cache settings, method
// settings, variables and tags. Method setting keys must be "*/*" or
// "<escaped path>/<METHOD>"; whether the resource exists is not checked here.
func (s *Stage) Validate() error {
	if err := ValidateStageName(s.StageName); err != nil {
		return err
	}
	if err := ValidateDescription("description", s.Description); err != nil {
		return err
	}
	if err := ValidateCacheClusterSize(s.CacheClusterSize); err != nil {
		return err
	}
	for key, ms := range s.MethodSettings {
		if err := validateMethodSettingKey(key); err != nil {
			return err
		}
		if err := ms.Validate(key); err != nil {
			return err
		}
		if err := s.validateResolvedThrottle(key, ms); err != nil {
			return err
		}
	}
	if err := ValidateStageVariables(s.Variables); err != nil {
		return err
	}
	if err := ValidateTags(s.Tags); err != nil {
		return err
	}
	return validateStaleTags(s.Tags)
}

// Stage tags of stale answers (docs/behaviour.md, "Response cache"): how
// many seconds past its TTL the stage cache may still serve an entry, as
// the Cache-Control extensions of the same names (RFC 5861). Tags, so the
// AWS CLI can set them (tag-resource on the stage's ARN).
const (
	// CacheStaleIfErrorTag: while the upstream answers 5xx, times out or
	// cannot be reached.
	CacheStaleIfErrorTag = "tollgate:cache-stale-if-error"
	// CacheStaleWhileRevalidateTag: at once, while one call per entry
	// per node refreshes it in the background.
	CacheStaleWhileRevalidateTag = "tollgate:cache-stale-while-revalidate"
	// MaxCacheStaleSeconds bounds each: a day.
	MaxCacheStaleSeconds = 86400
)

// staleTags are the stage tags whose value is a number of seconds.
var staleTags = []string{CacheStaleIfErrorTag, CacheStaleWhileRevalidateTag}

// validateStaleTags checks that each stale tag, when set, is a whole
// number of seconds from 0 to MaxCacheStaleSeconds. Errors: KindInvalid
// naming "tags.<tag>".
func validateStaleTags(tags map[string]string) error {
	for _, tag := range staleTags {
		if v, ok := tags[tag]; ok {
			if _, ok := staleSeconds(v); !ok {
				return Invalid("tags."+tag, "tag %s=%q must be a whole number of seconds from 0 to %d", tag, v, MaxCacheStaleSeconds)
			}
		}
	}
	return nil
}

// CacheStaleSeconds returns the value of stale tag (CacheStaleIfErrorTag,
// CacheStaleWhileRevalidateTag)
// in seconds; 0 when it is unset or invalid.
func (s *Stage) CacheStaleSeconds(tag string) int {
	n, _ := staleSeconds(s.Tags[tag])
	return n
}

// staleSeconds parses 1 to 5 digits up to MaxCacheStaleSeconds.
func staleSeconds(v string) (int, bool) {
	if v == "" || len(v) > 5 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, false
		}
		n = n*10 + int(v[i]-'0')
	}
	if n > MaxCacheStaleSeconds {
		return 0, false
	}
	return n, true
}

// MaxStageVariableValueLen bounds a stage variable's value, in characters
// (AWS's quota).
const MaxStageVariableValueLen = 512

var stageVariableValue = regexp.MustCompile(`^[A-Za-z0-9\-._~:/?#&=,]{1,512}$`)

// ValidateStageVariables checks AWS's rules for stage variables: names
// [A-Za-z0-9_]{1,64}, values [A-Za-z0-9-._~:/?#&=,]{1,512}. Errors:
// KindInvalid naming "variables.<name>". Source: AWS API Gateway API
// reference, CreateStage "variables", and its quota of 512 characters.
func ValidateStageVariables(vars map[string]string) error {
	for k, v := range vars {
		if !stageVariableName.MatchString(k) {
			return Invalid("variables", "stage variable name %q must match [A-Za-z0-9_]{1,64}", k)
		}
		if !stageVariableValue.MatchString(v) {
			return Invalid("variables."+k, "stage variable %s: the value must be 1 to %d characters of A-Z a-z 0-9 - . _ ~ : / ? # & = ,", k, MaxStageVariableValueLen)
		}
	}
	return nil
}

// validateResolvedThrottle refuses an entry whose throttle resolves (entry,
// then "*/*", then account) to burst 0 with a rate above 0, e.g. burst 0
// with the rate inherited: such a bucket would refuse every request while
// its Retry-After promised a token. The account's rate is taken as above 0,
// so only an explicit rate 0 makes a burst of 0 valid.
func (s *Stage) validateResolvedThrottle(key string, ms MethodSetting) error {
	rate, burst := ms.ThrottlingRateLimit, ms.ThrottlingBurstLimit
	if all, ok := s.MethodSettings[AllMethods]; ok && key != AllMethods {
		if rate == Inherit {
			rate = all.ThrottlingRateLimit
		}
		if burst == Inherit {
			burst = all.ThrottlingBurstLimit
		}
	}
	if burst == 0 && rate != 0 {
		return Invalid("methodSettings."+key+".throttlingBurstLimit", "throttling burst limit resolves to 0 while the rate limit is above 0 (inherited or set), which would refuse every request; set a burst of at least 1 or a rate of 0")
	}
	return nil
}

var stageVariableName = regexp.MustCompile(`^[A-Za-z0-9_]{1,64}$`)

func validateMethodSettingKey(key string) error {
	if key == AllMethods {
		return nil
	}
	i := strings.LastIndexByte(key, '/')
	if i < 0 || !ValidHTTPMethod(key[i+1:]) || !strings.HasPrefix(key, "~1") && key[:i] != "" {
		return Invalid("methodSettings", "method setting key %q must be */* or ~1<path>/<METHOD>", key)
	}
	return nil
}

// Validate checks one method setting entry; key names it in messages.
func (ms *MethodSetting) Validate(key string) error {
	field := "methodSettings." + key
	if ms.ThrottlingRateLimit < 0 && ms.ThrottlingRateLimit != Inherit {
		return Invalid(field+".throttlingRateLimit", "throttling rate limit must be at least 0 (or -1 to inherit)")
	}
	if ms.ThrottlingBurstLimit < 0 && ms.ThrottlingBurstLimit != Inherit {
		return Invalid(field+".throttlingBurstLimit", "throttling burst limit must be at least 0 (or -1 to inherit)")
	}
	if ms.ThrottlingBurstLimit == 0 && ms.ThrottlingRateLimit > 0 {
		return Invalid(field+".throttlingBurstLimit", "throttling burst limit 0 with a rate limit above 0 would refuse every request; set a burst of at least 1")
	}
	if ms.CacheTTLInSeconds < 0 || ms.CacheTTLInSeconds > MaxCacheTTLSeconds {
		return Invalid(field+".cacheTtlInSeconds", "cacheTtlInSeconds must be between 0 and %d", MaxCacheTTLSeconds)
	}
	switch ms.UnauthorizedCacheControlHeaderStrategy {
	case FailWith403, SucceedWithResponseHeader, SucceedWithoutResponseHeader:
	default:
		return Invalid(field+".unauthorizedCacheControlHeaderStrategy", "unauthorizedCacheControlHeaderStrategy must be FAIL_WITH_403, SUCCEED_WITH_RESPONSE_HEADER or SUCCEED_WITHOUT_RESPONSE_HEADER")
	}
	switch ms.LoggingLevel {
	case "OFF", "ERROR", "INFO":
	default:
		return Invalid(field+".loggingLevel", "loggingLevel must be OFF, ERROR or INFO")
	}
	return nil
}

// StageThrottle resolves the stage method bucket for a method on a resource
// path, field by field: the method's entry, then "*/*", then account. ok is
// false when neither the method's entry nor "*/*" sets a throttle field: the
// method then has no stage bucket (the account bucket still applies).
func (s *Stage) StageThrottle(path, method string, account Throttle) (t Throttle, ok bool) {
	rate, burst := float64(Inherit), int32(Inherit)
	for _, key := range []string{MethodSettingKey(path, method), AllMethods} {
		ms, found := s.MethodSettings[key]
		if !found {
			continue
		}
		if rate == Inherit && ms.ThrottlingRateLimit != Inherit {
			rate = ms.ThrottlingRateLimit
		}
		if burst == Inherit && ms.ThrottlingBurstLimit != Inherit {
			burst = ms.ThrottlingBurstLimit
		}
	}
	if rate == Inherit && burst == Inherit {
		return Throttle{}, false
	}
	if rate == Inherit {
		rate = account.RateLimit
	}
	if burst == Inherit {
		burst = account.BurstLimit
	}
	return Throttle{RateLimit: rate, BurstLimit: burst}, true
}

// CacheSetting returns the method setting that decides caching for a method
// on a resource path: its own entry, else "*/*" for GET only (as AWS), else
// caching off.
func (s *Stage) CacheSetting(path, method string) MethodSetting {
	if ms, ok := s.MethodSettings[MethodSettingKey(path, method)]; ok {
		return ms
	}
	if ms, ok := s.MethodSettings[AllMethods]; ok && method == "GET" {
		return ms
	}
	ms := DefaultMethodSetting()
	return ms
}

// DeployedMethods returns the set of "<path>/<METHOD>" of every method of
// rs ("/pets/GET"; the root's "//GET"), as a deployment serves them.
func DeployedMethods(rs []Resource) map[string]bool {
	out := map[string]bool{}
	for _, r := range rs {
		for verb := range r.ResourceMethods {
			out[r.Path+"/"+verb] = true
		}
	}
	return out
}

// CheckMethodSettingPaths refuses a method setting that was added or
// changed since before and names no method of deployed (see
// DeployedMethods), e.g. "~1nope/GET": a typo would silently set nothing.
// Entries left as they were are not checked, so a setting whose method a
// later deployment dropped stays until it is removed and blocks no other
// change. Errors: KindInvalid naming the setting's patch path
// ("/~1nope/GET").
func (s *Stage) CheckMethodSettingPaths(before map[string]MethodSetting, deployed map[string]bool) error {
	for key, ms := range s.MethodSettings {
		if key == AllMethods {
			continue
		}
		if old, ok := before[key]; ok && old == ms {
			continue
		}
		i := strings.LastIndexByte(key, '/')
		if i < 0 || !deployed[UnescapeResourcePath(key[:i])+"/"+key[i+1:]] {
			return Invalid("/"+key, "method setting path /%s names no method of deployment %s (no %s %s)",
				key, s.DeploymentID, key[i+1:], UnescapeResourcePath(key[:max(i, 0)]))
		}
	}
	return nil
}
