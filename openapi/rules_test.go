package openapi

import (
	"reflect"
	"strings"
	"testing"

	"tollgate/plans"
)

const rulesDoc = `{"openapi":"3.0.1","info":{"title":"t","version":"1"},
"paths":{"/login":{"post":{"responses":{"200":{"description":"ok"}},"x-amazon-apigateway-integration":{"type":"mock"}}}},
"x-tollgate-rate-limit-rules":{"prod":[
 {"name":"login-per-ip","resourcePath":"/login","httpMethod":"POST","keyBy":["ip"],"algorithm":"SLIDING_WINDOW","limit":10,"windowSeconds":60},
 {"id":"abc123","name":"burst","keyBy":["header:X-Tenant","query:region"],"algorithm":"LEAKY_BUCKET","rateLimit":5,"burstLimit":10,"maxDelayMillis":500,"mode":"SHADOW"}
],"beta":[]}}`

func ptr[T any](v T) *T { return &v }

func TestImportReadsRulesByStageSortedWithDefaults(t *testing.T) {
	def, warnings := mustImport(t, []byte(rulesDoc))
	if len(warnings) != 0 {
		t.Errorf("warnings %q, want none", warnings)
	}
	want := map[string][]plans.RateLimitRule{
		"prod": {
			{Name: "burst", ResourcePath: "*", HTTPMethod: "*", KeyBy: []string{"header:x-tenant", "query:region"},
				Algorithm: plans.LeakyBucket, RateLimit: ptr(5.0), BurstLimit: ptr[int32](10), MaxDelayMillis: ptr[int32](500), Mode: plans.ModeShadow},
			{Name: "login-per-ip", ResourcePath: "/login", HTTPMethod: "POST", KeyBy: []string{"ip"},
				Algorithm: plans.SlidingWindow, Limit: ptr[int32](10), WindowSeconds: ptr[int32](60), Mode: plans.ModeEnforce},
		},
		"beta": {},
	}
	if !reflect.DeepEqual(def.RateLimitRules, want) {
		t.Errorf("rules: got %+v, want %+v", def.RateLimitRules, want)
	}
}

func TestRulesSurviveEveryExportFormat(t *testing.T) {
	def, _ := mustImport(t, []byte(rulesDoc))
	for _, opts := range []ExportOptions{
		{Extensions: true, Stage: "prod"}, {Extensions: true, YAML: true},
		{Extensions: true, Swagger: true}, {Extensions: true, Swagger: true, YAML: true},
	} {
		out, _, err := Export(def, opts)
		if err != nil {
			t.Fatalf("%+v: %v", opts, err)
		}
		again, _ := mustImport(t, out)
		if !reflect.DeepEqual(again.RateLimitRules, def.RateLimitRules) {
			t.Errorf("%+v: got rules %+v, want %+v\n%s", opts, again.RateLimitRules, def.RateLimitRules, out)
		}
		if strings.Contains(string(out), "abc123") {
			t.Errorf("%+v: the export carries a rule id:\n%s", opts, out)
		}
	}
	out, _, err := Export(def, ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), plans.RulesExtension) {
		t.Errorf("an export without extensions carries the rules:\n%s", out)
	}
}

func TestImportRuleErrorsNameTheLocation(t *testing.T) {
	doc := func(rules string) string {
		return `{"openapi":"3.0.1","info":{"title":"t","version":"1"},"paths":{},"x-tollgate-rate-limit-rules":` + rules + `}`
	}
	cases := []struct{ name, rules, loc string }{
		{"missing parameter", `{"prod":[{"name":"a","algorithm":"TOKEN_BUCKET","rateLimit":1}]}`, "x-tollgate-rate-limit-rules.prod[0].burstLimit"},
		{"parameter of another algorithm", `{"prod":[{"name":"a","algorithm":"CONCURRENCY","limit":1,"windowSeconds":3}]}`, "x-tollgate-rate-limit-rules.prod[0].windowSeconds"},
		{"unknown algorithm", `{"prod":[{"name":"a","algorithm":"GCRA"}]}`, "x-tollgate-rate-limit-rules.prod[0].algorithm"},
		{"bad keyBy", `{"prod":[{"name":"a","keyBy":["cookie:x"],"algorithm":"CONCURRENCY","limit":1}]}`, "x-tollgate-rate-limit-rules.prod[0].keyBy"},
		{"name twice", `{"prod":[{"name":"a","algorithm":"CONCURRENCY","limit":1},{"name":"a","algorithm":"CONCURRENCY","limit":2}]}`, "x-tollgate-rate-limit-rules.prod[1].name"},
		{"fraction", `{"prod":[{"name":"a","algorithm":"CONCURRENCY","limit":1.5}]}`, "x-tollgate-rate-limit-rules.prod[0].limit"},
		{"bad stage name", `{"pr od":[]}`, "x-tollgate-rate-limit-rules.stageName"},
		{"not an object", `[1]`, "x-tollgate-rate-limit-rules"},
	}
	for _, tc := range cases {
		_, _, err := Import([]byte(doc(tc.rules)), ImportOptions{})
		var pe *plans.Error
		if !errorsAsPlans(err, &pe) || pe.Kind != plans.KindInvalid || pe.Field != tc.loc {
			t.Errorf("%s: got %v (field %q), want a 400 naming %s", tc.name, err, fieldOfErr(pe), tc.loc)
		}
	}
	_, _, err := Import([]byte(doc(`{"prod":[{"name":"a","algorithm":"CONCURRENCY","limit":1,"burst":3}]}`)), ImportOptions{})
	if plans.ErrorKind(err) != plans.KindInvalid || !strings.Contains(plans.ErrorMessage(err), "burst") {
		t.Errorf("unknown field: got %v, want a 400 naming burst", err)
	}
}

func fieldOfErr(pe *plans.Error) string {
	if pe == nil {
		return ""
	}
	return pe.Field
}
