package gateway

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"tollgate/plans"
)

// routingSnapshot has literals, parameters and greedy parameters that
// compete for the same paths.
func routingSnapshot() *plans.Snapshot {
	m := mock(false)
	return snapshot(plans.Stage{},
		res{"/", methods(m, "GET")},
		res{"/pets", methods(m, "GET", "POST")},
		res{"/pets/mine", methods(m, "GET")},
		res{"/pets/{petId}", methods(m, "GET", "DELETE")},
		res{"/pets/{petId}/toys", methods(m, "GET")},
		res{"/pets/{petId}/{proxy+}", methods(m, "ANY")},
		res{"/files/{path+}", methods(m, "GET")},
		res{"/a/b/c", methods(m, "GET")},
		res{"/a/{x}/d", methods(m, "GET")},
		res{"/any", methods(m, "ANY", "POST")},
		res{"/heads", methods(m, "HEAD")},
	)
}

func mustStage(t testing.TB, snap *plans.Snapshot) *stageConfig {
	t.Helper()
	cfg, err := compile(snap)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return cfg.apis[testAPI].stages[testStage]
}

func TestMatchPrecedence(t *testing.T) {
	t.Parallel()
	st := mustStage(t, routingSnapshot())
	tests := []struct {
		name, path string // path below the stage, as split by splitStagePath
		want       string // resource path; "" for no match
		params     map[string]string
	}{
		{"root", "", "/", nil},
		{"literal", "pets", "/pets", nil},
		{"literal beats param", "pets/mine", "/pets/mine", nil},
		{"param", "pets/42", "/pets/{petId}", map[string]string{"petId": "42"}},
		{"param decoded", "pets/a%20b", "/pets/{petId}", map[string]string{"petId": "a b"}},
		{"encoded slash stays in one param", "pets/a%2Fb", "/pets/{petId}", map[string]string{"petId": "a/b"}},
		{"literal under param beats greedy", "pets/42/toys", "/pets/{petId}/toys", map[string]string{"petId": "42"}},
		{"greedy takes one segment", "pets/42/food", "/pets/{petId}/{proxy+}", map[string]string{"petId": "42", "proxy": "food"}},
		{"greedy takes the rest", "pets/42/toys/1/x", "/pets/{petId}/{proxy+}", map[string]string{"petId": "42", "proxy": "toys/1/x"}},
		{"greedy needs a segment", "files", "", nil},
		{"greedy under literal", "files/a/b.txt", "/files/{path+}", map[string]string{"path": "a/b.txt"}},
		{"backtrack from literal to param", "a/b/d", "/a/{x}/d", map[string]string{"x": "b"}},
		{"literal path wins when complete", "a/b/c", "/a/b/c", nil},
		{"resource without methods does not match", "a", "", nil},
		{"no such resource", "cats", "", nil},
		{"too deep", "pets/42/toys/1", "/pets/{petId}/{proxy+}", map[string]string{"petId": "42", "proxy": "toys/1"}},
		{"case sensitive literal", "Pets", "", nil},
		{"bad escape", "pets/%zz", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ps params
			rt := st.root.match(tc.path, &ps)
			got := ""
			if rt != nil {
				got = rt.path
			}
			if got != tc.want {
				t.Fatalf("match(%q): got %q, want %q", tc.path, got, tc.want)
			}
			if ps.n != len(tc.params) {
				t.Errorf("params: got %d, want %d", ps.n, len(tc.params))
			}
			for name, want := range tc.params {
				if p, ok := ps.get(name); !ok || p.value != want {
					t.Errorf("param %s: got %q (found %v), want %q", name, p.value, ok, want)
				}
			}
		})
	}
}

// More parameters than the fixed array holds still match, each with its value.
func TestMatchManyParams(t *testing.T) {
	t.Parallel()
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"}
	path, req := "", ""
	for i, n := range names {
		path += "/{" + n + "}"
		req += "/" + strconv.Itoa(i)
	}
	st := mustStage(t, snapshot(plans.Stage{}, res{"/", nil}, res{path, methods(mock(false), "GET")}))
	var ps params
	rt := st.root.match(strings.TrimPrefix(req, "/"), &ps)
	if rt == nil || rt.path != path {
		t.Fatalf("match(%q): got %v, want %s", req, rt, path)
	}
	for i, n := range names {
		if p, ok := ps.get(n); !ok || p.value != strconv.Itoa(i) {
			t.Errorf("param %s: got %q (found %v), want %d", n, p.value, ok, i)
		}
	}
}

