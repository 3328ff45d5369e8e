package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"go.yaml.in/yaml/v4"

	"tollgate/plans"
)

// MaxRefChain is the longest chain of components that are only a $ref to
// the next one (schemas S0 → S1 → … ) an import follows. Resolving such a
// chain costs kin-openapi time quadratic in its length, so a longer one is
// refused up front (docs/migrating-from-aws.md, "Limits").
const MaxRefChain = 16

// source is a parsed document: doc as OpenAPI 3 (a Swagger 2.0 document
// converted) and, for Swagger 2.0, the original.
type source struct {
	doc     *openapi3.T
	swagger *openapi2.T
	isJSON  bool // the document is JSON
}

// load parses data as Swagger 2.0 (converted to OpenAPI 3) or OpenAPI
// 3.0, JSON or YAML, resolving its internal references. External
// references are never followed. kin-openapi's validation is not run:
// rules stricter than API Gateway's import are no reason to refuse a
// document; the importer checks what it reads.
func load(data []byte) (*source, error) {
	p, isJSON, err := probeDocument(data)
	if err != nil {
		return nil, err
	}
	if err := p.checkRefChains(); err != nil {
		return nil, err
	}
	src := source{isJSON: isJSON}
	switch {
	case p.version(p.Swagger) == "2.0" || p.version(p.Swagger) == "2":
		if src.swagger, src.doc, err = loadSwagger(data, isJSON); err != nil {
			return nil, err
		}
	case strings.HasPrefix(p.version(p.OpenAPI), "3.0"):
		if src.doc, err = loadOpenAPI(data, isJSON); err != nil {
			return nil, err
		}
	default:
		return nil, plans.Invalid("openapi", "the document must be OpenAPI 3.0 (openapi: 3.0.x) or Swagger 2.0 (swagger: \"2.0\")")
	}
	if src.doc.Paths == nil {
		src.doc.Paths = openapi3.NewPaths()
	}
	if src.doc.Components == nil {
		src.doc.Components = &openapi3.Components{}
	}
	return &src, nil
}

func loadSwagger(data []byte, isJSON bool) (*openapi2.T, *openapi3.T, error) {
	var doc2 openapi2.T
	var err error
	if isJSON {
		err = json.Unmarshal(data, &doc2)
	} else {
		err = openapi2.UnmarshalFromData(data, &doc2)
	}
	if err != nil {
		return nil, nil, plans.Invalid("body", "reading the Swagger 2.0 document: %v", err)
	}
	for _, item := range doc2.Paths {
		if item == nil {
			continue
		}
		for _, op := range item.Operations() {
			if len(op.Produces) == 0 {
				op.Produces = doc2.Produces // kin-openapi reads only the operation's
			}
		}
	}
	doc, err := openapi2conv.ToV3(&doc2)
	if err != nil {
		return nil, nil, plans.Invalid("body", "converting the Swagger 2.0 document: %v", err)
	}
	return &doc2, doc, nil
}

// loadOpenAPI reads a JSON document with encoding/json (kin-openapi's
// loader reads everything as YAML first, several times slower), then
// resolves its references as the loader does.
func loadOpenAPI(data []byte, isJSON bool) (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	if !isJSON {
		doc, err := loader.LoadFromData(data)
		if err != nil {
			return nil, plans.Invalid("body", "reading the OpenAPI document: %v", err)
		}
		return doc, nil
	}
	doc := &openapi3.T{}
	if err := json.Unmarshal(data, doc); err != nil {
		return nil, plans.Invalid("body", "reading the OpenAPI document: %v", err)
	}
	if err := loader.ResolveRefsIn(doc, nil); err != nil {
		return nil, plans.Invalid("body", "reading the OpenAPI document: %v", err)
	}
	return doc, nil
}

// probe is what load reads before parsing a document whole: its version
// and the reusable components whose $ref chains it checks.
type probe struct {
	Swagger    any            `json:"swagger" yaml:"swagger"`
	OpenAPI    any            `json:"openapi" yaml:"openapi"`
	Components map[string]any `json:"components" yaml:"components"`
	// Swagger 2.0's reusable parts.
	Definitions any `json:"definitions" yaml:"definitions"`
	Parameters  any `json:"parameters" yaml:"parameters"`
	Responses   any `json:"responses" yaml:"responses"`
}

// probeDocument decodes data's probe, as JSON when it is a JSON object
// (much faster) and else as YAML; isJSON says which.
func probeDocument(data []byte) (p probe, isJSON bool, err error) {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		var jp probe
		if json.Unmarshal(data, &jp) == nil {
			return jp, true, nil
		}
	}
	var yp probe
	if err := yaml.Unmarshal(data, &yp); err != nil {
		return probe{}, false, plans.Invalid("body", "the document is neither JSON nor YAML: %v", err)
	}
	return yp, false, nil
}

