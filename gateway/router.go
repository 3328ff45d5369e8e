package gateway

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	"tollgate/plans"
)

// node is one resource of a stage's compiled path tree. Children are tried
// in AWS's order of precedence: a literal segment, then "{name}", then
// "{name+}" (which takes the rest of the path, at least one segment).
type node struct {
	literals map[string]*node
	param    *node  // the "{name}" child
	greedy   *node  // the "{name+}" child; it has no children
	name     string // parameter name of a param or greedy node
	res      *route // nil when the resource has no methods
}

// route is a resource that has methods: its path and its methods by HTTP
// method (GET, ..., ANY), with the Allow header for 405s precomputed.
type route struct {
	path    string
	methods map[string]*method
	allow   string
}

// param is one path parameter of a matched request: its name, its
// percent-decoded value and, for a greedy parameter, the raw (still
// escaped) rest of the path, which the proxy forwards as it was sent.
type param struct {
	name, value, raw string
	greedy           bool
}

// maxParams is how many parameters fit in a request's fixed array; a
// deeper tree spills into extra, allocated only then.
const maxParams = 8

// params is the list of path parameters of one request, in a fixed array
// so that matching does not allocate for ordinary trees.
type params struct {
	list  [maxParams]param
	extra []param
	n     int
}

// push appends p.
func (ps *params) push(p param) {
	if ps.n < maxParams {
		ps.list[ps.n] = p
	} else {
		ps.extra = append(ps.extra[:ps.n-maxParams], p)
	}
	ps.n++
}

// at returns the i-th parameter (i < ps.n).
func (ps *params) at(i int) param {
	if i < maxParams {
		return ps.list[i]
	}
	return ps.extra[i-maxParams]
}

// get returns the parameter named name.
func (ps *params) get(name string) (param, bool) {
	for i := range ps.n {
		p := ps.at(i)
		if p.name == name {
			return p, true
		}
	}
	return param{}, false
}

// addResource inserts a resource with its compiled methods into the tree
// rooted at root. It returns an error for a path the tree cannot hold: two
// differently named parameters under one parent.
func addResource(root *node, path string, methods map[string]*method) error {
	n := root
	if path != "/" {
		for part := range strings.SplitSeq(strings.TrimPrefix(path, "/"), "/") {
			var err error
			if n, err = n.child(part); err != nil {
				return fmt.Errorf("resource %s: %w", path, err)
			}
		}
	}
	if len(methods) > 0 {
		n.res = &route{path: path, methods: methods, allow: allowHeader(methods)}
	}
	return nil
}

// child returns (creating it if needed) the child of n for one path part.
func (n *node) child(part string) (*node, error) {
	name := plans.ParamName(part)
	slot := &n.param
	switch {
	case !plans.IsParam(part):
		if n.literals == nil {
			n.literals = map[string]*node{}
		}
		c := n.literals[part]
		if c == nil {
			c = &node{}
			n.literals[part] = c
		}
		return c, nil
	case plans.IsGreedy(part):
		slot = &n.greedy
	}
	if *slot == nil {
		*slot = &node{name: name}
	}
	if (*slot).name != name {
		return nil, fmt.Errorf("path parameters {%s} and {%s} share a parent", (*slot).name, name)
	}
	return *slot, nil
}

// match finds the route for rest, a request path below the stage with no
// leading slash, no trailing slash and no empty segment ("" is the root).
// Literal beats {param} beats {proxy+}, with backtracking: a literal that
// leads nowhere gives way to a parameter. Only resources that have methods
// match.
func (n *node) match(rest string, ps *params) *route {
	if rest == "" {
		return n.res
	}
	seg, tail, _ := strings.Cut(rest, "/")
	dec, ok := unescapeSegment(seg)
	if !ok {
		return nil
	}
	if c := n.literals[dec]; c != nil {
		if r := c.match(tail, ps); r != nil {
			return r
		}
	}
	if n.param != nil {
		mark := ps.n
		ps.push(param{name: n.param.name, value: dec})
		if r := n.param.match(tail, ps); r != nil {
			return r
		}
		ps.n = mark
	}
	if g := n.greedy; g != nil && g.res != nil {
		if val, ok := unescapeSegment(rest); ok {
			ps.push(param{name: g.name, value: val, raw: rest, greedy: true})
			return g.res
		}
	}
	return nil
}

// unescapeSegment percent-decodes s, without allocating when it holds no
// escapes.
func unescapeSegment(s string) (string, bool) {
	if strings.IndexByte(s, '%') < 0 {
		return s, true
	}
	dec, err := url.PathUnescape(s)
	return dec, err == nil
}

// lookup returns the method that serves verb: the exact method, then GET
// for HEAD, then ANY.
func (r *route) lookup(verb string) *method {
	if m := r.methods[verb]; m != nil {
		return m
	}
	if verb == "HEAD" {
		if m := r.methods["GET"]; m != nil {
			return m
		}
	}
	return r.methods["ANY"]
}

// allowHeader lists the methods of a resource, sorted, with HEAD added when
// GET is there (HEAD falls back to GET).
func allowHeader(methods map[string]*method) string {
	set := make(map[string]bool, len(methods)+1)
	for verb := range methods {
		set[verb] = true
	}
	if set["GET"] {
		set["HEAD"] = true
	}
	list := make([]string, 0, len(set))
	for verb := range set {
		list = append(list, verb)
	}
	sort.Strings(list)
	return strings.Join(list, ", ")
}

// splitStagePath splits an escaped request path "/{stage}/{rest}" into the
// decoded stage name and rest (no leading or trailing slash). ok is false
// for a path with no stage or an empty segment ("//").
func splitStagePath(escaped string) (stage, rest string, ok bool) {
	p := strings.TrimPrefix(escaped, "/")
	if strings.Contains(p, "//") {
		return "", "", false
	}
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return "", "", false
	}
	seg, rest, _ := strings.Cut(p, "/")
	stage, ok = unescapeSegment(seg)
	return stage, rest, ok && stage != ""
}
