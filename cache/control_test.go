package cache

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// directiveList collects Directives(h) as "name=value" strings.
func directiveList(h http.Header) []string {
	var out []string
	for name, value := range Directives(h) {
		out = append(out, name+"="+value)
	}
	return out
}

func TestDirectives(t *testing.T) {
	cases := []struct {
		name   string
		fields []string
		want   []string
	}{
		{"none", nil, nil},
		{"names lowercased, values kept", []string{"Max-Age=60, No-Store"}, []string{"max-age=60", "no-store="}},
		{"spaces and empty elements", []string{" , public ,, s-maxage = 5 ,"}, []string{"public=", "s-maxage=5"}},
		{"quoted value with a comma", []string{`no-cache="Set-Cookie, X-A", private`}, []string{"no-cache=Set-Cookie, X-A", "private="}},
		{"escapes in a quoted value", []string{`x="a\"b\\c", y`}, []string{`x=a"b\c`, "y="}},
		{"several fields in order", []string{"a=1", "b=2, c"}, []string{"a=1", "b=2", "c="}},
		{"unterminated quote runs to the end", []string{`a="1, b=2`}, []string{`a="1, b=2`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := directiveList(http.Header{"Cache-Control": c.fields}); !slices.Equal(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestHas(t *testing.T) {
	h := http.Header{"Cache-Control": {`max-age=5, no-cache="Private"`}}
	if !Has(h, "no-store", "no-cache") || Has(h, "private", "no-store") {
		t.Errorf("Has: got %v, %v, want true, false", Has(h, "no-store", "no-cache"), Has(h, "private", "no-store"))
	}
}

// FuzzDirectives: any field parses without panicking into lowercase,
// non-empty names; and when every name is a token, writing the directives
// back (values quoted) and parsing again gives the same list.
func FuzzDirectives(f *testing.F) {
	for _, s := range []string{"max-age=60, no-store", `no-cache="a, b", private`, `x="a\"b\\c"`, `a="1, b=2`, ",,", `"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, field string) {
		first := directiveList(http.Header{"Cache-Control": {field}})
		parts := make([]string, 0, len(first))
		for _, d := range first {
			name, value, _ := strings.Cut(d, "=")
			if name == "" || name != strings.ToLower(name) {
				t.Fatalf("name %q: want lowercase and non-empty", name)
			}
			if !isToken(name) {
				return
			}
			parts = append(parts, name+`="`+strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(value)+`"`)
		}
		again := directiveList(http.Header{"Cache-Control": {strings.Join(parts, ", ")}})
		if !slices.Equal(again, first) {
			t.Fatalf("written back as %q: got %q, want %q", strings.Join(parts, ", "), again, first)
		}
	})
}

// isToken reports whether s is an RFC 9110 token.
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return s != ""
}
