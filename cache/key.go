package cache

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Locations of a cache key parameter, as in
// "method.request.<location>.<name>".
const (
	LocQuery  = "querystring"
	LocHeader = "header"
	LocPath   = "path"
)

// Param is one of an integration's cacheKeyParameters: where the value
// comes from and its name. Header names are lowercase (headers match
// case-insensitively); query and path names are case-sensitive.
type Param struct {
	Loc, Name string
}

// ParseParams parses an integration's cacheKeyParameters
// ("method.request.querystring.q", "method.request.header.Accept-Language",
// "method.request.path.id") into canonical order (by location, then name),
// without duplicates. An entry of another form is an error naming it
// (plans.Integration.Validate refuses those before they reach a stage).
func ParseParams(list []string) ([]Param, error) {
	out := make([]Param, 0, len(list))
	for _, s := range list {
		rest, ok := strings.CutPrefix(s, "method.request.")
		loc, name, found := strings.Cut(rest, ".")
		if !ok || !found || name == "" || loc != LocQuery && loc != LocHeader && loc != LocPath {
			return nil, fmt.Errorf("cache: cache key parameter %q is not method.request.{querystring|header|path}.name", s)
		}
		if loc == LocHeader {
			name = strings.ToLower(name)
		}
		out = append(out, Param{Loc: loc, Name: name})
	}
	slices.SortFunc(out, func(a, b Param) int {
		if c := strings.Compare(a.Loc, b.Loc); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return slices.Compact(out), nil
}

// HasHeader reports whether the header name (any case) is a parameter.
func HasHeader(params []Param, name string) bool {
	for _, p := range params {
		if p.Loc == LocHeader && strings.EqualFold(p.Name, name) {
			return true
		}
	}
	return false
}

// Request is the part of a request a cache key is built from.
type Request struct {
	// APIID and Stage name the stage whose cache holds the entry.
	APIID, Stage string
	// Generation is the stage's cache generation (bumped by every flush).
	Generation int64
	// Method is the request method whose entry is meant; HEAD requests
	// use "GET" (they are answered from the GET entry).
	Method string
	// Host is the Host the client sent (lowercased by Key).
	Host string
	// Path is the request path as received (still escaped).
	Path string
	// RawQuery is the query string as received, without "?".
	RawQuery string
	// Header holds the request headers.
	Header http.Header
	// PathParam returns the percent-decoded value of a path parameter
	// and whether the matched resource has it; nil means none.
	PathParam func(name string) (string, bool)
}

// keyVersion starts every canonical form; changing the form changes it,
// so old entries are never misread.
const keyVersion = "tollgate-cache-v1"

// Digest returns the digest that names the entry of req under the cache
// key parameters params (from ParseParams): 64 hex digits, the SHA-256 of
// the canonical form of API id, stage, generation, method, lowercased
// Host, path as received, then each parameter in canonical order with its
// values. Values are percent-decoded (query and path), kept in the order
// received when repeated, and an absent parameter differs from an empty
// one; parameters not in params never count. Digest is pure; the engine
// turns it into a Redis key name (keyspace.Space.CacheEntry).
func Digest(params []Param, req *Request) string {
	var buf [512]byte
	b := appendCanonical(buf[:0], params, req)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// appendCanonical appends the unambiguous (length-prefixed) canonical form
// of the key's inputs to b.
func appendCanonical(b []byte, params []Param, req *Request) []byte {
	b = appendField(b, keyVersion)
	b = appendField(b, req.APIID)
	b = appendField(b, req.Stage)
	b = appendField(b, strconv.FormatInt(req.Generation, 10))
	b = appendField(b, req.Method)
	b = appendField(b, strings.ToLower(req.Host))
	b = appendField(b, req.Path)
	for _, p := range params {
		b = appendField(b, p.Loc)
		b = appendField(b, p.Name)
		vals, present := paramValues(p, req)
		if !present {
			b = append(b, 0)
			continue
		}
		b = append(b, 1)
		b = binary.AppendUvarint(b, uint64(len(vals)))
		for _, v := range vals {
			b = appendField(b, v)
		}
	}
	return b
}

// appendField appends s with its length in front.
func appendField(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// paramValues returns the values of p in req, in order, and whether it is
// present at all.
func paramValues(p Param, req *Request) ([]string, bool) {
	switch p.Loc {
	case LocQuery:
		return queryValues(req.RawQuery, p.Name)
	case LocHeader:
		raw := req.Header.Values(p.Name) // the request's own slice: copy
		vals := make([]string, len(raw))
		for i, v := range raw {
			vals[i] = strings.TrimSpace(v)
		}
		return vals, len(vals) > 0
	case LocPath:
		if req.PathParam == nil {
			return nil, false
		}
		v, ok := req.PathParam(p.Name)
		if !ok {
			return nil, false
		}
		return []string{v}, true
	}
	return nil, false
}

// queryValues returns the decoded values of the query parameter name in
// raw, in order: "a=1&a=2" gives [1 2], "a" and "a=" give [""], and a
// parameter that is not there gives (nil, false). Names and values are
// percent-decoded ("+" is a space); an undecodable part is used as sent.
func queryValues(raw, name string) ([]string, bool) {
	var vals []string
	found := false
	for raw != "" {
		var part string
		part, raw, _ = strings.Cut(raw, "&")
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		if unescape(k) != name {
			continue
		}
		found = true
		vals = append(vals, unescape(v))
	}
	return vals, found
}

// unescape percent-decodes a query component, or returns it unchanged when
// it is not valid percent-encoding.
func unescape(s string) string {
	if !strings.ContainsAny(s, "%+") {
		return s
	}
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}
