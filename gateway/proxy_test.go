package gateway

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"tollgate/plans"
)

// echoed is what the test upstream saw of a request.
type echoed struct {
	Method  string      `json:"method"`
	Path    string      `json:"path"`
	RawPath string      `json:"rawPath"`
	Query   string      `json:"query"`
	Host    string      `json:"host"`
	Header  http.Header `json:"header"`
	Body    int         `json:"bodyBytes"`
}

// mustUpstream starts an upstream that echoes the request as JSON and
// sends headers the gateway owns (which must not reach the client). Path
// /slow waits for the request's end.
func mustUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return
		}
		n, _ := io.Copy(io.Discard, r.Body)
		h := w.Header()
		h.Set("X-RateLimit-Limit", "999")
		h.Set("RateLimit", "bogus")
		h.Set("X-Cache", "Hit")
		h.Set("X-Upstream", "yes")
		h.Set("X-Amzn-Requestid", "upstream-id")
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(echoed{Method: r.Method, Path: r.URL.Path, RawPath: r.URL.EscapedPath(),
			Query: r.URL.RawQuery, Host: r.Host, Header: r.Header, Body: int(n)})
	}))
	t.Cleanup(up.Close)
	return up
}

// proxySnapshot routes to up through stage variables.
func proxySnapshot(up *httptest.Server) *plans.Snapshot {
	base := "http://${stageVariables.upstream}"
	mapped := proxy(false, base+"/m/{id}?fixed=1")
	mapped.MethodIntegration.RequestParameters = map[string]string{
		"integration.request.path.id":          "method.request.querystring.pid",
		"integration.request.header.X-Tenant":  "stageVariables.tenant",
		"integration.request.querystring.lit":  "'yes'",
		"integration.request.header.X-From":    "method.request.header.X-Client",
		"integration.request.querystring.path": "method.request.path.petId",
	}
	slow := proxy(false, base+"/slow")
	slow.MethodIntegration.TimeoutInMillis = 100
	fixed := proxy(false, base+"/fixed")
	fixed.MethodIntegration.HTTPMethod = "POST"
	upload := proxy(false, base+"/post")
	upload.MethodIntegration.TimeoutInMillis = 200
	get := proxy(false, base+"/get")
	get.MethodIntegration.HTTPMethod = "GET"
	snap := snapshot(plans.Stage{Variables: map[string]string{"upstream": strings.TrimPrefix(up.URL, "http://"), "tenant": "acme"}},
		res{"/pets/{petId}", methods(proxy(false, base+"/v1/pets/{petId}"), "GET")},
		res{"/pets/{petId}/mapped", methods(mapped, "GET")},
		res{"/files/{proxy+}", methods(proxy(false, base+"/static/{proxy}"), "ANY")},
		res{"/keyed", methods(proxy(true, base+"/k"), "GET")},
		res{"/post", methods(proxy(false, base+"/post"), "POST")},
		res{"/slow", methods(slow, "GET")},
		res{"/down", methods(proxy(false, "http://127.0.0.1:1/x"), "GET")},
		res{"/fixed", methods(fixed, "ANY")},
		res{"/get", methods(get, "GET")},
		res{"/upload", methods(upload, "POST")},
		res{"/novar", methods(proxy(false, "http://${stageVariables.missing}/x"), "GET")},
	)
	addPlan(snap, plans.UsagePlan{ID: "plan01", Throttle: &plans.Throttle{RateLimit: 10, BurstLimit: 10}})
	return snap
}

func proxyGateway(t *testing.T) *testGateway {
	t.Helper()
	tg := mustGateway(t, proxySnapshot(mustUpstream(t)), nil)
	addTestKeys(tg.keys)
	return tg
}

// echo decodes the upstream's echo from a response.
func echo(t *testing.T, got response) echoed {
	t.Helper()
	if got.status != http.StatusCreated {
		t.Fatalf("status: got %d, want 201 from the upstream (body %s)", got.status, got.body)
	}
	var e echoed
	if err := json.Unmarshal([]byte(got.body), &e); err != nil {
		t.Fatalf("echo body %q: %v", got.body, err)
	}
	return e
}

