package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"tollgate/plans"
)

// integration is a compiled method integration. For HTTP_PROXY, base holds
// the scheme, host and query of the uri after stage variables were
// substituted (operator data only; nothing from the request reaches them),
// and path the uri's path as a template. err, when set, makes every call
// answer 500: the uri is unusable once the stage variables are in.
type integration struct {
	kind     string
	verb     string // the integration's httpMethod; "ANY" forwards the client's
	timeout  time.Duration
	base     url.URL
	path     []pathPart
	mappings []mapping
	mock     mockResponse
	err      error
}

// mockResponse is what a MOCK integration answers: the integration
// response its request template selects (status, header mappings, the
// application/json template as the body, its variables substituted per
// request), or 200 {} when it has no integration responses.
type mockResponse struct {
	status  int
	headers []mapping
	body    template
}

// compileMock resolves the answer of a MOCK integration of a stage. No
// integration response matching the request template's status is an
// unusable integration (500, as AWS). Header mappings of headers the
// gateway writes itself (plans.GatewayOwnedHeader) and from sources it
// does not evaluate (plans.EvaluatedSource) are left out.
func compileMock(in *plans.Integration) (mockResponse, error) {
	if len(in.IntegrationResponses) == 0 {
		return mockResponse{status: http.StatusOK, body: template{{Text: string(mockBody)}}}, nil
	}
	ir := in.SelectResponse(in.MockStatus())
	if ir == nil {
		return mockResponse{}, fmt.Errorf("no integration response matches MOCK status %s", in.MockStatus())
	}
	mr := mockResponse{body: plans.ParseTemplate(ir.ResponseTemplates["application/json"])}
	mr.status, _ = strconv.Atoi(ir.StatusCode)
	for k, v := range ir.ResponseParameters {
		name, ok := strings.CutPrefix(k, "method.response.header.")
		if ok && !plans.GatewayOwnedHeader(name) && plans.EvaluatedSource(v) {
			mr.headers = append(mr.headers, mapping{loc: "header", name: name, src: parseSource(v)})
		}
	}
	return mr, nil
}

// write answers with the compiled MOCK response for one request.
func (mr *mockResponse) write(w http.ResponseWriter, sc *templateScope) {
	h := w.Header()
	h[headerContentType] = jsonContentType
	for _, m := range mr.headers {
		h.Set(m.name, m.src.eval(sc.r, &sc.ex.params, sc.vars))
	}
	body := mr.body.render(sc)
	h[headerContentLen] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(mr.status)
	_, _ = w.Write([]byte(body))
}

// pathPart is a literal piece of the uri path (already escaped, as the
// operator wrote it) or a "{name}" / "{name+}" placeholder.
type pathPart struct {
	lit   string
	param string
}

// mapping is one requestParameters entry: integration.request.<loc>.<name>
// gets the value of src.
type mapping struct {
	loc, name string
	src       source
}

// source is the right-hand side of a requestParameters mapping:
// "method.request.{querystring|header|path}.x", "stageVariables.x" or a
// 'literal'.
type source struct {
	loc   string // querystring, header, path, stage or literal
	value string // the name, or the literal itself
}

// errIntegration explains a 500 from an unusable integration.
var errNoIntegration = errors.New("method has no integration")

// compileIntegration resolves an integration of a stage. in may be nil (a
// method without an integration answers 500, as AWS).
func compileIntegration(in *plans.Integration, vars map[string]string) integration {
	if in == nil {
		return integration{err: errNoIntegration}
	}
	ig := integration{kind: in.Type, verb: in.HTTPMethod, timeout: time.Duration(in.TimeoutInMillis) * time.Millisecond}
	if ig.timeout <= 0 {
		ig.timeout = plans.DefaultTimeoutMillis * time.Millisecond
	}
	switch in.Type {
	case plans.IntegrationMock:
		ig.mock, ig.err = compileMock(in)
		return ig
	case plans.IntegrationHTTPProxy:
	default:
		ig.err = fmt.Errorf("integration type %q is not supported", in.Type)
		return ig
	}
	if ig.verb == "" {
		ig.verb = "ANY"
	}
	ig.err = ig.compileURI(substituteStageVariables(in.URI, vars))
	for k, v := range in.RequestParameters {
		loc, name, ok := plans.ParseRequestParameter("integration.request.", k)
		if !ok || loc == "header" && strings.EqualFold(name, "host") {
			ig.err = fmt.Errorf("request parameter %q may not be mapped", k)
			continue
		}
		if plans.EvaluatedSource(v) { // others are stored only (docs/migrating-from-aws.md)
			ig.mappings = append(ig.mappings, mapping{loc: loc, name: name, src: parseSource(v)})
		}
	}
	return ig
}

