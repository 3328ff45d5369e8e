package cache

import (
	"iter"
	"net/http"
	"strings"
)

// Directives yields the directives of h's Cache-Control fields in order
// (RFC 9111 section 5.2): each name lowercased, with its value unquoted,
// "" when it has none. Commas inside a quoted value do not split it;
// empty list elements are skipped.
func Directives(h http.Header) iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for _, field := range h.Values("Cache-Control") {
			for len(field) > 0 {
				var d string
				d, field = nextDirective(field)
				name, value, _ := strings.Cut(d, "=")
				name = strings.ToLower(strings.TrimSpace(name))
				if name == "" {
					continue
				}
				if !yield(name, unquote(strings.TrimSpace(value))) {
					return
				}
			}
		}
	}
}

// nextDirective splits s at its first comma outside a quoted string.
func nextDirective(s string) (directive, rest string) {
	quoted := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && quoted:
			i++
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}

// unquote returns a quoted-string's content with its escapes undone, or v
// itself when it is a token.
func unquote(v string) string {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return v
	}
	v = v[1 : len(v)-1]
	if !strings.Contains(v, `\`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			i++
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// Has reports whether h's Cache-Control carries any of the directives
// names (lowercase).
func Has(h http.Header, names ...string) bool {
	for name := range Directives(h) {
		for _, n := range names {
			if name == n {
				return true
			}
		}
	}
	return false
}