func TestProxyPaths(t *testing.T) {
	t.Parallel()
	tg := proxyGateway(t)
	tests := []struct {
		name, method, path string
		wantRaw, wantQuery string
		wantMethod         string
	}{
		{"param", "GET", "/prod/pets/42", "/v1/pets/42", "", "GET"},
		{"param with space", "GET", "/prod/pets/a%20b", "/v1/pets/a%20b", "", "GET"},
		{"param with encoded slash stays one segment", "GET", "/prod/pets/a%2Fb", "/v1/pets/a%2Fb", "", "GET"},
		{"query forwarded", "GET", "/prod/pets/1?x=1&x=2&y=%20", "/v1/pets/1", "x=1&x=2&y=%20", "GET"},
		{"greedy keeps slashes", "GET", "/prod/files/a/b/c.txt", "/static/a/b/c.txt", "", "GET"},
		{"greedy keeps escapes", "DELETE", "/prod/files/a%20b/c", "/static/a%20b/c", "", "DELETE"},
		{"dots inside a segment are not a step", "GET", "/prod/files/a..;b/..c/c..;d", "/static/a..;b/..c/c..;d", "", "GET"},
		{"a percent sign that decodes to no dot", "GET", "/prod/pets/100%25", "/v1/pets/100%25", "", "GET"},
		{"mappings", "GET", "/prod/pets/7/mapped?pid=99", "/m/99", "fixed=1&lit=yes&path=7&pid=99", "GET"},
		{"integration method", "GET", "/prod/fixed", "/fixed", "", "POST"},
		{"HEAD to a GET integration stays HEAD", "HEAD", "/prod/get", "/get", "", "HEAD"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tg.do(t, tc.method, tc.path, "X-Client", "c1")
			if tc.method == "HEAD" {
				if got.status != http.StatusCreated {
					t.Fatalf("HEAD status: got %d, want 201", got.status)
				}
				return
			}
			e := echo(t, got)
			if e.RawPath != tc.wantRaw {
				t.Errorf("upstream path: got %q, want %q", e.RawPath, tc.wantRaw)
			}
			if q, _ := url.ParseQuery(e.Query); q.Encode() != mustSortQuery(tc.wantQuery) {
				t.Errorf("upstream query: got %q, want %q", e.Query, tc.wantQuery)
			}
			if e.Method != tc.wantMethod {
				t.Errorf("upstream method: got %s, want %s", e.Method, tc.wantMethod)
			}
		})
	}
	e := echo(t, tg.do(t, "GET", "/prod/pets/7/mapped?pid=1", "X-Client", "c1"))
	if e.Header.Get("X-Tenant") != "acme" || e.Header.Get("X-From") != "c1" {
		t.Errorf("header mappings: got X-Tenant %q X-From %q, want acme c1", e.Header.Get("X-Tenant"), e.Header.Get("X-From"))
	}
}

func mustSortQuery(q string) string {
	v, _ := url.ParseQuery(q)
	return v.Encode()
}

func TestProxyRefusesEscapingPaths(t *testing.T) {
	t.Parallel()
	tg := proxyGateway(t)
	for _, path := range []string{
		"/prod/pets/..",
		"/prod/pets/%2e%2e",
		"/prod/pets/.",
		"/prod/files/a/../../etc/passwd",
		"/prod/files/..",
		"/prod/files/a/%2E%2E/b",
		"/prod/files/a%2Fb",
		"/prod/files/a/%2f..%2fb",
		"/prod/files/./a",
		"/prod/pets/..%2F..%2Fadmin",
		"/prod/pets/a%2F..%2Fb",
		"/prod/files/a%5C..%5Cb",
		// Path parameters (";...") that servlet containers strip, and
		// encodings an upstream may decode once more.
		"/prod/files/..;/..;/admin",
		"/prod/files/%2e%2e;/x",
		"/prod/files/a/..;jsessionid=1/b",
		"/prod/files/.;/a",
		"/prod/files/a/..%3b/b",
		"/prod/files/%252e%252e/x",
		"/prod/files/.%252e/x",
		"/prod/pets/..;",
		"/prod/pets/%2e%2e;x",
		"/prod/pets/.;",
		"/prod/pets/%252e%252e",
	} {
		t.Run(path, func(t *testing.T) {
			wantError(t, tg.do(t, "GET", path), 400, "Bad Request", "BadRequestException")
		})
	}
}

