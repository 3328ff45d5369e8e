package openapitest

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"tollgate/plans"
)

// Normal returns def as JSON without what an import makes anew: resource,
// parent and authorizer ids, and cache namespaces equal to their
// resource's id (the default). Resources are ordered by path, authorizers
// by name. Two definitions of the same API have the same Normal.
func Normal(def *plans.ApiDefinition) string {
	c := *def
	c.Authorizers = nil
	for _, a := range def.Authorizers {
		a.ID = ""
		c.Authorizers = append(c.Authorizers, a)
	}
	plans.SortAuthorizers(c.Authorizers)
	c.Resources = make([]plans.Resource, len(def.Resources))
	for i, r := range def.Resources {
		r.ParentID = ""
		r.ResourceMethods = map[string]*plans.Method{}
		for verb, m := range def.Resources[i].ResourceMethods {
			mc := *m
			if in := m.MethodIntegration; in != nil {
				ic := *in
				if ic.CacheNamespace == r.ID {
					ic.CacheNamespace = ""
				}
				mc.MethodIntegration = &ic
			}
			r.ResourceMethods[verb] = &mc
		}
		if len(r.ResourceMethods) == 0 {
			r.ResourceMethods = nil
		}
		r.ID = ""
		c.Resources[i] = r
	}
	slices.SortFunc(c.Resources, func(a, b plans.Resource) int { return strings.Compare(a.Path, b.Path) })
	if len(c.GatewayResponses) == 0 {
		c.GatewayResponses = nil
	}
	b, _ := json.Marshal(c)
	return string(b)
}

// DeclarePathParameters returns def with every path parameter of a
// resource declared by each of its methods, as an import declares them
// (OpenAPI requires it).
func DeclarePathParameters(def *plans.ApiDefinition) *plans.ApiDefinition {
	return eachMethod(def, func(path string, m *plans.Method) {
		for _, part := range strings.Split(path, "/") {
			if name := plans.ParamName(part); name != "" {
				if m.RequestParameters == nil {
					m.RequestParameters = map[string]bool{}
				}
				m.RequestParameters["method.request.path."+name] = true
			}
		}
	})
}

// SwaggerForm returns def as an import of its Swagger 2.0 export gives it
// back, and the locations ("paths./pets.get.responses.200", sorted) of
// the responses whose models change, of which the export must warn: an
// operation has one list of media types and a response one schema, so
// each response with models gets its application/json model (else its
// first by media type) on every media type any response of the operation
// has a model for.
func SwaggerForm(def *plans.ApiDefinition) (*plans.ApiDefinition, []string) {
	var lossy []string
	out := eachMethod(def, func(path string, m *plans.Method) {
		types := map[string]bool{}
		for _, mr := range m.MethodResponses {
			for ct := range mr.ResponseModels {
				types[ct] = true
			}
		}
		for _, code := range slices.Sorted(maps.Keys(m.MethodResponses)) {
			mr := m.MethodResponses[code]
			if len(mr.ResponseModels) == 0 {
				continue
			}
			model := mr.ResponseModels["application/json"]
			if model == "" {
				model = mr.ResponseModels[slices.Sorted(maps.Keys(mr.ResponseModels))[0]]
			}
			carried := map[string]string{}
			for ct := range types {
				carried[ct] = model
			}
			if !maps.Equal(carried, mr.ResponseModels) {
				lossy = append(lossy, fmt.Sprintf("paths.%s.%s.responses.%s", path, operationKey(m.HTTPMethod), code))
			}
			mr.ResponseModels = carried
		}
	})
	slices.Sort(lossy)
	return out, lossy
}

// operationKey is the key of a method's operation in a path item.
func operationKey(verb string) string {
	if verb == "ANY" {
		return "x-amazon-apigateway-any-method"
	}
	return strings.ToLower(verb)
}

// eachMethod returns a copy of def whose methods (copied down to their
// method responses) fn changed.
func eachMethod(def *plans.ApiDefinition, fn func(path string, m *plans.Method)) *plans.ApiDefinition {
	c := *def
	c.Resources = slices.Clone(def.Resources)
	for i := range c.Resources {
		r := &c.Resources[i]
		if r.ResourceMethods == nil {
			continue
		}
		ms := r.ResourceMethods
		r.ResourceMethods = map[string]*plans.Method{}
		for verb, m := range ms {
			mc := *m
			mc.RequestParameters = maps.Clone(m.RequestParameters)
			if m.MethodResponses != nil {
				mc.MethodResponses = map[string]*plans.MethodResponse{}
				for code, mr := range m.MethodResponses {
					mrc := *mr
					mc.MethodResponses[code] = &mrc
				}
			}
			fn(r.Path, &mc)
			r.ResourceMethods[verb] = &mc
		}
	}
	return &c
}
