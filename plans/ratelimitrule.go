package plans

import (
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Algorithms of a RateLimitRule (docs/rules.md).
const (
	// TokenBucket: RateLimit tokens per second refill a bucket of
	// BurstLimit tokens; one token per request (as a usage plan throttle).
	TokenBucket = "TOKEN_BUCKET"
	// SlidingWindow: at most Limit requests per WindowSeconds, estimated
	// from two fixed windows as prev × (1 − elapsed/window) + curr.
	SlidingWindow = "SLIDING_WINDOW"
	// FixedWindow: at most Limit requests per window of WindowSeconds,
	// windows aligned to Redis time (multiples of WindowSeconds since the
	// Unix epoch).
	FixedWindow = "FIXED_WINDOW"
	// Concurrency: at most Limit requests in flight at once.
	Concurrency = "CONCURRENCY"
	// LeakyBucket: requests leave at RateLimit per second; one that
	// arrives early waits for its turn, up to MaxDelayMillis and while at
	// most BurstLimit wait, else it is refused.
	LeakyBucket = "LEAKY_BUCKET"
)

// Modes of a RateLimitRule.
const (
	ModeEnforce = "ENFORCE" // a refusal is answered 429
	ModeShadow  = "SHADOW"  // a would-be refusal is logged and counted; the request goes on
)

// AnyRoute is the resourcePath and httpMethod of a rule that applies to
// every resource, or every method.
const AnyRoute = "*"

// Bounds of rule fields.
const (
	MaxRuleNameLen    = 128             // characters of a rule name
	MaxKeyBy          = 8               // entries of keyBy
	MaxKeyByNameLen   = 256             // characters of a header or query name in keyBy
	MaxWindowSeconds  = 366 * 24 * 3600 // a leap year
	MaxDelayMillis    = 30000           // of a LEAKY_BUCKET rule
	MaxRateLimitRules = 100             // rules per stage
)

// Kinds of KeyPart: what a keyBy entry reads from a request.
const (
	KeyIP     = "ip"     // the client address
	KeyAPIKey = "apiKey" // the API key's id
	KeyHeader = "header" // a request header, by name
	KeyQuery  = "query"  // a query string parameter, by name
)

const (
	keyByHeaderPrefix = KeyHeader + ":"
	keyByQueryPrefix  = KeyQuery + ":"
)

const ruleAlgorithms = "TOKEN_BUCKET, SLIDING_WINDOW, FIXED_WINDOW, CONCURRENCY or LEAKY_BUCKET"

// RateLimitRule is a tollgate extension of the admin API: a limit on the
// requests of one stage that match ResourcePath and HTTPMethod, counted
// separately per distinct combination of the KeyBy values of a request.
// Which of RateLimit, BurstLimit, Limit, WindowSeconds and MaxDelayMillis
// a rule has depends on its Algorithm (ruleParams); the others are nil.
// JSON: {id, name, resourcePath, httpMethod, keyBy, algorithm, rateLimit,
// burstLimit, limit, windowSeconds, maxDelayMillis, mode}. RateLimit is in
// requests per second, WindowSeconds in seconds, MaxDelayMillis in
// milliseconds. docs/rules.md describes each algorithm.
type RateLimitRule struct {
	ID           string `json:"id,omitempty"`
	Name         string `json:"name"`
	ResourcePath string `json:"resourcePath"`
	HTTPMethod   string `json:"httpMethod"`
	// KeyBy lists what the rule counts by: "ip" (the client address),
	// "apiKey" (the API key's id; "" on a method that requires none),
	// "header:<name>" (stored lower case) and "query:<name>". A request
	// without a listed value counts under "". Empty: one count for every
	// caller.
	KeyBy          []string `json:"keyBy"`
	Algorithm      string   `json:"algorithm"`
	RateLimit      *float64 `json:"rateLimit,omitempty"`
	BurstLimit     *int32   `json:"burstLimit,omitempty"`
	Limit          *int32   `json:"limit,omitempty"`
	WindowSeconds  *int32   `json:"windowSeconds,omitempty"`
	MaxDelayMillis *int32   `json:"maxDelayMillis,omitempty"`
	Mode           string   `json:"mode"`
}

// ruleParam names one algorithm parameter: its JSON name and how to reach
// it in a rule.
type ruleParam struct {
	name  string
	isSet func(*RateLimitRule) bool
	clear func(*RateLimitRule)
}

var (
	paramRate  = ruleParam{"rateLimit", func(r *RateLimitRule) bool { return r.RateLimit != nil }, func(r *RateLimitRule) { r.RateLimit = nil }}
	paramBurst = ruleParam{"burstLimit", func(r *RateLimitRule) bool { return r.BurstLimit != nil }, func(r *RateLimitRule) { r.BurstLimit = nil }}
	paramLimit = ruleParam{"limit", func(r *RateLimitRule) bool { return r.Limit != nil }, func(r *RateLimitRule) { r.Limit = nil }}
	paramWin   = ruleParam{"windowSeconds", func(r *RateLimitRule) bool { return r.WindowSeconds != nil }, func(r *RateLimitRule) { r.WindowSeconds = nil }}
	paramDelay = ruleParam{"maxDelayMillis", func(r *RateLimitRule) bool { return r.MaxDelayMillis != nil }, func(r *RateLimitRule) { r.MaxDelayMillis = nil }}
	allParams  = []ruleParam{paramRate, paramBurst, paramLimit, paramWin, paramDelay}
)

// ruleParams are the parameters each algorithm requires; every other
// parameter must be absent.
var ruleParams = map[string][]ruleParam{
	TokenBucket:   {paramRate, paramBurst},
	SlidingWindow: {paramLimit, paramWin},
	FixedWindow:   {paramLimit, paramWin},
	Concurrency:   {paramLimit},
	LeakyBucket:   {paramRate, paramBurst, paramDelay},
}

// ValidAlgorithm reports whether a is one of the rule algorithms.
func ValidAlgorithm(a string) bool { _, ok := ruleParams[a]; return ok }

// UsesParam reports whether algorithm a takes the parameter named param
// ("rateLimit", "limit", ...).
func UsesParam(a, param string) bool {
	for _, p := range ruleParams[a] {
		if p.name == param {
			return true
		}
	}
	return false
}

// DropUnusedParams clears the parameters r's algorithm does not take, so
// that a change of algorithm keeps only the parameters both share
// (rateLimit and burstLimit between TOKEN_BUCKET and LEAKY_BUCKET, limit
// and windowSeconds between the windows, limit with CONCURRENCY).
func (r *RateLimitRule) DropUnusedParams() {
	for _, p := range allParams {
		if !UsesParam(r.Algorithm, p.name) {
			p.clear(r)
		}
	}
}

// SetDefaults fills what a new rule may leave out: resourcePath and
// httpMethod "*", mode ENFORCE, keyBy [].
func (r *RateLimitRule) SetDefaults() {
	if r.ResourcePath == "" {
		r.ResourcePath = AnyRoute
	}
	if r.HTTPMethod == "" {
		r.HTTPMethod = AnyRoute
	}
	if r.Mode == "" {
		r.Mode = ModeEnforce
	}
	if r.KeyBy == nil {
		r.KeyBy = []string{}
	}
}

// Validate checks every field and normalises keyBy (header names lower
// case). Whether ResourcePath names a resource of the API is the store's
// check. Errors: KindInvalid naming the field ("name", "keyBy",
// "rateLimit", ...).
func (r *RateLimitRule) Validate() error {
	if err := ValidateRuleName(r.Name); err != nil {
		return err
	}
	if err := validateRuleRoute(r.ResourcePath, r.HTTPMethod); err != nil {
		return err
	}
	keys, err := NormalizeKeyBy(r.KeyBy)
	if err != nil {
		return err
	}
	r.KeyBy = keys
	if r.Mode != ModeEnforce && r.Mode != ModeShadow {
		return Invalid("mode", "mode %q must be ENFORCE or SHADOW", r.Mode)
	}
	return r.validateParams()
}

var ruleNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9 ._:/@+-]*$`)

// ValidateRuleName requires 1..128 characters of letters, digits, space
// and . _ : / @ + -, starting with a letter or digit, and not "throttle"
// or "quota": the name labels the rule's policy in the RateLimit-Policy
// and RateLimit response fields, beside a usage plan's "throttle" and
// "quota". Errors: KindInvalid naming "name".
func ValidateRuleName(name string) error {
	if name == "" {
		return Invalid("name", "name is required")
	}
	if utf8.RuneCountInString(name) > MaxRuleNameLen || !ruleNamePattern.MatchString(name) {
		return Invalid("name", "name %q must be 1 to %d letters, digits, spaces or . _ : / @ + -, starting with a letter or digit", name, MaxRuleNameLen)
	}
	if strings.EqualFold(name, "throttle") || strings.EqualFold(name, "quota") {
		return Invalid("name", "name %q is reserved for the usage plan's own policies in the RateLimit fields", name)
	}
	return nil
}

// ruleMethods are the httpMethod values of a rule besides "*".
var ruleMethods = map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "OPTIONS": true}

func validateRuleRoute(path, method string) error {
	if path != AnyRoute && (!strings.HasPrefix(path, "/") || len(path) > 1 && strings.HasSuffix(path, "/") || len(path) > MaxNameLen) {
		return Invalid("resourcePath", "resourcePath %q must be * or the path of a resource of the API, e.g. /pets/{petId}", path)
	}
	if method != AnyRoute && !ruleMethods[method] {
		return Invalid("httpMethod", "httpMethod %q must be * or one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS", method)
	}
	return nil
}

// headerName is an HTTP field name (RFC 9110 section 5.1: a token).
var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// KeyPart is one parsed keyBy entry: its Kind (KeyIP, KeyAPIKey,
// KeyHeader, KeyQuery) and the header or query parameter Name (header
// names lower case).
type KeyPart struct {
	Kind string
	Name string
}

// ParseKeyBy parses one keyBy entry: "ip", "apiKey", "header:<name>" (a
// field name token, returned lower case) or "query:<name>" (1..256
// characters without control characters or commas). Errors: KindInvalid
// naming "keyBy".
func ParseKeyBy(s string) (KeyPart, error) {
	switch {
	case s == KeyIP:
		return KeyPart{Kind: KeyIP}, nil
	case s == KeyAPIKey:
		return KeyPart{Kind: KeyAPIKey}, nil
	case strings.HasPrefix(s, keyByHeaderPrefix):
		name := s[len(keyByHeaderPrefix):]
		if len(name) > MaxKeyByNameLen || !headerName.MatchString(name) {
			return KeyPart{}, Invalid("keyBy", "keyBy %q: the header name must be 1 to %d characters of an HTTP field name", s, MaxKeyByNameLen)
		}
		return KeyPart{Kind: KeyHeader, Name: strings.ToLower(name)}, nil
	case strings.HasPrefix(s, keyByQueryPrefix):
		name := s[len(keyByQueryPrefix):]
		if name == "" || len(name) > MaxKeyByNameLen || strings.ContainsAny(name, ",") || strings.ContainsFunc(name, isControl) {
			return KeyPart{}, Invalid("keyBy", "keyBy %q: the query parameter name must be 1 to %d characters, without commas or control characters", s, MaxKeyByNameLen)
		}
		return KeyPart{Kind: KeyQuery, Name: name}, nil
	}
	return KeyPart{}, Invalid("keyBy", "keyBy %q must be ip, apiKey, header:<name> or query:<name>", s)
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// String returns the keyBy form of p ("ip", "header:x-tenant").
func (p KeyPart) String() string {
	switch p.Kind {
	case KeyHeader:
		return keyByHeaderPrefix + p.Name
	case KeyQuery:
		return keyByQueryPrefix + p.Name
	}
	return p.Kind
}

// NormalizeKeyBy parses every entry of keys (at most MaxKeyBy, none twice)
// and returns them in their stored form, in the order given; never nil.
// Errors: KindInvalid naming "keyBy".
func NormalizeKeyBy(keys []string) ([]string, error) {
	if len(keys) > MaxKeyBy {
		return nil, Invalid("keyBy", "keyBy lists at most %d values, got %d", MaxKeyBy, len(keys))
	}
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		p, err := ParseKeyBy(k)
		if err != nil {
			return nil, err
		}
		if s := p.String(); !slices.Contains(out, s) {
			out = append(out, s)
			continue
		}
		return nil, Invalid("keyBy", "keyBy lists %q twice", k)
	}
	return out, nil
}

// validateParams requires exactly the parameters of the algorithm and
// checks their ranges.
func (r *RateLimitRule) validateParams() error {
	params, ok := ruleParams[r.Algorithm]
	if !ok {
		return Invalid("algorithm", "algorithm %q must be %s", r.Algorithm, ruleAlgorithms)
	}
	for _, p := range allParams {
		used := UsesParam(r.Algorithm, p.name)
		if used && !p.isSet(r) {
			return Invalid(p.name, "%s is required for algorithm %s (it takes %s)", p.name, r.Algorithm, paramNames(params))
		}
		if !used && p.isSet(r) {
			return Invalid(p.name, "%s does not apply to algorithm %s (it takes %s)", p.name, r.Algorithm, paramNames(params))
		}
	}
	return r.checkRanges()
}

func paramNames(ps []ruleParam) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.name
	}
	return strings.Join(names, ", ")
}

// checkRanges checks the values of the parameters that are set.
func (r *RateLimitRule) checkRanges() error {
	if p := r.RateLimit; p != nil {
		if *p < 0 || math.IsNaN(*p) || math.IsInf(*p, 0) || r.Algorithm == LeakyBucket && *p == 0 {
			return Invalid("rateLimit", "rateLimit must be a finite number of at least 0 (above 0 for LEAKY_BUCKET)")
		}
	}
	if p := r.BurstLimit; p != nil {
		if *p < 0 {
			return Invalid("burstLimit", "burstLimit must be at least 0")
		}
		if *p == 0 && r.Algorithm == TokenBucket && *r.RateLimit > 0 {
			return Invalid("burstLimit", "burstLimit 0 with a rateLimit above 0 would refuse every request; set a burstLimit of at least 1")
		}
	}
	if p := r.Limit; p != nil && *p < 0 {
		return Invalid("limit", "limit must be at least 0")
	}
	if p := r.WindowSeconds; p != nil && (*p < 1 || *p > MaxWindowSeconds) {
		return Invalid("windowSeconds", "windowSeconds must be between 1 and %d", MaxWindowSeconds)
	}
	if p := r.MaxDelayMillis; p != nil && (*p < 0 || *p > MaxDelayMillis) {
		return Invalid("maxDelayMillis", "maxDelayMillis must be between 0 and %d", MaxDelayMillis)
	}
	return nil
}

// Applies reports whether the rule applies to a request routed to the
// resource at resourcePath ("/pets/{petId}") with method (the method the
// route resolved to: the request's, or GET for a HEAD served by GET, or
// the request's method when the resource's method is ANY).
func (r *RateLimitRule) Applies(resourcePath, method string) bool {
	return (r.ResourcePath == AnyRoute || r.ResourcePath == resourcePath) &&
		(r.HTTPMethod == AnyRoute || r.HTTPMethod == method)
}

// Shadow reports whether the rule only reports (mode SHADOW).
func (r *RateLimitRule) Shadow() bool { return r.Mode == ModeShadow }

// SameCounters reports whether a rule changed from old to r keeps old's
// counters: its algorithm and keyBy are unchanged (docs/rules.md).
func (r *RateLimitRule) SameCounters(old *RateLimitRule) bool {
	return r.Algorithm == old.Algorithm && slices.Equal(r.KeyBy, old.KeyBy)
}

// StageRule is a rule as the gateway runs it (in StageConfig): the rule
// and CounterID, the id under which its counters live in the limiter. A
// rule gets a new CounterID when created and whenever its algorithm or
// keyBy changes, so its counters restart then and only then.
type StageRule struct {
	RateLimitRule
	CounterID string `json:"counterId"`
}