func TestProxyHeaders(t *testing.T) {
	t.Parallel()
	tg := proxyGateway(t)
	got := tg.do(t, "GET", "/prod/keyed",
		"x-api-key", goodKey,
		"X-Tollgate-Api-Key-Id", "forged",
		"X-Forwarded-For", "203.0.113.1",
		"Connection", "X-Hop",
		"X-Hop", "1",
		"X-Kept", "kept",
	)
	e := echo(t, got)
	upHost := strings.TrimPrefix(tg.SnapshotVar(t, "upstream"), "http://")
	checks := []struct{ name, got, want string }{
		{"Host", e.Host, upHost},
		{"x-api-key", e.Header.Get("X-Api-Key"), ""},
		{"X-Tollgate-Api-Key-Id", strings.Join(e.Header.Values("X-Tollgate-Api-Key-Id"), ","), "key0000001"},
		{"X-Forwarded-For", e.Header.Get("X-Forwarded-For"), "203.0.113.1, 127.0.0.1"},
		{"X-Forwarded-Host", e.Header.Get("X-Forwarded-Host"), testHost},
		{"X-Forwarded-Proto", e.Header.Get("X-Forwarded-Proto"), "http"},
		{"hop-by-hop X-Hop", e.Header.Get("X-Hop"), ""},
		{"X-Kept", e.Header.Get("X-Kept"), "kept"},
		{"response X-Upstream", got.header.Get("X-Upstream"), "yes"},
		{"response X-Cache", got.header.Get("X-Cache"), ""},
		{"response x-amzn-RequestId count", strconv.Itoa(len(got.header.Values("x-amzn-RequestId"))), "1"},
		{"response x-amzn-RequestId is the gateway's", strconv.FormatBool(got.header.Get("x-amzn-RequestId") == "upstream-id"), "false"},
		{"response X-RateLimit-Limit", strings.Join(got.header.Values("X-RateLimit-Limit"), ","), "10"},
		{"response RateLimit", got.header.Get("RateLimit"), `"throttle";r=9;t=1`},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, c.got, c.want)
		}
	}
	open := tg.do(t, "GET", "/prod/pets/1", "x-api-key", goodKey, "X-Tollgate-Api-Key-Id", "forged")
	e = echo(t, open)
	if e.Header.Get("X-Api-Key") != "" || e.Header.Get("X-Tollgate-Api-Key-Id") != "" {
		t.Errorf("unkeyed method: upstream got x-api-key %q, key id %q; want neither", e.Header.Get("X-Api-Key"), e.Header.Get("X-Tollgate-Api-Key-Id"))
	}
	if open.header.Get("X-RateLimit-Limit") != "" {
		t.Errorf("unkeyed method: upstream's X-RateLimit-Limit reached the client: %q", open.header.Get("X-RateLimit-Limit"))
	}
}

// SnapshotVar returns a stage variable of the test stage.
func (tg *testGateway) SnapshotVar(t *testing.T, name string) string {
	t.Helper()
	return tg.cfg.Load().apis[testAPI].stages[testStage].vars[name]
}

func TestProxyTrustedForwarding(t *testing.T) {
	t.Parallel()
	up := mustUpstream(t)
	tg := mustGateway(t, proxySnapshot(up), func(o *Options) {
		o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	})
	e := echo(t, tg.do(t, "GET", "/prod/pets/1", "X-Forwarded-For", "198.51.100.1, 203.0.113.1", "X-Forwarded-Proto", "https"))
	if got, want := e.Header.Get("X-Forwarded-For"), "198.51.100.1, 203.0.113.1, 127.0.0.1"; got != want {
		t.Errorf("X-Forwarded-For: got %q, want %q", got, want)
	}
	if got := e.Header.Get("X-Forwarded-Proto"); got != "https" {
		t.Errorf("X-Forwarded-Proto from a trusted proxy: got %q, want https", got)
	}
}

func TestProxyFailures(t *testing.T) {
	t.Parallel()
	tg := proxyGateway(t)
	start := time.Now()
	wantError(t, tg.do(t, "GET", "/prod/slow"), 504, "Endpoint request timed out", "IntegrationTimeoutException")
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("timeout took %v, want about 100ms", d)
	}
	wantError(t, tg.do(t, "GET", "/prod/down"), 502, "Bad Gateway", "BadGatewayException")
	wantError(t, tg.do(t, "GET", "/prod/novar"), 500, "Internal server error", "InternalServerErrorException")
}