func TestSplitStagePath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in    string
		stage, rest string
		ok          bool
	}{
		{"stage only", "/prod", "prod", "", true},
		{"stage slash", "/prod/", "prod", "", true},
		{"resource", "/prod/pets/1", "prod", "pets/1", true},
		{"trailing slash", "/prod/pets/", "prod", "pets", true},
		{"empty", "/", "", "", false},
		{"empty segment", "/prod//pets", "", "", false},
		{"double trailing slash", "/prod/pets//", "", "", false},
		{"escaped stage", "/pr%6Fd/x", "prod", "x", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stage, rest, ok := splitStagePath(tc.in)
			if stage != tc.stage || rest != tc.rest || ok != tc.ok {
				t.Errorf("splitStagePath(%q): got (%q, %q, %v), want (%q, %q, %v)", tc.in, stage, rest, ok, tc.stage, tc.rest, tc.ok)
			}
		})
	}
}

func TestAPIIDFromHost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		host, want string
		ok         bool
	}{
		{"a1b2c3d4e5.execute-api.localhost:8000", "a1b2c3d4e5", true},
		{"A1B2C3D4E5.Execute-Api.us-east-1.amazonaws.com", "a1b2c3d4e5", true},
		{"a1b2c3d4e5.execute-api.", "a1b2c3d4e5", true},
		{"localhost:8000", "", false},
		{".execute-api.localhost", "", false},
		{"a1b2c3d4e5.example.com", "", false},
		{"a1b2c3d4e5.execute-apix.localhost", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.host, func(t *testing.T) {
			got, ok := apiIDFromHost(tc.host)
			if got != tc.want || ok != tc.ok {
				t.Errorf("apiIDFromHost(%q): got (%q, %v), want (%q, %v)", tc.host, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestRoutingResponses(t *testing.T) {
	t.Parallel()
	tg := mustGateway(t, routingSnapshot(), nil)
	tests := []struct {
		name, method, path string
		status             int
		allow              string
	}{
		{"root", "GET", "/prod", 200, ""},
		{"resource", "GET", "/prod/pets/7", 200, ""},
		{"unknown stage", "GET", "/test/pets", 404, ""},
		{"no stage", "GET", "/", 404, ""},
		{"no resource", "GET", "/prod/cats", 404, ""},
		{"resource without methods", "GET", "/prod/a", 404, ""},
		{"method not allowed", "PUT", "/prod/pets", 405, "GET, HEAD, POST"},
		{"method not allowed on param", "POST", "/prod/pets/7", 405, "DELETE, GET, HEAD"},
		{"HEAD falls back to GET", "HEAD", "/prod/pets", 200, ""},
		{"ANY takes other methods", "DELETE", "/prod/any", 200, ""},
		{"exact beats ANY", "POST", "/prod/any", 200, ""},
		{"HEAD only resource refuses GET", "GET", "/prod/heads", 405, "HEAD"},
		{"HEAD only resource", "HEAD", "/prod/heads", 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tg.do(t, tc.method, tc.path)
			if got.status != tc.status {
				t.Fatalf("status: got %d, want %d (body %s)", got.status, tc.status, got.body)
			}
			switch tc.status {
			case 404:
				wantError(t, got, 404, "Not Found", "NotFoundException")
			case 405:
				wantError(t, got, 405, "Method Not Allowed", "MethodNotAllowedException")
				if a := got.header.Get("Allow"); a != tc.allow {
					t.Errorf("Allow: got %q, want %q", a, tc.allow)
				}
				if line := tg.logLine(t, got.header.Get("x-amzn-RequestId")); line["error_type"] != ErrorTypeMethod {
					t.Errorf("log error_type: got %v, want %s", line["error_type"], ErrorTypeMethod)
				}
			case 200:
				if tc.method != "HEAD" && got.body != "{}" {
					t.Errorf("body: got %q, want {}", got.body)
				}
			}
			if got.header.Get("x-amzn-RequestId") == "" {
				t.Errorf("x-amzn-RequestId: got none, want one")
			}
		})
	}
}

func TestUnknownAPIAndOtherHosts(t *testing.T) {
	t.Parallel()
	tg := mustGateway(t, routingSnapshot(), nil)
	get := func(host, path string) response {
		req, _ := http.NewRequest("GET", tg.http.URL+path, nil)
		req.Host = host
		resp, err := tg.http.Client().Do(req)
		if err != nil {
			t.Fatalf("GET %s%s: %v", host, path, err)
		}
		defer resp.Body.Close()
		b := make([]byte, 512)
		n, _ := resp.Body.Read(b)
		return response{status: resp.StatusCode, header: resp.Header, body: string(b[:n])}
	}
	wantError(t, get("zzzzzzzzzz.execute-api.localhost", "/prod/pets"), 404, "Not Found", "NotFoundException")
	wantError(t, get("localhost", "/prod/pets"), 404, "Not Found", "NotFoundException")
	if got := get("localhost", "/healthz"); got.status != 200 {
		t.Errorf("/healthz: got %d, want 200", got.status)
	}
	if got := get("localhost", "/readyz"); got.status != 200 {
		t.Errorf("/readyz: got %d, want 200", got.status)
	}
}
