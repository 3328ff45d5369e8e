package cache

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// baseRequest is the request the key tests vary.
func baseRequest() *Request {
	return &Request{
		APIID: "a1b2c3d4e5", Stage: "prod", Generation: 0, Method: "GET",
		Host: "a1b2c3d4e5.execute-api.localhost", Path: "/search", RawQuery: "q=one",
		Header:    http.Header{"Accept-Language": {"en"}},
		PathParam: func(string) (string, bool) { return "", false },
	}
}

var testParams = mustParams([]string{
	"method.request.querystring.q", "method.request.header.Accept-Language", "method.request.path.id",
})

func mustParams(list []string) []Param {
	p, err := ParseParams(list)
	if err != nil {
		panic(err)
	}
	return p
}

func TestKeySameOrDifferent(t *testing.T) {
	cases := []struct {
		name string
		edit func(r *Request)
		same bool
	}{
		{"unchanged", func(*Request) {}, true},
		{"unlisted query parameter", func(r *Request) { r.RawQuery = "q=one&utm_source=x" }, true},
		{"parameter order", func(r *Request) { r.RawQuery = "utm=1&q=one" }, true},
		{"percent-encoding of a value", func(r *Request) { r.RawQuery = "q=%6Fne" }, true},
		{"percent-encoding of a name", func(r *Request) { r.RawQuery = "%71=one" }, true},
		{"host case", func(r *Request) { r.Host = "A1B2C3D4E5.execute-api.LOCALHOST" }, true},
		{"unlisted header", func(r *Request) { r.Header = http.Header{"Accept-Language": {"en"}, "X-Other": {"1"}} }, true},
		{"listed header value whitespace", func(r *Request) { r.Header = http.Header{"Accept-Language": {" en "}} }, true},
		{"listed query value", func(r *Request) { r.RawQuery = "q=two" }, false},
		{"listed query empty vs present", func(r *Request) { r.RawQuery = "q=" }, false},
		{"listed query absent", func(r *Request) { r.RawQuery = "" }, false},
		{"listed query repeated", func(r *Request) { r.RawQuery = "q=one&q=one" }, false},
		{"listed header value", func(r *Request) { r.Header = http.Header{"Accept-Language": {"fr"}} }, false},
		{"listed header absent", func(r *Request) { r.Header = http.Header{} }, false},
		{"listed header empty", func(r *Request) { r.Header = http.Header{"Accept-Language": {""}} }, false},
		{"listed path parameter", func(r *Request) { r.PathParam = func(string) (string, bool) { return "1", true } }, false},
		{"path", func(r *Request) { r.Path = "/search/" }, false},
		{"path escaping as received", func(r *Request) { r.Path = "/sea%72ch" }, false},
		{"method", func(r *Request) { r.Method = "POST" }, false},
		{"stage", func(r *Request) { r.Stage = "beta" }, false},
		{"api", func(r *Request) { r.APIID = "zzzzzzzzzz" }, false},
		{"generation", func(r *Request) { r.Generation = 1 }, false},
		{"host", func(r *Request) { r.Host = "other.execute-api.localhost" }, false},
	}
	base := Digest(testParams, baseRequest())
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := baseRequest()
			c.edit(r)
			if got := Digest(testParams, r) == base; got != c.same {
				t.Errorf("same key: got %v, want %v", got, c.same)
			}
		})
	}
}

func TestDigestShape(t *testing.T) {
	k := Digest(nil, baseRequest())
	if len(k) != 64 || strings.Trim(k, "0123456789abcdef") != "" {
		t.Errorf("digest: got %q, want 64 hex digits", k)
	}
}

func TestParseParams(t *testing.T) {
	cases := []struct {
		name    string
		in      []string
		want    []Param
		wantErr bool
	}{
		{"none", nil, []Param{}, false},
		{"sorted and lowercased headers", []string{"method.request.querystring.q", "method.request.header.X-A", "method.request.path.id"},
			[]Param{{LocHeader, "x-a"}, {LocPath, "id"}, {LocQuery, "q"}}, false},
		{"duplicates", []string{"method.request.header.x-a", "method.request.header.X-A"}, []Param{{LocHeader, "x-a"}}, false},
		{"bad location", []string{"method.request.body.x"}, nil, true},
		{"no name", []string{"method.request.querystring."}, nil, true},
		{"wrong prefix", []string{"integration.request.header.x"}, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseParams(c.in)
			if (err != nil) != c.wantErr {
				t.Fatalf("error: got %v, want error %v", err, c.wantErr)
			}
			if err == nil && !equalParams(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func equalParams(a, b []Param) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FuzzKey checks the two promises of the key: requests that differ in a
// listed parameter never share an entry, and requests that differ only in
// unlisted ones always do.
func FuzzKey(f *testing.F) {
	f.Add("one", "two", "x", "y", "en", "fr")
	f.Add("", "", "a b", "a+b", "", " ")
	f.Add("%41", "A", "1", "1", "en", "en")
	f.Fuzz(func(t *testing.T, q1, q2, u1, u2, h1, h2 string) {
		params := mustParams([]string{"method.request.querystring.q", "method.request.header.X-Lang"})
		mk := func(q, u, h string) *Request {
			r := baseRequest()
			r.RawQuery = "q=" + url.QueryEscape(q) + "&u=" + url.QueryEscape(u)
			r.Header = http.Header{"X-Lang": {h}, "X-Unlisted": {u}}
			return r
		}
		a := Digest(params, mk(q1, u1, h1))
		if b := Digest(params, mk(q1, u2, h1)); a != b {
			t.Errorf("unlisted parameters %q vs %q changed the key", u1, u2)
		}
		differ := q1 != q2 || trimmed(h1) != trimmed(h2)
		if c := Digest(params, mk(q2, u1, h2)); differ && a == c {
			t.Errorf("listed parameters (%q,%q) vs (%q,%q) share a key", q1, h1, q2, h2)
		} else if !differ && a != c {
			t.Errorf("equal listed parameters (%q,%q) vs (%q,%q) got different keys", q1, h1, q2, h2)
		}
	})
}

// trimmed is a header value as the key compares it.
func trimmed(s string) string {
	return strings.TrimSpace(s) // as paramValues
}
