package postgres_test

import (
	"testing"

	"tollgate/plans"
)

func TestCreateResource(t *testing.T) {
	db := newDB(t)
	api := newAPI(t, db, "a")
	root := rootOf(t, db, api.ID)
	pets, err := db.CreateResource(ctx, api.ID, root.ID, "pets")
	must(t, err)
	if len(pets.ID) != plans.ShortIDLen || pets.Path != "/pets" || pets.ParentID != root.ID {
		t.Fatalf("got %+v, want a 6-character id, path /pets under the root", pets)
	}
	id, err := db.CreateResource(ctx, api.ID, pets.ID, "{petId}")
	must(t, err)
	if id.Path != "/pets/{petId}" {
		t.Errorf("got path %q, want /pets/{petId}", id.Path)
	}
	got, err := db.GetResource(ctx, api.ID, id.ID)
	must(t, err)
	if got.Path != id.Path || got.PathPart != "{petId}" || got.ParentID != pets.ID {
		t.Errorf("got %+v, want %+v", got, id)
	}
}

func TestCreateResourceRules(t *testing.T) {
	db := newDB(t)
	api := newAPI(t, db, "a")
	root := rootOf(t, db, api.ID)
	pets, err := db.CreateResource(ctx, api.ID, root.ID, "pets")
	must(t, err)
	_, err = db.CreateResource(ctx, api.ID, pets.ID, "{id}")
	must(t, err)
	proxy, err := db.CreateResource(ctx, api.ID, root.ID, "{proxy+}")
	must(t, err)
	cases := []struct {
		name              string
		api, parent, part string
		kind              plans.Kind
		field             string
	}{
		{"same sibling", api.ID, root.ID, "pets", plans.KindConflict, ""},
		{"second parameter sibling", api.ID, pets.ID, "{name}", plans.KindInvalid, "pathPart"},
		{"child of greedy", api.ID, proxy.ID, "x", plans.KindInvalid, "parentId"},
		{"bad path part", api.ID, root.ID, "a/b", plans.KindInvalid, "pathPart"},
		{"no such parent", api.ID, "nope", "x", plans.KindNotFound, ""},
		{"no such api", "nope", root.ID, "x", plans.KindNotFound, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := db.CreateResource(ctx, c.api, c.parent, c.part)
			wantErr(t, err, c.kind, c.field)
		})
	}
}

func TestResourceNotFoundMessages(t *testing.T) {
	db := newDB(t)
	api := newAPI(t, db, "a")
	_, err := db.GetResource(ctx, api.ID, "nope")
	wantMsg(t, err, plans.KindNotFound, "Invalid Resource identifier specified")
	_, err = db.GetResource(ctx, "nope", "nope")
	wantMsg(t, err, plans.KindNotFound, "Invalid API identifier specified")
	_, _, err = db.ListResources(ctx, "nope", pageAll)
	wantMsg(t, err, plans.KindNotFound, "Invalid API identifier specified")
	wantMsg(t, db.DeleteResource(ctx, api.ID, "nope"), plans.KindNotFound, "Invalid Resource identifier specified")
}

func TestUpdateResourceRewritesSubtree(t *testing.T) {
	db := newDB(t)
	api := newAPI(t, db, "a")
	root := rootOf(t, db, api.ID)
	pets, err := db.CreateResource(ctx, api.ID, root.ID, "pets")
	must(t, err)
	id, err := db.CreateResource(ctx, api.ID, pets.ID, "{id}")
	must(t, err)
	toys, err := db.CreateResource(ctx, api.ID, id.ID, "toys")
	must(t, err)
	other, err := db.CreateResource(ctx, api.ID, root.ID, "v1")
	must(t, err)

	got, err := db.UpdateResource(ctx, api.ID, pets.ID, func(r *plans.Resource) error {
		r.PathPart = "animals"
		return nil
	})
	must(t, err)
	if got.Path != "/animals" {
		t.Errorf("got path %q, want /animals", got.Path)
	}
	_, err = db.UpdateResource(ctx, api.ID, pets.ID, func(r *plans.Resource) error {
		r.ParentID = other.ID
		return nil
	})
	must(t, err)
	leaf, err := db.GetResource(ctx, api.ID, toys.ID)
	must(t, err)
	if leaf.Path != "/v1/animals/{id}/toys" {
		t.Errorf("got leaf path %q, want /v1/animals/{id}/toys", leaf.Path)
	}

	cases := []struct {
		name  string
		id    string
		fn    func(*plans.Resource)
		kind  plans.Kind
		field string
	}{
		{"root", root.ID, func(r *plans.Resource) { r.PathPart = "x" }, plans.KindInvalid, "resourceId"},
		{"below itself", pets.ID, func(r *plans.Resource) { r.ParentID = toys.ID }, plans.KindInvalid, "parentId"},
		{"onto itself", pets.ID, func(r *plans.Resource) { r.ParentID = pets.ID }, plans.KindInvalid, "parentId"},
		{"greedy with children", id.ID, func(r *plans.Resource) { r.PathPart = "{p+}" }, plans.KindInvalid, "pathPart"},
		{"sibling name", other.ID, func(r *plans.Resource) { r.PathPart = "" }, plans.KindInvalid, "pathPart"},
		{"missing parent", pets.ID, func(r *plans.Resource) { r.ParentID = "nope" }, plans.KindInvalid, "parentId"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := db.UpdateResource(ctx, api.ID, c.id, func(r *plans.Resource) error { c.fn(r); return nil })
			wantErr(t, err, c.kind, c.field)
		})
	}
	_, err = db.CreateResource(ctx, api.ID, root.ID, "w")
	must(t, err)
	_, err = db.UpdateResource(ctx, api.ID, other.ID, func(r *plans.Resource) error { r.PathPart = "w"; return nil })
	wantErr(t, err, plans.KindConflict, "")
}

func TestDeleteResource(t *testing.T) {
	db := newDB(t)
	api := newAPI(t, db, "a")
	root := rootOf(t, db, api.ID)
	pets, err := db.CreateResource(ctx, api.ID, root.ID, "pets")
	must(t, err)
	id, err := db.CreateResource(ctx, api.ID, pets.ID, "{id}")
	must(t, err)
	addMethod(t, db, api.ID, id.ID, "GET", false)
	wantErr(t, db.DeleteResource(ctx, api.ID, root.ID), plans.KindInvalid, "resourceId")
	must(t, db.DeleteResource(ctx, api.ID, pets.ID))
	_, err = db.GetResource(ctx, api.ID, id.ID)
	wantErr(t, err, plans.KindNotFound, "")
	rs, _, err := db.ListResources(ctx, api.ID, pageAll)
	must(t, err)
	if len(rs) != 1 {
		t.Errorf("got %d resources, want only the root", len(rs))
	}
}

func TestListResourcesWithMethods(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	rs, next, err := db.ListResources(ctx, f.api.ID, pageAll)
	must(t, err)
	if len(rs) != 2 || next != "" {
		t.Fatalf("got %d resources and position %q, want 2 and none", len(rs), next)
	}
	for _, r := range rs {
		m := r.ResourceMethods["GET"]
		if m == nil || m.MethodIntegration == nil || m.MethodIntegration.Type != plans.IntegrationMock {
			t.Errorf("resource %s: got methods %+v, want GET with a MOCK integration", r.Path, r.ResourceMethods)
		}
	}
}
