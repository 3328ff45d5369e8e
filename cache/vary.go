package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
)

// VaryNames returns the request header names a response's Vary lists,
// lowercased, sorted and without duplicates, and whether it lists "*"
// (then the response is never stored).
func VaryNames(h http.Header) (names []string, star bool) {
	for _, v := range h.Values("Vary") {
		for _, n := range strings.Split(v, ",") {
			n = strings.ToLower(strings.TrimSpace(n))
			switch n {
			case "":
			case "*":
				star = true
			default:
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names), star
}

// VaryValue is the value of request header name as the cache compares it
// for Vary: the header's lines joined by ", " and trimmed, except
// Accept-Encoding, normalised by AcceptEncoding, and credentials
// (credential), replaced by "sha256:" and the hex SHA-256 of that value. ok is false when the
// request does not carry the header (absent differs from empty).
func VaryValue(h http.Header, name string) (v string, ok bool) {
	vals := h.Values(name)
	if len(vals) == 0 {
		return "", false
	}
	if strings.EqualFold(name, "accept-encoding") {
		return AcceptEncoding(vals), true
	}
	v = strings.TrimSpace(strings.Join(vals, ", "))
	if credential(name) { // the cache Redis never sees a credential (docs/behaviour.md, "Response cache")
		sum := sha256.Sum256([]byte(v))
		return "sha256:" + hex.EncodeToString(sum[:]), true
	}
	return v, true
}

// credential reports whether header name carries a secret: x-api-key,
// Authorization or Cookie.
func credential(name string) bool {
	return strings.EqualFold(name, "x-api-key") || strings.EqualFold(name, "authorization") || strings.EqualFold(name, "cookie")
}

// AcceptEncoding normalises Accept-Encoding lines to the set of the
// compressed encodings the gateway tells apart that the client accepts:
// "br,gzip", "br", "gzip" or "identity". A response stored for one class
// is served only to clients of the same class, so a gzip body never
// reaches a client that did not ask for gzip. "*" accepts both; q=0
// refuses; x-gzip counts as gzip.
func AcceptEncoding(lines []string) string {
	var br, gzip bool
	for _, line := range lines {
		for _, item := range strings.Split(line, ",") {
			coding, q, _ := strings.Cut(item, ";")
			if refused(q) {
				continue
			}
			switch strings.ToLower(strings.TrimSpace(coding)) {
			case "br":
				br = true
			case "gzip", "x-gzip":
				gzip = true
			case "*":
				br, gzip = true, true
			}
		}
	}
	switch {
	case br && gzip:
		return "br,gzip"
	case br:
		return "br"
	case gzip:
		return "gzip"
	}
	return "identity"
}

// refused reports whether a coding's parameters say q=0.
func refused(params string) bool {
	for _, p := range strings.Split(params, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		if strings.EqualFold(k, "q") {
			v = strings.TrimRight(strings.TrimSpace(v), "0")
			return v == "0." || v == "0" || v == ""
		}
	}
	return false
}

// Variant names the variant of an entry for the request header h under
// the Vary names (from VaryNames): "v", then per name "\n<name>:<value>"
// or "\n<name>!" when the request lacks the header. Two requests with the
// same Variant may be served the same response. The lookup script builds
// the same string in Redis (lookup.lua); the two must agree.
func Variant(names []string, h http.Header) string {
	var b strings.Builder
	b.WriteString("v")
	for _, n := range names {
		b.WriteString("\n")
		b.WriteString(n)
		if v, ok := VaryValue(h, n); ok {
			b.WriteString(":")
			b.WriteString(v)
		} else {
			b.WriteString("!")
		}
	}
	return b.String()
}
