package plans

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

func validRule() RateLimitRule {
	r := RateLimitRule{Name: "per-ip", KeyBy: []string{"ip"}, Algorithm: TokenBucket, RateLimit: ptr(2.0), BurstLimit: ptr[int32](4)}
	r.SetDefaults()
	return r
}

func TestRuleValidationNamesTheField(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(*RateLimitRule)
		field string
	}{
		{"no name", func(r *RateLimitRule) { r.Name = "" }, "name"},
		{"quote in name", func(r *RateLimitRule) { r.Name = `a"b` }, "name"},
		{"reserved name", func(r *RateLimitRule) { r.Name = "Quota" }, "name"},
		{"long name", func(r *RateLimitRule) { r.Name = strings.Repeat("a", 129) }, "name"},
		{"relative path", func(r *RateLimitRule) { r.ResourcePath = "pets" }, "resourcePath"},
		{"trailing slash", func(r *RateLimitRule) { r.ResourcePath = "/pets/" }, "resourcePath"},
		{"ANY", func(r *RateLimitRule) { r.HTTPMethod = "ANY" }, "httpMethod"},
		{"lower-case method", func(r *RateLimitRule) { r.HTTPMethod = "get" }, "httpMethod"},
		{"unknown keyBy", func(r *RateLimitRule) { r.KeyBy = []string{"cookie:a"} }, "keyBy"},
		{"empty header", func(r *RateLimitRule) { r.KeyBy = []string{"header:"} }, "keyBy"},
		{"header with space", func(r *RateLimitRule) { r.KeyBy = []string{"header:x y"} }, "keyBy"},
		{"query with comma", func(r *RateLimitRule) { r.KeyBy = []string{"query:a,b"} }, "keyBy"},
		{"twice up to case", func(r *RateLimitRule) { r.KeyBy = []string{"header:X-A", "header:x-a"} }, "keyBy"},
		{"nine keys", func(r *RateLimitRule) {
			r.KeyBy = []string{"ip", "apiKey", "header:a", "header:b", "header:c", "query:a", "query:b", "query:c", "query:d"}
		}, "keyBy"},
		{"mode", func(r *RateLimitRule) { r.Mode = "DRY_RUN" }, "mode"},
		{"algorithm", func(r *RateLimitRule) { r.Algorithm = "GCRA" }, "algorithm"},
		{"missing burst", func(r *RateLimitRule) { r.BurstLimit = nil }, "burstLimit"},
		{"foreign limit", func(r *RateLimitRule) { r.Limit = ptr[int32](3) }, "limit"},
		{"negative rate", func(r *RateLimitRule) { r.RateLimit = ptr(-1.0) }, "rateLimit"},
		{"burst 0 with a rate", func(r *RateLimitRule) { r.BurstLimit = ptr[int32](0) }, "burstLimit"},
		{"leaky rate 0", func(r *RateLimitRule) {
			r.Algorithm, r.RateLimit, r.MaxDelayMillis = LeakyBucket, ptr(0.0), ptr[int32](10)
		}, "rateLimit"},
		{"delay too long", func(r *RateLimitRule) { r.Algorithm, r.MaxDelayMillis = LeakyBucket, ptr[int32](30001) }, "maxDelayMillis"},
		{"window 0", func(r *RateLimitRule) {
			r.Algorithm, r.RateLimit, r.BurstLimit, r.Limit, r.WindowSeconds = FixedWindow, nil, nil, ptr[int32](1), ptr[int32](0)
		}, "windowSeconds"},
		{"negative limit", func(r *RateLimitRule) {
			r.Algorithm, r.RateLimit, r.BurstLimit, r.Limit = Concurrency, nil, nil, ptr[int32](-1)
		}, "limit"},
	}
	for _, tc := range cases {
		r := validRule()
		tc.edit(&r)
		err := r.Validate()
		var pe *Error
		if !errors.As(err, &pe) || pe.Kind != KindInvalid || pe.Field != tc.field {
			t.Errorf("%s: got %v, want a 400 naming %s", tc.name, err, tc.field)
		}
	}
}