func TestURITooLong(t *testing.T) {
	t.Parallel()
	tg := proxyGateway(t)
	wantError(t, tg.do(t, "GET", "/prod/pets/"+strings.Repeat("a", MaxURLBytes)), 414, "Request-URI Too Long", "UriTooLongException")
	wantError(t, tg.do(t, "GET", "/prod/pets/1?q="+strings.Repeat("a", MaxURLBytes)), 414, "Request-URI Too Long", "UriTooLongException")
	if got := tg.do(t, "GET", "/prod/pets/"+strings.Repeat("a", MaxURLBytes-100)); got.status != http.StatusCreated {
		t.Errorf("URL just under the limit: got %d, want 201", got.status)
	}
}

func TestBodyTooLargeByLength(t *testing.T) {
	t.Parallel()
	tg := proxyGateway(t)
	conn, err := net.Dial("tcp", strings.TrimPrefix(tg.http.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /prod/post HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", testHost, MaxBodyBytes+1)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	wantError(t, response{status: resp.StatusCode, header: resp.Header, body: string(b)}, 413, "Request Too Long", "RequestTooLargeException")
}

func TestBodyChunkedCutOff(t *testing.T) {
	t.Parallel()
	tg := proxyGateway(t)
	body := io.MultiReader(strings.NewReader(strings.Repeat("x", MaxBodyBytes)), strings.NewReader("y"))
	got := tg.doBody(t, "POST", "/prod/post", io.NopCloser(body)) // no length: chunked
	wantError(t, got, 413, "Request Too Long", "RequestTooLargeException")
	e := echo(t, tg.doBody(t, "POST", "/prod/post", io.NopCloser(strings.NewReader(strings.Repeat("x", MaxBodyBytes)))))
	if e.Body != MaxBodyBytes {
		t.Errorf("body at the limit: upstream got %d bytes, want %d", e.Body, MaxBodyBytes)
	}
}

// Every spelling of the headers through which the gateway vouches for a
// caller (its own X-Tollgate-* namespace, X-Real-Ip, Forwarded,
// X-Forwarded-*, X-Api-Key) with "_" for "-" or in any case is removed
// before the upstream sees it: CGI and WSGI upstreams read X_Tollgate_Api_Key_Id
// and X-Tollgate-Api-Key-Id as the same variable.
// X-Real-Ip carries the client address the gateway determined.
func TestProxyStripsSpoofedIdentityHeaders(t *testing.T) {
	t.Parallel()
	tg := proxyGateway(t)
	spoofs := []string{
		"X_Tollgate_Api_Key_Id", "x_tollgate_api_key_id", "X-Tollgate_Api-Key_Id", "X-TOLLGATE-PLAN", "X_Tollgate_Anything",
		"X_Forwarded_For", "X_Forwarded_Host", "x_forwarded_proto", "X_Real_Ip", "X-Real-Ip", "Forwarded", "X_Api_Key",
	}
	for _, path := range []string{"/prod/keyed", "/prod/pets/1"} {
		req, err := http.NewRequest("GET", tg.http.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = testHost
		req.Header.Set("x-api-key", goodKey)
		for _, name := range spoofs {
			req.Header[name] = []string{"spoof"}
		}
		req.Header["X-Kept_Header"] = []string{"kept"}
		resp, err := tg.http.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		e := echo(t, response{status: resp.StatusCode, header: resp.Header, body: string(b)})
		for name, vs := range e.Header {
			for _, v := range vs {
				if strings.Contains(v, "spoof") {
					t.Errorf("%s: upstream got %s: %q", path, name, v)
				}
			}
		}
		if got := e.Header.Get("X-Real-Ip"); got != "127.0.0.1" {
			t.Errorf("%s: X-Real-Ip: got %q, want the client address 127.0.0.1", path, got)
		}
		if got := e.Header.Get("X-Kept_header"); got != "kept" {
			t.Errorf("%s: an ordinary header with an underscore: got %q, want it forwarded as sent", path, got)
		}
		wantID := map[string]string{"/prod/keyed": "key0000001", "/prod/pets/1": ""}[path]
		if got := strings.Join(e.Header.Values(HeaderAPIKeyID), ","); got != wantID {
			t.Errorf("%s: %s: got %q, want %q", path, HeaderAPIKeyID, got, wantID)
		}
	}
}
