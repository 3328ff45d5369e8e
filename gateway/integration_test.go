package gateway

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"strings"
	"testing"

	"tollgate/plans"
)

func TestSubstituteStageVariables(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"host": "up:8080", "v": "v2"}
	tests := []struct{ name, in, want string }{
		{"none", "http://a/b", "http://a/b"},
		{"host and path", "http://${stageVariables.host}/${stageVariables.v}/x", "http://up:8080/v2/x"},
		{"missing is empty", "http://a/${stageVariables.nope}x", "http://a/x"},
		{"unterminated kept", "http://a/${stageVariables.v", "http://a/${stageVariables.v"},
		{"placeholders untouched", "http://a/{id}", "http://a/{id}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := substituteStageVariables(tc.in, vars); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCompileIntegrationErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      *plans.Integration
		vars    map[string]string
		wantErr bool
	}{
		{"mock", &plans.Integration{Type: plans.IntegrationMock}, nil, false},
		{"proxy", &plans.Integration{Type: plans.IntegrationHTTPProxy, URI: "https://up.example/x/{id}"}, nil, false},
		{"host from a stage variable", &plans.Integration{Type: plans.IntegrationHTTPProxy, URI: "http://${stageVariables.h}/x"}, map[string]string{"h": "up:1"}, false},
		{"missing integration", nil, nil, true},
		{"unsupported type", &plans.Integration{Type: "AWS"}, nil, true},
		{"empty host after substitution", &plans.Integration{Type: plans.IntegrationHTTPProxy, URI: "http://${stageVariables.h}/x"}, nil, true},
		{"not http", &plans.Integration{Type: plans.IntegrationHTTPProxy, URI: "ftp://up/x"}, nil, true},
		{"userinfo", &plans.Integration{Type: plans.IntegrationHTTPProxy, URI: "http://u:p@up/x"}, nil, true},
		{"host mapping", &plans.Integration{Type: plans.IntegrationHTTPProxy, URI: "http://up/x",
			RequestParameters: map[string]string{"integration.request.header.Host": "method.request.header.X-Host"}}, nil, true},
		{"bad mapping target", &plans.Integration{Type: plans.IntegrationHTTPProxy, URI: "http://up/x",
			RequestParameters: map[string]string{"integration.response.header.X": "'a'"}}, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ig := compileIntegration(tc.in, tc.vars)
			if (ig.err != nil) != tc.wantErr {
				t.Errorf("err: got %v, want error %v", ig.err, tc.wantErr)
			}
		})
	}
}

// fuzzStage is a stage whose integrations put request data in every place
// a path can reach: a one-segment parameter, a greedy parameter and a
// path mapping from the query string.
func fuzzStage(tb testing.TB) *stageConfig {
	mapped := proxy(false, "http://up.example:8080/m/{id}")
	mapped.MethodIntegration.RequestParameters = map[string]string{"integration.request.path.id": "method.request.querystring.id"}
	return mustStage(tb, snapshot(plans.Stage{},
		res{"/one/{id}", methods(proxy(false, "http://up.example:8080/one/{id}/end"), "GET")},
		res{"/files/{proxy+}", methods(proxy(false, "http://up.example:8080/base/{proxy}"), "GET")},
		res{"/mapped", methods(mapped, "GET")},
	))
}

// FuzzTarget checks that no request path or query moves the upstream call
// off the integration's scheme and host, or out of the uri's path prefix.
func FuzzTarget(f *testing.F) {
	for _, seed := range []string{"one/42", "one/..", "one/a%2Fb", "files/a/b", "files/../x", "files/a%2f..%2fb",
		"files/%2e%2e/x", "mapped?id=..", "mapped?id=../../x", "files/a/./b", "one/%2e", "files/a%5c..%5cb", "one/a\\..\\b", "files/a\\..\\b", "mapped?id=a%2F..%2Fb",
		"files/..;/..;/admin", "files/%2e%2e;/x", "one/..;", "files/%252e%252e/x", "mapped?id=..;x", "files/.%252e;a/b"} {
		f.Add(seed)
	}
	st := fuzzStage(f)
	f.Fuzz(func(t *testing.T, raw string) {
		target, err := url.ParseRequestURI("/prod/" + raw) // as net/http parses a request line
		if err != nil {
			return
		}
		r := httptest.NewRequest("GET", "http://"+testHost+"/", nil)
		r.URL = target
		_, rest, ok := splitStagePath(target.EscapedPath())
		if !ok {
			return
		}
		var ps params
		rt := st.root.match(rest, &ps)
		if rt == nil {
			return
		}
		m := rt.lookup("GET")
		u, err := m.integ.target(r, &ps, nil)
		if err != nil {
			return
		}
		if u.Scheme != "http" || u.Host != "up.example:8080" {
			t.Fatalf("path %q: upstream %s, want http://up.example:8080", raw, u)
		}
		prefix := map[string]string{"/one/{id}": "/one/", "/files/{proxy+}": "/base/", "/mapped": "/m/"}[rt.path]
		back, err := url.Parse(u.EscapedPath()) // the request line's path, as the upstream reads it
		if err != nil || back.Host != "" || back.Scheme != "" {
			t.Fatalf("path %q: upstream path %q does not parse back as a path (%v)", raw, u.EscapedPath(), err)
		}
		if clean := path.Clean(back.Path); !strings.HasPrefix(clean+"/", prefix) {
			t.Fatalf("path %q: upstream path %q (clean %q) left %q", raw, back.Path, clean, prefix)
		}
		if clean := path.Clean(servletPath(u.EscapedPath())); !strings.HasPrefix(clean+"/", prefix) {
			t.Fatalf("path %q: upstream path %q read as a servlet container would (%q) left %q", raw, u.EscapedPath(), clean, prefix)
		}
		if rt.path == "/one/{id}" && strings.Count(back.EscapedPath(), "/") != 3 {
			t.Fatalf("path %q: {id} spans segments in %q", raw, back.EscapedPath())
		}
	})
}

// servletPath reads an escaped path as the most lenient upstream might:
// backslashes as slashes, each segment cut at ";" (path parameters) and
// percent-decoded up to three times.
func servletPath(escaped string) string {
	segs := strings.Split(strings.ReplaceAll(escaped, "\\", "/"), "/")
	for i, seg := range segs {
		for range 3 {
			seg, _, _ = strings.Cut(seg, ";")
			dec, err := url.PathUnescape(seg)
			if err != nil {
				break
			}
			seg = dec
		}
		seg, _, _ = strings.Cut(seg, ";")
		segs[i] = seg
	}
	return strings.Join(segs, "/")
}

func TestTargetQueryOrder(t *testing.T) {
	t.Parallel()
	ig := compileIntegration(&plans.Integration{Type: plans.IntegrationHTTPProxy, URI: "http://up/x?a=1"}, nil)
	r := httptest.NewRequest(http.MethodGet, "http://"+testHost+"/prod/x?b=2&a=3", nil)
	u, err := ig.target(r, &params{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := u.String(), "http://up/x?a=1&b=2&a=3"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
