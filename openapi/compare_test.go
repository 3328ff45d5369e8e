package openapi

import (
	"encoding/json"

	"tollgate/plans"
)

// normal returns def as JSON with resource ids, parent ids and cache
// namespaces equal to their resource's id left out: what must survive a
// round trip.
func normal(def *plans.ApiDefinition) string {
	c := *def
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
		r.ID = ""
		c.Resources[i] = r
	}
	b, _ := json.Marshal(c)
	return string(b)
}

func dump(def *plans.ApiDefinition) string { return normal(def) }
