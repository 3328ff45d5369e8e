package plans

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
)

func TestThrottleValidate(t *testing.T) {
	tests := []struct {
		name  string
		t     Throttle
		field string // "" means valid
	}{
		{"ordinary", Throttle{RateLimit: 10, BurstLimit: 20}, ""},
		{"fractional rate", Throttle{RateLimit: 0.7692307692307693, BurstLimit: 1}, ""},
		{"zero zero blocks", Throttle{}, ""},
		{"rate zero burst n", Throttle{BurstLimit: 5}, ""},
		{"burst zero rate positive", Throttle{RateLimit: 1}, "throttle.burstLimit"},
		{"negative rate", Throttle{RateLimit: -1, BurstLimit: 1}, "throttle.rateLimit"},
		{"negative burst", Throttle{RateLimit: 1, BurstLimit: -1}, "throttle.burstLimit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertField(t, tt.t.Validate("throttle"), tt.field)
		})
	}
}

func TestQuotaValidate(t *testing.T) {
	tests := []struct {
		name  string
		q     Quota
		field string
	}{
		{"day", Quota{Limit: 5, Period: PeriodDay}, ""},
		{"day offset", Quota{Limit: 5, Period: PeriodDay, Offset: 1}, "quota.offset"},
		{"week offset 6", Quota{Limit: 5, Period: PeriodWeek, Offset: 6}, ""},
		{"week offset 7", Quota{Limit: 5, Period: PeriodWeek, Offset: 7}, "quota.offset"},
		{"month offset 27", Quota{Limit: 5, Period: PeriodMonth, Offset: 27}, ""},
		{"month offset 28", Quota{Limit: 5, Period: PeriodMonth, Offset: 28}, "quota.offset"},
		{"no period", Quota{Limit: 5}, "quota.period"},
		{"bad period", Quota{Limit: 5, Period: "YEAR"}, "quota.period"},
		{"negative limit", Quota{Limit: -1, Period: PeriodDay}, "quota.limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertField(t, tt.q.Validate(), tt.field)
		})
	}
}

func TestParseMethodThrottleKey(t *testing.T) {
	tests := []struct {
		key, path, method string
		ok                bool
	}{
		{"/pets/GET", "/pets", "GET", true},
		{"//GET", "/", "GET", true},
		{"~1pets~1{petId}/PUT", "/pets/{petId}", "PUT", true},
		{"/pets/{petId}/ANY", "/pets/{petId}", "ANY", true},
		{"/pets/FETCH", "", "", false},
		{"pets/GET", "", "", false},
		{"GET", "", "", false},
		{"/pets//GET", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			path, method, err := ParseMethodThrottleKey(tt.key)
			if (err == nil) != tt.ok || path != tt.path || method != tt.method {
				t.Errorf("ParseMethodThrottleKey(%q) = %q, %q, %v; want %q, %q, ok=%v", tt.key, path, method, err, tt.path, tt.method, tt.ok)
			}
		})
	}
}

