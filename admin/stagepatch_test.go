package admin

import (
	"reflect"
	"strings"
	"testing"

	"tollgate/plans"
)

func replace(path, value string) patchOp { return patchOp{Op: opReplace, Path: path, Value: value} }
func remove(path string) patchOp         { return patchOp{Op: opRemove, Path: path} }
func add(path, value string) patchOp     { return patchOp{Op: opAdd, Path: path, Value: value} }

// stageWith returns a stage whose "*/*" entry caches with TTL 60.
func stageWith() *plans.Stage {
	all := plans.DefaultMethodSetting()
	all.CachingEnabled, all.CacheTTLInSeconds = true, 60
	return &plans.Stage{StageName: "prod", DeploymentID: "abc123",
		MethodSettings: map[string]plans.MethodSetting{plans.AllMethods: all}}
}

func TestPatchStage(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		ops   []patchOp
		check func(t *testing.T, st *plans.Stage)
	}{
		{"stage default rate", []patchOp{replace("/*/*/throttling/rateLimit", "12.5")}, func(t *testing.T, st *plans.Stage) {
			if got := st.MethodSettings["*/*"].ThrottlingRateLimit; got != 12.5 {
				t.Fatalf("got */* rate %v, want 12.5", got)
			}
		}},
		{"new method entry copies */* caching and inherits throttles", []patchOp{replace("/~1pets~1{petId}/GET/throttling/burstLimit", "7")}, func(t *testing.T, st *plans.Stage) {
			ms, ok := st.MethodSettings["~1pets~1{petId}/GET"]
			if !ok {
				t.Fatalf("got keys %v, want ~1pets~1{petId}/GET", keys(st.MethodSettings))
			}
			want := st.NewMethodSetting()
			want.ThrottlingBurstLimit = 7
			if !reflect.DeepEqual(ms, want) {
				t.Fatalf("got %+v, want %+v", ms, want)
			}
			if !ms.CachingEnabled || ms.CacheTTLInSeconds != 60 || ms.ThrottlingRateLimit != plans.Inherit {
				t.Fatalf("got %+v, want caching copied from */* and rate -1", ms)
			}
		}},
		{"every caching, metrics and logging field", []patchOp{
			replace("/~1/GET/caching/enabled", "false"),
			replace("/~1/GET/caching/ttlInSeconds", "3600"),
			replace("/~1/GET/caching/dataEncrypted", "true"),
			replace("/~1/GET/caching/requireAuthorizationForCacheControl", "false"),
			replace("/~1/GET/caching/unauthorizedCacheControlHeaderStrategy", "FAIL_WITH_403"),
			replace("/~1/GET/metrics/enabled", "TRUE"),
			replace("/~1/GET/logging/loglevel", "INFO"),
			replace("/~1/GET/logging/dataTrace", "true"),
		}, func(t *testing.T, st *plans.Stage) {
			ms := st.MethodSettings["~1/GET"]
			want := plans.MethodSetting{MetricsEnabled: true, LoggingLevel: "INFO", DataTraceEnabled: true,
				ThrottlingBurstLimit: -1, ThrottlingRateLimit: -1, CacheTTLInSeconds: 3600, CacheDataEncrypted: true,
				UnauthorizedCacheControlHeaderStrategy: plans.FailWith403}
			if !reflect.DeepEqual(ms, want) {
				t.Fatalf("got %+v, want %+v", ms, want)
			}
		}},
		{"remove a field resets it", []patchOp{
			replace("/~1pets/POST/throttling/rateLimit", "3"),
			remove("/~1pets/POST/throttling/rateLimit"),
		}, func(t *testing.T, st *plans.Stage) {
			if got := st.MethodSettings["~1pets/POST"].ThrottlingRateLimit; got != plans.Inherit {
				t.Fatalf("got rate %v after remove, want -1", got)
			}
		}},
		{"remove an entry", []patchOp{remove("/*/*")}, func(t *testing.T, st *plans.Stage) {
			if len(st.MethodSettings) != 0 {
				t.Fatalf("got %v, want no method settings", keys(st.MethodSettings))
			}
		}},
		{"variables and plain fields", []patchOp{
			replace("/variables/backend", "api.example.com"), add("/variables/x", "1"), remove("/variables/x"),
			replace("/description", "live"), replace("/deploymentId", "def456"),
			replace("/cacheClusterEnabled", "true"), replace("/cacheClusterSize", "1.6"),
		}, func(t *testing.T, st *plans.Stage) {
			want := map[string]string{"backend": "api.example.com"}
			if !reflect.DeepEqual(st.Variables, want) || st.Description != "live" || st.DeploymentID != "def456" ||
				!st.CacheClusterEnabled || st.CacheClusterSize != "1.6" {
				t.Fatalf("got %+v, want variables %v, description live, deployment def456, cache on at 1.6", st, want)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := stageWith()
			if err := applyAll(tc.ops, func(op patchOp) error { return patchStage(st, op) }); err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			if err := st.Validate(); err != nil {
				t.Fatalf("got invalid stage %v, want valid", err)
			}
			tc.check(t, st)
		})
	}
}

func TestPatchStageRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		op        patchOp
		wantField string
	}{
		{"unknown top-level path", replace("/cacheClusterStatus", "AVAILABLE"), "/cacheClusterStatus"},
		{"unknown method setting field", replace("/*/*/throttling/quota", "1"), "/*/*/throttling/quota"},
		{"burst with a fraction", replace("/*/*/throttling/burstLimit", "1.5"), "/*/*/throttling/burstLimit"},
		{"burst beyond int32", replace("/*/*/throttling/burstLimit", "2147483648"), "/*/*/throttling/burstLimit"},
		{"ttl not a number", replace("/~1pets/GET/caching/ttlInSeconds", "ten"), "/~1pets/GET/caching/ttlInSeconds"},
		{"rate not a number", replace("/*/*/throttling/rateLimit", "NaN"), "/*/*/throttling/rateLimit"},
		{"bool not a bool", replace("/*/*/caching/enabled", "yes"), "/*/*/caching/enabled"},
		{"unescaped resource path", replace("/pets/GET/caching/enabled", "true"), "/pets/GET/caching/enabled"},
		{"unknown method", replace("/~1pets/FETCH/caching/enabled", "true"), "/~1pets/FETCH/caching/enabled"},
		{"resource * with a method", replace("/*/GET/caching/enabled", "true"), "/*/GET/caching/enabled"},
		{"bad strategy", replace("/*/*/caching/unauthorizedCacheControlHeaderStrategy", "ALLOW"), "/*/*/caching/unauthorizedCacheControlHeaderStrategy"},
		{"bad log level", replace("/*/*/logging/loglevel", "DEBUG"), "/*/*/logging/loglevel"},
		{"replace of a whole entry", replace("/*/*", "x"), "/*/*"},
		{"add to deploymentId", add("/deploymentId", "abc"), "/deploymentId"},
		{"variables without a name", replace("/variables/", "x"), "/variables/"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := patchStage(stageWith(), tc.op)
			assertInvalid(t, err, tc.wantField)
		})
	}
}

// assertInvalid requires a KindInvalid *plans.Error naming field.
func assertInvalid(t *testing.T, err error, field string) {
	t.Helper()
	pe, ok := err.(*plans.Error)
	if !ok || pe.Kind != plans.KindInvalid {
		t.Fatalf("got error %v, want a 400 naming %s", err, field)
	}
	if pe.Field != field {
		t.Fatalf("got field %q, want %q (message %q)", pe.Field, field, pe.Message)
	}
	if !strings.Contains(pe.Message, strings.TrimPrefix(field, "/")) {
		t.Fatalf("got message %q, want it to name %s", pe.Message, field)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