// substituteStageVariables replaces every "${stageVariables.x}" in s by the
// stage variable x ("" when it is not set, as AWS).
func substituteStageVariables(s string, vars map[string]string) string {
	const open = "${stageVariables."
	var b strings.Builder
	for {
		i := strings.Index(s, open)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		b.WriteString(vars[s[i+len(open):i+j]])
		s = s[i+j+1:]
	}
}

// compileURI splits uri into the fixed scheme://host, the path template
// and the query. The scheme must be http or https and the host not empty.
func (ig *integration) compileURI(uri string) error {
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok || scheme != "http" && scheme != "https" {
		return fmt.Errorf("integration uri %q is not an absolute http or https URL", uri)
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	host := rest[:end]
	u, err := url.Parse(scheme + "://" + host)
	if err != nil || u.Host == "" || u.User != nil {
		return fmt.Errorf("integration uri %q has no usable host", uri)
	}
	rest = rest[end:]
	rest, _, _ = strings.Cut(rest, "#")
	path, query, _ := strings.Cut(rest, "?")
	ig.base = url.URL{Scheme: scheme, Host: u.Host, RawQuery: query}
	ig.path = splitTemplate(path)
	return nil
}

// splitTemplate cuts an escaped uri path into literals and placeholders.
func splitTemplate(p string) []pathPart {
	var parts []pathPart
	for p != "" {
		i := strings.IndexByte(p, '{')
		j := strings.IndexByte(p[max(i, 0):], '}')
		if i < 0 || j < 0 {
			parts = append(parts, pathPart{lit: p})
			break
		}
		if i > 0 {
			parts = append(parts, pathPart{lit: p[:i]})
		}
		parts = append(parts, pathPart{param: strings.TrimSuffix(p[i+1:i+j], "+")})
		p = p[i+j+1:]
	}
	return parts
}

// parseSource reads the right-hand side of a mapping the gateway
// evaluates (plans.EvaluatedSource); any other yields "".
func parseSource(v string) source {
	if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
		return source{loc: "literal", value: v[1 : len(v)-1]}
	}
	if name, ok := strings.CutPrefix(v, "stageVariables."); ok {
		return source{loc: "stage", value: name}
	}
	if loc, name, ok := plans.ParseRequestParameter("method.request.", v); ok {
		return source{loc: loc, value: name}
	}
	return source{loc: "literal"}
}

// errBadPath is returned for a path parameter that would escape its place
// in the upstream path ("..", ".", or an encoded slash in a greedy value).
var errBadPath = errors.New("path parameter is not allowed in an upstream path")

// target builds the upstream URL of one request: the uri's scheme and host,
// its path with the placeholders filled (a "{name}" value escaped as one
// segment, a greedy value forwarded as sent after checking it), and the
// uri's query followed by the client's, then the querystring mappings.
func (ig *integration) target(r *http.Request, ps *params, vars map[string]string) (*url.URL, error) {
	u := new(url.URL)
	return u, ig.targetInto(u, r, ps, vars)
}

// targetInto is target writing the URL into u (the request's own, held
// in its exchange: no allocation).
func (ig *integration) targetInto(dst *url.URL, r *http.Request, ps *params, vars map[string]string) error {
	*dst = ig.base
	u := dst
	var b strings.Builder
	b.Grow(128) // one allocation for most paths
	for _, part := range ig.path {
		if part.param == "" {
			b.WriteString(part.lit)
			continue
		}
		seg, err := ig.pathValue(part.param, r, ps, vars)
		if err != nil {
			return err
		}
		b.WriteString(seg)
	}
	raw := b.String()
	if raw == "" {
		raw = "/"
	}
	path, err := url.PathUnescape(raw)
	if err != nil {
		return errBadPath
	}
	u.Path, u.RawPath = path, raw
	u.RawQuery = joinQuery(u.RawQuery, r.URL.RawQuery)
	return ig.mapQuery(u, r, ps, vars)
}

