package gateway

import (
	"net/url"
	"strings"
	"testing"

	"tollgate/plans"
)

// FuzzBasePathMatch checks the base path matcher against its definition:
// the mapping it picks is the longest base path whose segments are the
// first segments of the request path (compared decoded), "(none)" when no
// other is, and the rest it returns is the path after those segments.
func FuzzBasePathMatch(f *testing.F) {
	bases := []string{plans.NoBasePath, "v1", "v1/orders", "v1/orders/items", "a$b", "x.y"}
	d := &plans.DomainConfig{DomainName: "api.example.test"}
	for _, bp := range bases {
		d.Mappings = append(d.Mappings, plans.BasePathMapping{BasePath: bp, RestApiID: "api" + bp})
	}
	dr := compileDomainRoute(d)
	for _, p := range []string{"/", "/v1", "/v1/", "/v1/orders/7", "/%76%31/x", "/v1x", "//v1", "/v1/orders/items/z/", "/a%24b/c", "/x.y"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, escaped string) {
		if !strings.HasPrefix(escaped, "/") {
			escaped = "/" + escaped
		}
		m, rest, ok := dr.match(escaped)
		if strings.Contains(escaped, "//") {
			if ok {
				t.Fatalf("%q: matched %v despite an empty segment", escaped, m)
			}
			return
		}
		if !ok || m == nil {
			t.Fatalf("%q: no match, but (none) is mapped", escaped)
		}
		segs := strings.Split(strings.Trim(escaped, "/"), "/")
		want, wantLen := plans.NoBasePath, 0
		for _, bp := range bases[1:] {
			bs := strings.Split(bp, "/")
			if len(bs) <= wantLen || len(bs) > len(segs) {
				continue
			}
			match := true
			for i, b := range bs {
				if dec, err := url.PathUnescape(segs[i]); err != nil || dec != b {
					match = false
					break
				}
			}
			if match {
				want, wantLen = bp, len(bs)
			}
		}
		if m.basePath != want {
			t.Fatalf("%q: matched %q, want %q", escaped, m.basePath, want)
		}
		wantRest := strings.TrimSuffix(strings.Join(segs[wantLen:], "/"), "/")
		if strings.Trim(escaped, "/") == "" {
			wantRest = ""
		}
		if rest != wantRest {
			t.Fatalf("%q: rest %q, want %q", escaped, rest, wantRest)
		}
	})
}