func TestRuleValidationAcceptsEachAlgorithm(t *testing.T) {
	for _, r := range []RateLimitRule{
		{Name: "a", Algorithm: TokenBucket, RateLimit: ptr(0.0), BurstLimit: ptr[int32](0)},
		{Name: "b", Algorithm: SlidingWindow, Limit: ptr[int32](0), WindowSeconds: ptr[int32](MaxWindowSeconds)},
		{Name: "c", Algorithm: FixedWindow, Limit: ptr[int32](5), WindowSeconds: ptr[int32](1)},
		{Name: "d", Algorithm: Concurrency, Limit: ptr[int32](1), KeyBy: []string{"header:X-Tenant", "query:region", "apiKey"}},
		{Name: "e 1.2:x/y@z+w-v", Algorithm: LeakyBucket, RateLimit: ptr(0.5), BurstLimit: ptr[int32](0), MaxDelayMillis: ptr[int32](0)},
	} {
		r.SetDefaults()
		if err := r.Validate(); err != nil {
			t.Errorf("%s: got %v, want valid", r.Name, err)
		}
	}
	r := RateLimitRule{Name: "h", Algorithm: Concurrency, Limit: ptr[int32](1), KeyBy: []string{"header:X-Tenant"}}
	r.SetDefaults()
	if err := r.Validate(); err != nil || !slices.Equal(r.KeyBy, []string{"header:x-tenant"}) {
		t.Errorf("got %v and keyBy %v, want header names lower case", err, r.KeyBy)
	}
}

func TestDropUnusedParamsKeepsWhatBothAlgorithmsShare(t *testing.T) {
	r := RateLimitRule{Algorithm: LeakyBucket, RateLimit: ptr(1.0), BurstLimit: ptr[int32](2), MaxDelayMillis: ptr[int32](3)}
	r.Algorithm = TokenBucket
	r.DropUnusedParams()
	if r.RateLimit == nil || r.BurstLimit == nil || r.MaxDelayMillis != nil {
		t.Errorf("LEAKY_BUCKET → TOKEN_BUCKET: got %+v, want rateLimit and burstLimit only", r)
	}
	r.Algorithm = Concurrency
	r.DropUnusedParams()
	if r.RateLimit != nil || r.BurstLimit != nil {
		t.Errorf("→ CONCURRENCY: got %+v, want no parameter", r)
	}
}

func TestRuleApplies(t *testing.T) {
	r := validRule()
	if !r.Applies("/pets", "POST") {
		t.Error("* * does not apply to POST /pets")
	}
	r.ResourcePath, r.HTTPMethod = "/pets/{id}", "GET"
	for _, c := range []struct {
		path, method string
		want         bool
	}{{"/pets/{id}", "GET", true}, {"/pets/{id}", "POST", false}, {"/pets", "GET", false}} {
		if got := r.Applies(c.path, c.method); got != c.want {
			t.Errorf("%s %s: got %v, want %v", c.method, c.path, got, c.want)
		}
	}
}

func TestPlanModeTag(t *testing.T) {
	p := &UsagePlan{Name: "p", Tags: map[string]string{ModeTag: "shadow"}}
	if err := p.Validate(); err != nil || !p.Shadow() {
		t.Errorf("shadow: got %v, shadow %v", err, p.Shadow())
	}
	p.Tags[ModeTag] = "enforce"
	if err := p.Validate(); err != nil || p.Shadow() {
		t.Errorf("enforce: got %v, shadow %v", err, p.Shadow())
	}
	p.Tags[ModeTag] = "Shadow!"
	var pe *Error
	if err := p.Validate(); !errors.As(err, &pe) || pe.Field != "tags.tollgate:mode" {
		t.Errorf("bad value: got %v, want a 400 naming tags.tollgate:mode", err)
	}
}

func TestPlanQuotaCountsTag(t *testing.T) {
	p := &UsagePlan{Name: "p", Tags: map[string]string{QuotaCountsTag: "non-5xx"}}
	if err := p.Validate(); err != nil || !p.CountsNon5xx() {
		t.Errorf("non-5xx: got %v, non-5xx %v", err, p.CountsNon5xx())
	}
	p.Tags[QuotaCountsTag] = "all"
	if err := p.Validate(); err != nil || p.CountsNon5xx() {
		t.Errorf("all: got %v, non-5xx %v", err, p.CountsNon5xx())
	}
	p.Tags[QuotaCountsTag] = "2xx"
	var pe *Error
	if err := p.Validate(); !errors.As(err, &pe) || pe.Field != "tags.tollgate:quota-counts" {
		t.Errorf("bad value: got %v, want a 400 naming tags.tollgate:quota-counts", err)
	}
}

// FuzzParseKeyBy: never panics; an accepted entry's stored form parses
// back to the same part.
func FuzzParseKeyBy(f *testing.F) {
	for _, s := range []string{"ip", "apiKey", "header:X-Tenant", "query:region", "query:", "header:a b", "cookie:x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseKeyBy(s)
		if err != nil {
			if ErrorKind(err) != KindInvalid {
				t.Fatalf("ParseKeyBy(%q): got %v, want a 400", s, err)
			}
			return
		}
		again, err := ParseKeyBy(p.String())
		if err != nil || again != p {
			t.Fatalf("ParseKeyBy(%q) = %+v; its form %q parses to %+v, %v", s, p, p.String(), again, err)
		}
	})
}
