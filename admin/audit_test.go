package admin

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"tollgate/plans"
)

// A read whose rule says it answers key values is recorded like a change
// (the keys of a later route that shows values need nothing more).
func TestKeyValueReadsAreAudited(t *testing.T) {
	t.Parallel()
	s, db := fullServer(t)
	answered := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"value": "x"})
	})
	req := httptest.NewRequest(http.MethodGet, "/apikeys/k1/value", nil)
	ctx := context.WithValue(req.Context(), principalKey{}, principal{Name: "reader", Role: plans.RoleKeys})
	ctx = context.WithValue(ctx, routeKey{}, route{Rule: rule{Op: "GetApiKeyValue", Area: areaKeys, KeyValues: true}, Op: "GetApiKeyValue", Area: areaKeys})
	s.audited(answered).ServeHTTP(httptest.NewRecorder(), req.WithContext(ctx))
	got, _, err := db.AuditEntries(context.Background(), plans.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Operation != "GetApiKeyValue" || got[0].Actor != "reader" || got[0].Resource != "/apikeys/k1/value" {
		t.Fatalf("got %+v, want one GetApiKeyValue entry by reader", got)
	}
}

func TestRedactRemovesSecretsAtAnyDepth(t *testing.T) {
	in := map[string]any{
		"name": "k", "value": "KEYVALUE", "nested": map[string]any{"secretAccessKey": "S", "keep": "ok"},
		"patchOperations": []any{
			map[string]any{"op": "replace", "path": "/description", "value": "visible"},
			map[string]any{"op": "replace", "path": "/value", "value": "HIDDEN"},
		},
	}
	out := redact(in, "").(map[string]any)
	if out["value"] != Redacted || out["nested"].(map[string]any)["secretAccessKey"] != Redacted || out["nested"].(map[string]any)["keep"] != "ok" {
		t.Errorf("got %v", out)
	}
	ops := out["patchOperations"].([]any)
	if ops[0].(map[string]any)["value"] != "visible" || ops[1].(map[string]any)["value"] != Redacted {
		t.Errorf("patch operations: got %v", ops)
	}
}
