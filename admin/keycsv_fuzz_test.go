package admin_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// FuzzImportApiKeys feeds arbitrary CSV files to ImportApiKeys against a
// real database: never a 5xx; a refusal imports nothing; with
// failonwarnings an answer is either 201 without warnings or a refusal;
// an import names one id per key it stored.
func FuzzImportApiKeys(f *testing.F) {
	h, ids := fuzzAdmin(f)
	for _, seed := range []string{
		"Key,Name\nabcdefghij0123456789x,one\n",
		"name,key,usageplanids\ntwo,ZZZZZZZZZZ0123456789,PLAN\n",
		"name,key,usageplanids\nthree,YYYYYYYYYY0123456789,'PLAN,nope00'\n",
		"Enabled,Name,key,UsageplanIds\nfalse,four,XXXXXXXXXX0123456789,\"PLAN,PLAN\"\n",
		"key,name\n\"broken,x\n", "", "\x00\xff,\n", "key,name\nshort,x\n",
	} {
		seed = strings.ReplaceAll(seed, "PLAN", ids["plan"])
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, body string, failOnWarnings bool) {
		before := countKeys(t, h)
		path := "/apikeys?mode=import&format=csv"
		if failOnWarnings {
			path += "&failonwarnings=true"
		}
		status, out := serve(h, "POST", path, body)
		after := countKeys(t, h)
		if status >= 500 {
			t.Fatalf("body %q: got %d %s, want < 500", body, status, out)
		}
		if status >= 400 {
			if after != before {
				t.Fatalf("body %q: refused (%d %s) but the key count went %d → %d", body, status, out, before, after)
			}
			return
		}
		var res struct{ IDs, Warnings []string }
		if err := json.Unmarshal([]byte(out), &res); err != nil || status != 201 {
			t.Fatalf("body %q: got %d %s, want 201 {ids, warnings}", body, status, out)
		}
		if failOnWarnings && len(res.Warnings) > 0 {
			t.Fatalf("body %q: failonwarnings answered 201 with warnings %q", body, res.Warnings)
		}
		if after-before > len(res.IDs) {
			t.Fatalf("body %q: %d keys appeared, but only %d ids were reported", body, after-before, len(res.IDs))
		}
	})
}

// countKeys counts the API keys through GetApiKeys (every page).
func countKeys(t *testing.T, h http.Handler) int { return countItems(t, h, "/apikeys") }

// countItems counts the items of a list operation, every page.
func countItems(t *testing.T, h http.Handler, path string) int {
	t.Helper()
	n, position := 0, ""
	for {
		status, out := serve(h, "GET", path+"?limit=500&position="+position, "")
		var page struct {
			Item     []json.RawMessage
			Position string
		}
		if status != 200 || json.Unmarshal([]byte(out), &page) != nil {
			t.Fatalf("GET %s: got %d %s", path, status, out)
		}
		n += len(page.Item)
		if page.Position == "" {
			return n
		}
		position = page.Position
	}
}
