package postgres_test

import (
	"strings"
	"testing"

	"tollgate/plans"
)

// mockAt returns a definition resource at path with a MOCK GET.
func mockAt(path string) plans.Resource {
	part := path[strings.LastIndexByte(path, '/')+1:]
	return plans.Resource{Path: path, PathPart: part, ResourceMethods: map[string]*plans.Method{
		"GET": {HTTPMethod: "GET", MethodIntegration: &plans.Integration{Type: plans.IntegrationMock}}}}
}

func TestImportAndPutAreAllOrNothing(t *testing.T) {
	db := newDB(t)
	def := &plans.ApiDefinition{Name: "pets", Resources: []plans.Resource{{Path: "/"}, mockAt("/pets"), mockAt("/pets/{id}")},
		GatewayResponses: map[string]plans.GatewayResponse{plans.ResponseDefault4XX: {ResponseType: plans.ResponseDefault4XX, StatusCode: "400"}}}
	api, err := db.ImportRestApi(ctx, def)
	must(t, err)
	rs, _, err := db.ListResources(ctx, api.ID, plans.Page{Limit: 100})
	must(t, err)
	if len(rs) != 3 {
		t.Fatalf("imported: got %d resources, want /, /pets and /pets/{id}", len(rs))
	}
	for _, r := range rs {
		if m := r.ResourceMethods["GET"]; r.Path != "/" && (m == nil || m.MethodIntegration.CacheNamespace != r.ID) {
			t.Errorf("%s: got %+v, want a MOCK GET whose cache namespace is the resource id", r.Path, m)
		}
	}
	// A merge whose last resource breaks the tree rules (a second variable
	// sibling) stores nothing, not even the valid /toys before it.
	bad := &plans.ApiDefinition{Name: "pets", Resources: []plans.Resource{{Path: "/"}, mockAt("/toys"), mockAt("/pets"), mockAt("/pets/{petId}")}}
	_, err = db.PutRestApi(ctx, api.ID, plans.PutModeMerge, bad)
	wantErr(t, err, plans.KindInvalid, "paths./pets/{petId}")
	after, _, err := db.ListResources(ctx, api.ID, plans.Page{Limit: 100})
	must(t, err)
	if len(after) != 3 {
		t.Errorf("after a refused merge: got %d resources, want the 3 imported", len(after))
	}
	// Overwrite keeps the ids of paths that stay and drops the rest.
	over := &plans.ApiDefinition{Name: "renamed", Resources: []plans.Resource{{Path: "/"}, mockAt("/pets")}}
	got, err := db.PutRestApi(ctx, api.ID, plans.PutModeOverwrite, over)
	must(t, err)
	final, _, err := db.ListResources(ctx, api.ID, plans.Page{Limit: 100})
	must(t, err)
	if got.Name != "renamed" || len(final) != 2 {
		t.Fatalf("overwrite: got name %q and %d resources, want renamed and 2", got.Name, len(final))
	}
	for _, r := range final {
		for _, old := range rs {
			if r.Path == old.Path && r.ID != old.ID {
				t.Errorf("%s: id %s became %s, want it kept", r.Path, old.ID, r.ID)
			}
		}
	}
	grs, err := db.GatewayResponses(ctx, api.ID)
	must(t, err)
	if len(grs) != 0 {
		t.Errorf("overwrite without gateway responses: got %v, want none left", grs)
	}
	_, err = db.PutRestApi(ctx, api.ID, "replace", over)
	wantErr(t, err, plans.KindInvalid, "mode")
}