func TestStageThrottleInheritance(t *testing.T) {
	account := Throttle{RateLimit: 10000, BurstLimit: 5000}
	method := MethodSettingKey("/pets", "GET")
	tests := []struct {
		name     string
		settings map[string]MethodSetting
		want     Throttle
		ok       bool
	}{
		{"no settings: no stage bucket", nil, Throttle{}, false},
		{"all inherit: no stage bucket", map[string]MethodSetting{AllMethods: DefaultMethodSetting()}, Throttle{}, false},
		{"star sets both", map[string]MethodSetting{AllMethods: {ThrottlingRateLimit: 100, ThrottlingBurstLimit: 50}}, Throttle{RateLimit: 100, BurstLimit: 50}, true},
		{"method rate, star burst", map[string]MethodSetting{
			AllMethods: {ThrottlingRateLimit: 100, ThrottlingBurstLimit: 50},
			method:     {ThrottlingRateLimit: 5, ThrottlingBurstLimit: Inherit},
		}, Throttle{RateLimit: 5, BurstLimit: 50}, true},
		{"method rate only, burst from account", map[string]MethodSetting{
			method: {ThrottlingRateLimit: 5, ThrottlingBurstLimit: Inherit},
		}, Throttle{RateLimit: 5, BurstLimit: 5000}, true},
		{"zero is a real value", map[string]MethodSetting{
			AllMethods: {ThrottlingRateLimit: 0, ThrottlingBurstLimit: 0},
		}, Throttle{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Stage{StageName: "prod", MethodSettings: tt.settings}
			got, ok := s.StageThrottle("/pets", "GET", account)
			if ok != tt.ok || got != tt.want {
				t.Errorf("got %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestNewMethodSettingCopiesStarCaching(t *testing.T) {
	s := Stage{MethodSettings: map[string]MethodSetting{AllMethods: {
		CachingEnabled: true, CacheTTLInSeconds: 60, ThrottlingRateLimit: 9, ThrottlingBurstLimit: 9,
		UnauthorizedCacheControlHeaderStrategy: FailWith403, LoggingLevel: "INFO",
	}}}
	ms := s.NewMethodSetting()
	if !ms.CachingEnabled || ms.CacheTTLInSeconds != 60 || ms.UnauthorizedCacheControlHeaderStrategy != FailWith403 {
		t.Errorf("caching fields not copied from */*: got %+v", ms)
	}
	if ms.ThrottlingRateLimit != Inherit || ms.ThrottlingBurstLimit != Inherit {
		t.Errorf("throttle fields: got %v/%v, want -1/-1", ms.ThrottlingRateLimit, ms.ThrottlingBurstLimit)
	}
}

func TestHashKey(t *testing.T) {
	// SHA-256("abc") from FIPS 180-2 appendix B.1.
	if got := HashKey("abc", nil); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("HashKey(abc) = %s", got)
	}
	if HashKey("abc", []byte("pepper")) == HashKey("abc", nil) {
		t.Error("a pepper must change the hash")
	}
}

func TestKeyHasherHashesAsHashKey(t *testing.T) {
	values := []string{"", "abc", strings.Repeat("a1B2", 5), strings.Repeat("Zz9", 43), strings.Repeat("x", 2000)}
	for _, pepper := range []string{"", "pepper", strings.Repeat("p", 100)} {
		k := NewKeyHasher([]byte(pepper))
		var wg sync.WaitGroup
		for range 4 { // concurrent callers, each hash reused from the pool
			wg.Go(func() {
				for range 3 {
					for _, v := range values {
						if got, want := k.Hash(v), HashKey(v, []byte(pepper)); got != want {
							t.Errorf("pepper %q, value %q: got %s, want %s", pepper, v, got, want)
						}
					}
				}
			})
		}
		wg.Wait()
	}
}

func BenchmarkKeyHash(b *testing.B) {
	value, pepper := strings.Repeat("a1B2", 10), []byte("a pepper of some length")
	b.Run("HashKey/pepper", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			HashKey(value, pepper)
		}
	})
	b.Run("KeyHasher/pepper", func(b *testing.B) {
		k := NewKeyHasher(pepper)
		b.ReportAllocs()
		for b.Loop() {
			k.Hash(value)
		}
	})
	b.Run("HashKey/none", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			HashKey(value, nil)
		}
	})
}

func TestNewIDsAreValid(t *testing.T) {
	for range 1000 {
		if id := NewID(LongIDLen); !ValidID(id) || len(id) != LongIDLen {
			t.Fatalf("NewID(10) = %q", id)
		}
	}
}

// Validate is pure; Normalize is the named step that rewrites "~1" keys to
// raw paths (and gives apiStages its empty list), and what it produces
// validates too.
func TestUsagePlanValidateIsPureAndNormalizeRewritesKeys(t *testing.T) {
	p := UsagePlan{Name: "gold", ApiStages: []ApiStage{{ApiID: "a", Stage: "prod",
		Throttle: map[string]Throttle{"~1pets/GET": {RateLimit: 1, BurstLimit: 1}}}}}
	before := fmt.Sprint(p)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if after := fmt.Sprint(p); after != before {
		t.Errorf("Validate changed the plan: %s became %s", before, after)
	}
	p.Normalize()
	if _, ok := p.ApiStages[0].Throttle["/pets/GET"]; !ok || len(p.ApiStages[0].Throttle) != 1 {
		t.Errorf("after Normalize: keys %v, want only /pets/GET", p.ApiStages[0].Throttle)
	}
	if err := p.Validate(); err != nil {
		t.Errorf("normalised plan: %v", err)
	}
	if t1, ok := p.MethodThrottle("a", "prod", "/pets", "GET"); !ok || t1.RateLimit != 1 {
		t.Errorf("MethodThrottle after Normalize: %v %v", t1, ok)
	}
	raw := UsagePlan{Name: "raw", ApiStages: []ApiStage{{ApiID: "a", Stage: "prod",
		Throttle: map[string]Throttle{"~1pets/GET": {RateLimit: 2, BurstLimit: 2}}}}}
	if t2, ok := raw.MethodThrottle("a", "prod", "/pets", "GET"); !ok || t2.RateLimit != 2 {
		t.Errorf("MethodThrottle of a plan not normalised: %v %v, want the ~1 key found", t2, ok)
	}
	var empty UsagePlan
	empty.Normalize()
	if empty.ApiStages == nil {
		t.Errorf("Normalize: apiStages stays nil, want []")
	}
	dup := UsagePlan{Name: "x", ApiStages: []ApiStage{{ApiID: "a", Stage: "p"}, {ApiID: "a", Stage: "p"}}}
	assertField(t, dup.Validate(), "apiStages")
}