// pathValue returns the escaped value for the uri placeholder name: a path
// mapping when one names it, else the method's path parameter of that name.
func (ig *integration) pathValue(name string, r *http.Request, ps *params, vars map[string]string) (string, error) {
	p, found := ps.get(name)
	for _, m := range ig.mappings {
		if m.loc == "path" && m.name == name {
			if m.src.loc == "path" {
				p, found = ps.get(m.src.value)
			} else {
				p, found = param{value: m.src.eval(r, ps, vars)}, true
			}
		}
	}
	if !found {
		return "", nil
	}
	if p.greedy {
		return p.raw, checkGreedy(p.raw)
	}
	if hasDotSegment(p.value) {
		return "", errBadPath
	}
	return url.PathEscape(p.value), nil
}

// hasDotSegment reports whether v holds a "." or ".." segment as some
// upstream may read it: pieces split at "/" or "\\", each cut at its first
// ";" (path parameters, which Tomcat and other servlet containers strip
// before resolving "..;"), checked as they are and again after each of up
// to maxDecodes percent-decodings (an upstream, or a proxy in front of it,
// that decodes once more turns "%252e" into "."). Such a value is refused
// even though it is escaped as one segment ("..%2F..%2Fx"): an upstream
// that decodes %2F before routing would climb out of the uri's path.
func hasDotSegment(v string) bool { return dotSegment(v, maxDecodes) }

// dotSegment is hasDotSegment with decodes percent-decodings left: a piece
// still encoded when none are left is refused rather than guessed at.
func dotSegment(v string, decodes int) bool {
	if !strings.ContainsAny(v, ".%") {
		return false
	}
	for piece := range strings.FieldsFuncSeq(v, isPathSeparator) {
		piece, _, _ = strings.Cut(piece, ";")
		switch {
		case piece == "." || piece == "..":
			return true
		case strings.IndexByte(piece, '%') < 0:
		case decodes == 0:
			return true
		default:
			if dec, err := url.PathUnescape(piece); err == nil && dotSegment(dec, decodes-1) {
				return true
			}
		}
	}
	return false
}

// maxDecodes is how many percent-decodings hasDotSegment looks through.
const maxDecodes = 3

// isPathSeparator reports whether r splits path segments for some
// upstream: "/", or "\\" for Windows servers.
func isPathSeparator(r rune) bool { return r == '/' || r == '\\' }

// checkGreedy refuses a greedy value with a "." or ".." segment (see
// hasDotSegment) or an encoded slash or backslash, so it cannot climb out
// of the uri's path.
func checkGreedy(raw string) error {
	for seg := range strings.SplitSeq(raw, "/") {
		if strings.Contains(seg, "%2f") || strings.Contains(seg, "%2F") || strings.Contains(seg, "%5c") || strings.Contains(seg, "%5C") {
			return errBadPath
		}
		if _, ok := unescapeSegment(seg); !ok || hasDotSegment(seg) {
			return errBadPath
		}
	}
	return nil
}

// joinQuery joins two raw query strings with "&".
func joinQuery(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "&" + b
}

// mapQuery applies the querystring mappings (each replaces its name).
func (ig *integration) mapQuery(u *url.URL, r *http.Request, ps *params, vars map[string]string) error {
	var q url.Values
	for _, m := range ig.mappings {
		if m.loc != "querystring" {
			continue
		}
		if q == nil {
			var err error
			if q, err = url.ParseQuery(u.RawQuery); err != nil {
				return errBadQuery
			}
		}
		q.Set(m.name, m.src.eval(r, ps, vars))
	}
	if q != nil {
		u.RawQuery = q.Encode()
	}
	return nil
}

// errBadQuery is returned when a query string cannot be parsed for mapping.
var errBadQuery = errors.New("query string cannot be parsed")

// mapHeaders applies the header mappings to the outbound headers.
func (ig *integration) mapHeaders(out http.Header, in *http.Request, ps *params, vars map[string]string) {
	for _, m := range ig.mappings {
		if m.loc == "header" {
			out.Set(m.name, m.src.eval(in, ps, vars))
		}
	}
}

// eval returns the value of a mapping source for one request.
func (s source) eval(r *http.Request, ps *params, vars map[string]string) string {
	switch s.loc {
	case "literal":
		return s.value
	case "stage":
		return vars[s.value]
	case "header":
		return r.Header.Get(s.value)
	case "querystring":
		return r.URL.Query().Get(s.value)
	case "path":
		p, _ := ps.get(s.value)
		return p.value
	}
	return ""
}
