package gateway

import (
	"crypto/tls"
	"net"
	"net/http"
	"strings"

	"tollgate/plans"
)

// Access-log error types of custom domain names' refusals.
const (
	ErrorTypeForbidden   = "FORBIDDEN"   // no base path mapping matches the path: 403
	ErrorTypeMisdirected = "MISDIRECTED" // the Host is another domain than the connection's: 421
)

// domainRoute is a custom domain name compiled: where its certificate
// comes from and its base path mappings as a tree of path segments
// (docs/behaviour.md, "Custom domain names").
type domainRoute struct {
	name string
	// cert is the domain's stored certificate, parsed and its key opened;
	// nil when it comes from the node's files (arn) or could not be used.
	cert *tls.Certificate
	arn  string
	root baseNode
}

// baseNode is one segment of the base paths of a domain: the mapping of
// the path ending here (nil when none) and the longer paths below.
type baseNode struct {
	children map[string]*baseNode
	m        *baseMapping
}

// baseMapping is one compiled base path mapping. An empty stage means the
// stage is the first segment after the base path.
type baseMapping struct {
	basePath, api, stage string
}

// compileDomainRoute builds a domain's mapping tree; its certificate is
// set by the caller.
func compileDomainRoute(d *plans.DomainConfig) *domainRoute {
	dr := &domainRoute{name: d.DomainName, arn: d.CertificateArn}
	for _, m := range d.Mappings {
		n := &dr.root
		if m.BasePath != plans.NoBasePath {
			for _, seg := range strings.Split(m.BasePath, "/") {
				if n.children == nil {
					n.children = map[string]*baseNode{}
				}
				if n.children[seg] == nil {
					n.children[seg] = &baseNode{}
				}
				n = n.children[seg]
			}
		}
		n.m = &baseMapping{basePath: m.BasePath, api: m.RestApiID, stage: m.Stage}
	}
	return dr
}

// match finds the mapping with the longest base path that is a prefix of
// the escaped request path, segment by segment (segments compared
// percent-decoded), and returns it with the rest of the path after the
// base path (escaped, without its leading slash). ok is false when no
// mapping matches or the path has an empty segment.
func (dr *domainRoute) match(escaped string) (m *baseMapping, rest string, ok bool) {
	if strings.Contains(escaped, "//") {
		return nil, "", false
	}
	p := strings.TrimPrefix(escaped, "/")
	m, rest = dr.root.m, p
	n := &dr.root
	for p != "" && n.children != nil {
		seg, after, _ := strings.Cut(p, "/")
		name, ok := unescapeSegment(seg)
		if !ok {
			break
		}
		if n = n.children[name]; n == nil {
			break
		}
		p = after
		if n.m != nil {
			m, rest = n.m, p
		}
	}
	return m, strings.TrimSuffix(rest, "/"), m != nil
}

// domainFor returns the custom domain that serves host (a Host header
// value: port and a trailing dot ignored, any case): the domain of that
// name, else a wildcard domain of its parent ("*.example.com" serves
// "api.example.com", not "a.b.example.com"). nil when none does or c is
// nil.
func (c *config) domainFor(host string) *domainRoute {
	if c == nil || len(c.domains) == 0 {
		return nil
	}
	name := hostName(host)
	if d := c.domains[name]; d != nil {
		return d
	}
	if _, parent, ok := strings.Cut(name, "."); ok {
		return c.domains["*."+parent]
	}
	return nil
}

// hostName is the lower-case name of a Host header value or SNI name,
// without port or trailing dot.
func hostName(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.ToLower(strings.TrimSuffix(host, "."))
}

// mapBasePath resolves the request of a custom domain through its base
// path mappings (AWS's rules: the longest base path wins; a path under
// none is 403 Forbidden): ex.api, and ex.stagePath as the stage-prefixed
// path routing reads. A request whose Host names another domain than the
// TLS connection's server name is 421 Misdirected Request (an HTTP/2
// client may reuse a connection for another name its certificate
// covers). It writes the refusal and returns false.
func (s *Server) mapBasePath(w *statusWriter, r *http.Request, ex *exchange) bool {
	if r.TLS != nil && ex.cfg.domainFor(r.TLS.ServerName) != ex.domain {
		ex.errType, ex.reason = ErrorTypeMisdirected, "the Host names another domain than the TLS server name"
		writeError(w, respMisdirected)
		return false
	}
	m, rest, ok := ex.domain.match(r.URL.EscapedPath())
	if !ok {
		ex.errType, ex.reason = ErrorTypeForbidden, "no base path mapping of "+ex.domain.name+" matches"
		writeError(w, respForbidden)
		return false
	}
	ex.api = m.api
	if m.stage == "" {
		ex.stagePath = "/" + rest
	} else {
		ex.stagePath = "/" + m.stage + "/" + rest
	}
	ex.usage = "/"+rest == UsagePath
	return true
}