// version reads a version field written as a string or a number.
func (probe) version(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// checkRefChains refuses a document with a chain of components that are
// only a $ref longer than MaxRefChain, naming its first component; it
// costs time linear in the number of components.
func (p probe) checkRefChains() error {
	next := map[string]string{}
	for section, parts := range p.Components {
		collectAliases(next, "components/"+section, parts)
	}
	collectAliases(next, "definitions", p.Definitions)
	collectAliases(next, "parameters", p.Parameters)
	collectAliases(next, "responses", p.Responses)
	length := make(map[string]int, len(next))
	longest, start := 0, ""
	for _, from := range sortedKeys(next) {
		if n := chainLength(next, length, from); n > longest {
			longest, start = n, from
		}
	}
	if longest <= MaxRefChain {
		return nil
	}
	at := strings.ReplaceAll(start, "/", ".")
	return plans.Invalid(at, "%s: a chain of %d components that are each only a $ref to the next starts here; at most %d are followed", at, longest, MaxRefChain)
}

// collectAliases adds to next, for each component of one section (named
// by its JSON pointer, "components/schemas") that is only a local $ref,
// the pointer of the component it refers to.
func collectAliases(next map[string]string, section string, parts any) {
	m, ok := parts.(map[string]any)
	if !ok {
		return
	}
	for name, v := range m {
		obj, ok := v.(map[string]any)
		if !ok {
			continue
		}
		if ref, ok := obj["$ref"].(string); ok && strings.HasPrefix(ref, "#/") {
			next[section+"/"+name] = ref[2:]
		}
	}
}

// chainLength returns the number of $ref hops from start (memoised in
// length; a cycle counts each of its members once).
func chainLength(next map[string]string, length map[string]int, start string) int {
	var path []string
	onPath := map[string]bool{}
	n := start
	for {
		if l, ok := length[n]; ok {
			return settle(path, length, l)
		}
		target, ok := next[n]
		if !ok || onPath[n] {
			return settle(path, length, 0)
		}
		onPath[n] = true
		path = append(path, n)
		n = target
	}
}

// settle records the lengths of the chain members on path, whose end is
// tail hops away from the last of them, and returns the first's.
func settle(path []string, length map[string]int, tail int) int {
	for i := len(path) - 1; i >= 0; i-- {
		tail++
		length[path[i]] = tail
	}
	return tail
}

// Base path options of ImportOptions.BasePath, as API Gateway's basepath
// import parameter: ignore (the default) drops the document's base path,
// prepend puts it before every path, split puts all of it but its first
// segment (a stage name) before every path. Source: AWS API Gateway
// developer guide, "Set the OpenAPI basePath property".
const (
	BasePathIgnore  = "ignore"
	BasePathPrepend = "prepend"
	BasePathSplit   = "split"
)

// basePath returns the document's base path as API Gateway identifies
// it, and where it was found: Swagger 2.0's basePath; in OpenAPI 3, the
// default of the first server variable named basePath, else the path of
// the first server's URL (its variables replaced by their defaults).
func (src *source) basePath() (string, loc) {
	if src.swagger != nil {
		return src.swagger.BasePath, loc{"basePath"}
	}
	for i, s := range src.doc.Servers {
		if v := s.Variables["basePath"]; v != nil {
			return v.Default, loc{"servers", fmt.Sprint(i), "variables", "basePath", "default"}
		}
	}
	if len(src.doc.Servers) == 0 || src.doc.Servers[0] == nil {
		return "", nil
	}
	s := src.doc.Servers[0]
	uri := s.URL
	for name, v := range s.Variables {
		if v != nil {
			uri = strings.ReplaceAll(uri, "{"+name+"}", v.Default)
		}
	}
	u, err := url.Parse(uri)
	if err != nil {
		return "", nil
	}
	return u.Path, loc{"servers", "0", "url"}
}

// pathPrefix returns what mode puts before every path of the document:
// "" or a path like "/a/b" whose parts are valid path parts.
func (src *source) pathPrefix(mode string) (string, error) {
	switch mode {
	case "", BasePathIgnore:
		return "", nil
	case BasePathPrepend, BasePathSplit:
	default:
		return "", plans.Invalid("basepath", "basepath %q must be ignore, prepend or split", mode)
	}
	bp, at := src.basePath()
	var parts []string
	for part := range strings.SplitSeq(bp, "/") {
		if part != "" {
			parts = append(parts, part)
		}
	}
	if mode == BasePathSplit && len(parts) > 0 {
		parts = parts[1:]
	}
	for _, part := range parts {
		if err := plans.ValidatePathPart(part); err != nil || plans.IsParam(part) {
			return "", plans.Invalid(at.String(), "%s: base path %q: %q cannot be a path part of every resource", at, bp, part)
		}
	}
	if len(parts) == 0 {
		return "", nil
	}
	return "/" + strings.Join(parts, "/"), nil
}