// Validate leaves an integration, a method and an API as they were; their
// Normalize fills the defaults they are stored with.
func TestValidateIsPureNormalizeFillsDefaults(t *testing.T) {
	in := Integration{Type: IntegrationHTTPProxy, URI: "http://up.example/x"}
	m := Method{HTTPMethod: "GET"}
	a := RestApi{Name: "pets"}
	for name, v := range map[string]interface {
		Validate() error
		Normalize()
	}{"integration": &in, "method": &m, "api": &a} {
		before := fmt.Sprint(v)
		if err := v.Validate(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if after := fmt.Sprint(v); after != before {
			t.Errorf("%s: Validate changed it: %s became %s", name, before, after)
		}
		v.Normalize()
		if err := v.Validate(); err != nil {
			t.Errorf("%s after Normalize: %v", name, err)
		}
	}
	if in.HTTPMethod != "ANY" || in.TimeoutInMillis != DefaultTimeoutMillis || in.CacheKeyParameters == nil || in.ConnectionType != "INTERNET" {
		t.Errorf("integration defaults: %+v", in)
	}
	if m.AuthorizationType != "NONE" || a.ApiKeySource != ApiKeySourceHeader {
		t.Errorf("method %q, api %q: want NONE and HEADER", m.AuthorizationType, a.ApiKeySource)
	}
}

func assertField(t *testing.T, err error, field string) {
	t.Helper()
	if field == "" {
		if err != nil {
			t.Errorf("got error %v, want none", err)
		}
		return
	}
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindInvalid || e.Field != field {
		t.Errorf("got %v, want an invalid error naming %s", err, field)
	}
}

func TestStageValidateResolvedBurstZero(t *testing.T) {
	key := MethodSettingKey("/pets", "GET")
	entry := func(rate float64, burst int32) MethodSetting {
		ms := DefaultMethodSetting()
		ms.ThrottlingRateLimit, ms.ThrottlingBurstLimit = rate, burst
		return ms
	}
	tests := []struct {
		name     string
		settings map[string]MethodSetting
		field    string
	}{
		{"burst 0 rate inherited from account", map[string]MethodSetting{AllMethods: entry(Inherit, 0)}, "methodSettings.*/*.throttlingBurstLimit"},
		{"burst 0 rate from star", map[string]MethodSetting{AllMethods: entry(5, Inherit), key: entry(Inherit, 0)}, "methodSettings." + key + ".throttlingBurstLimit"},
		{"burst 0 from star, method rate", map[string]MethodSetting{AllMethods: entry(Inherit, 0)}, "methodSettings.*/*.throttlingBurstLimit"},
		{"explicit 0/0 blocks, valid", map[string]MethodSetting{AllMethods: entry(0, 0)}, ""},
		{"method 0/0 under star 5/5", map[string]MethodSetting{AllMethods: entry(5, 5), key: entry(0, 0)}, ""},
		{"rate 0 from star, burst 0 here", map[string]MethodSetting{AllMethods: entry(0, 3), key: entry(Inherit, 0)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Stage{StageName: "prod", MethodSettings: tt.settings}
			assertField(t, s.Validate(), tt.field)
		})
	}
}

// FuzzValidKeyValue: the byte loop accepts exactly what the regular
// expression of its doc comment accepts.
func FuzzValidKeyValue(f *testing.F) {
	re := regexp.MustCompile(`^[A-Za-z0-9]{20,128}$`)
	for _, s := range []string{"", "abcdefghij0123456789", "abcdefghij012345678", strings.Repeat("a", 128), strings.Repeat("Z", 129), "abcdefghij0123456789\n", "abcdefghij012345678é", "abcdefghij 123456789"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ValidKeyValue(s), re.MatchString(s); got != want {
			t.Fatalf("ValidKeyValue(%q) = %v, regexp says %v", s, got, want)
		}
	})
}

