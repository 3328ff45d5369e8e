package admin

import (
	"testing"

	"tollgate/plans"
)

// FuzzPatchPaths feeds arbitrary operations to the stage and usage plan
// patchers: they must never panic, and every refusal must be a 400
// (KindInvalid) naming a field — never an internal error.
func FuzzPatchPaths(f *testing.F) {
	for _, seed := range []struct{ op, path, value string }{
		{"replace", "/*/*/throttling/rateLimit", "1.5"},
		{"replace", "/~1pets~1{petId}/GET/caching/ttlInSeconds", "30"},
		{"remove", "/~1/GET", ""},
		{"add", "/variables/x", "y"},
		{"replace", "/apiStages/api0000001:prod/throttle//pets/GET/burstLimit", "3"},
		{"remove", "/apiStages/api0000001:prod/throttle/~1pets/GET", ""},
		{"add", "/apiStages", "a:b"},
		{"replace", "/quota/limit", "-1"},
		{"remove", "/apiStages/:/throttle", ""},
		{"replace", "/apiStages/api0000001:prod/throttle////rateLimit", "1"},
	} {
		f.Add(seed.op, seed.path, seed.value)
	}
	f.Fuzz(func(t *testing.T, op, path, value string) {
		o := patchOp{Op: op, Path: path, Value: value}
		checkRefusal(t, patchStage(stageWith(), o))
		checkRefusal(t, patchUsagePlan(planWith(), []patchOp{o}))
	})
}

func checkRefusal(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	pe, ok := err.(*plans.Error)
	if !ok || pe.Kind != plans.KindInvalid || pe.Field == "" {
		t.Fatalf("got error %#v, want a KindInvalid *plans.Error naming a field", err)
	}
}