func TestGatewayOwnedHeaders(t *testing.T) {
	for name, want := range map[string]bool{
		"Retry-After": true, "retry-after": true, "x-amzn-ErrorType": true, "X-AMZN-REQUESTID": true,
		"x-amzn-anything": true, "X-RateLimit-Remaining": true, "RateLimit-Policy": true, "ratelimit": true,
		"Content-Length": true, "Transfer-Encoding": true, "connection": true, "Keep-Alive": true, "Upgrade": true,
		"X-Cache": true, "Age": true,
		"Access-Control-Allow-Origin": false, "Content-Type": false, "X-Amzn": false, "X-RateLimit": false, "Cache-Control": false,
	} {
		if got := GatewayOwnedHeader(name); got != want {
			t.Errorf("GatewayOwnedHeader(%q): got %v, want %v", name, got, want)
		}
	}
	err := CheckResponseParameters("responseParameters", map[string]string{
		"gatewayresponse.header.Access-Control-Allow-Origin": "'*'",
		"gatewayresponse.header.retry-after":                 "'1'",
	})
	if err == nil || !strings.Contains(ErrorMessage(err), `"gatewayresponse.header.retry-after"`) {
		t.Errorf("a mapped retry-after: got %v, want a refusal naming the parameter", err)
	}
	if err := CheckResponseParameters("responseParameters", map[string]string{"method.response.header.X-Ok": "'1'"}); err != nil {
		t.Errorf("a mapped X-Ok: got %v, want no error", err)
	}
}

func TestCheckPathParameters(t *testing.T) {
	for _, tc := range []struct {
		name, path     string
		params, before map[string]bool
		ok             bool
	}{
		{"declared", "/pets/{petId}", map[string]bool{"method.request.path.petId": true}, nil, true},
		{"greedy", "/files/{proxy+}", map[string]bool{"method.request.path.proxy": true}, nil, true},
		{"not in the path", "/pets", map[string]bool{"method.request.path.nope": true}, nil, false},
		{"query and header are not path parameters", "/pets", map[string]bool{"method.request.querystring.nope": true, "method.request.header.nope": false}, nil, true},
		{"stored earlier", "/pets", map[string]bool{"method.request.path.nope": true}, map[string]bool{"method.request.path.nope": true}, true},
		{"added beside one stored earlier", "/pets", map[string]bool{"method.request.path.nope": true, "method.request.path.x": true}, map[string]bool{"method.request.path.nope": true}, false},
	} {
		err := CheckPathParameters(tc.path, tc.params, tc.before)
		if (err == nil) != tc.ok {
			t.Errorf("%s: got %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

func TestStageStaleTags(t *testing.T) {
	tests := []struct {
		value string
		want  int
		field string
	}{
		{"0", 0, ""},
		{"60", 60, ""},
		{"86400", 86400, ""},
		{"060", 60, ""},
		{"086400", 0, "tags." + CacheStaleIfErrorTag},
		{"86401", 0, "tags." + CacheStaleIfErrorTag},
		{"", 0, "tags." + CacheStaleIfErrorTag},
		{"-1", 0, "tags." + CacheStaleIfErrorTag},
		{"+1", 0, "tags." + CacheStaleIfErrorTag},
		{"1e3", 0, "tags." + CacheStaleIfErrorTag},
	}
	for _, tag := range []string{CacheStaleIfErrorTag, CacheStaleWhileRevalidateTag} {
		for _, tt := range tests {
			t.Run(tag+"="+tt.value, func(t *testing.T) {
				s := Stage{StageName: "prod", Tags: map[string]string{tag: tt.value}}
				field := tt.field
				if field != "" {
					field = "tags." + tag
				}
				assertField(t, s.Validate(), field)
				if got := s.CacheStaleSeconds(tag); got != tt.want {
					t.Errorf("CacheStaleSeconds: got %d, want %d", got, tt.want)
				}
			})
		}
	}
	if got := (&Stage{}).CacheStaleSeconds(CacheStaleIfErrorTag); got != 0 {
		t.Errorf("CacheStaleSeconds without the tag: got %d, want 0", got)
	}
}
