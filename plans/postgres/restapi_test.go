package postgres_test

import (
	"strings"
	"testing"
	"time"

	"tollgate/plans"
)

var pageAll = plans.Page{Limit: 500}

func TestCreateRestApi(t *testing.T) {
	db := newDB(t)
	api := &plans.RestApi{Name: "pets", Description: "d", Tags: map[string]string{"a": "b"}}
	must(t, db.CreateRestApi(ctx, api))
	if len(api.ID) != plans.LongIDLen || !plans.ValidID(api.ID) {
		t.Errorf("got id %q, want 10 lowercase alphanumerics", api.ID)
	}
	if api.ApiKeySource != plans.ApiKeySourceHeader {
		t.Errorf("got apiKeySource %q, want HEADER", api.ApiKeySource)
	}
	// The clock's first reading seeded the account; this is the second.
	if want := t0.Add(time.Second); !api.CreatedDate.Equal(want) {
		t.Errorf("got createdDate %v, want the clock's %v", api.CreatedDate, want)
	}
	got, err := db.GetRestApi(ctx, api.ID)
	must(t, err)
	if got.Name != "pets" || got.Description != "d" || got.Tags["a"] != "b" || !got.CreatedDate.Equal(api.CreatedDate.Time) {
		t.Errorf("got %+v, want %+v", got, api)
	}
	root := rootOf(t, db, api.ID)
	if len(root.ID) != plans.LongIDLen || root.ParentID != "" {
		t.Errorf("got root %+v, want a 10-character id and no parent", root)
	}
}

func TestCreateRestApiInvalid(t *testing.T) {
	db := newDB(t)
	cases := []struct {
		name  string
		api   plans.RestApi
		field string
	}{
		{"no name", plans.RestApi{}, "name"},
		{"long description", plans.RestApi{Name: "a", Description: strings.Repeat("x", 4097)}, "description"},
		{"key source", plans.RestApi{Name: "a", ApiKeySource: "AUTHORIZER"}, "apiKeySource"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantErr(t, db.CreateRestApi(ctx, &c.api), plans.KindInvalid, c.field)
		})
	}
	apis, _, err := db.ListRestApis(ctx, pageAll)
	must(t, err)
	if len(apis) != 0 {
		t.Errorf("got %d apis after invalid creates, want 0", len(apis))
	}
}

func TestRestApiNotFound(t *testing.T) {
	db := newDB(t)
	_, err := db.GetRestApi(ctx, "nope")
	wantMsg(t, err, plans.KindNotFound, "Invalid API identifier specified")
	_, err = db.UpdateRestApi(ctx, "nope", func(*plans.RestApi) error { return nil })
	wantMsg(t, err, plans.KindNotFound, "Invalid API identifier specified")
	wantMsg(t, db.DeleteRestApi(ctx, "nope"), plans.KindNotFound, "Invalid API identifier specified")
}

func TestListRestApisPages(t *testing.T) {
	db := newDB(t)
	var ids []string
	for range 5 {
		ids = append(ids, newAPI(t, db, "a").ID)
	}
	var got []string
	pos := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("got more than 5 pages, want 3")
		}
		apis, next, err := db.ListRestApis(ctx, plans.Page{Position: pos, Limit: 2})
		must(t, err)
		if len(apis) > 2 {
			t.Fatalf("got page of %d, want at most 2", len(apis))
		}
		for _, a := range apis {
			got = append(got, a.ID)
		}
		if next == "" {
			break
		}
		pos = next
	}
	slicesSort(ids)
	if strings.Join(got, ",") != strings.Join(ids, ",") {
		t.Errorf("got ids %v, want %v", got, ids)
	}
	_, _, err := db.ListRestApis(ctx, plans.Page{Position: "!!"})
	wantErr(t, err, plans.KindInvalid, "position")
}

func TestUpdateRestApi(t *testing.T) {
	db := newDB(t)
	api := newAPI(t, db, "a")
	got, err := db.UpdateRestApi(ctx, api.ID, func(a *plans.RestApi) error {
		a.Name, a.ID = "b", "hijack"
		return nil
	})
	must(t, err)
	if got.Name != "b" || got.ID != api.ID {
		t.Errorf("got %+v, want name b and id %s", got, api.ID)
	}
	_, err = db.UpdateRestApi(ctx, api.ID, func(a *plans.RestApi) error { a.Name = ""; return nil })
	wantErr(t, err, plans.KindInvalid, "name")
	stored, err := db.GetRestApi(ctx, api.ID)
	must(t, err)
	if stored.Name != "b" {
		t.Errorf("got name %q after a refused update, want b", stored.Name)
	}
	boom := plans.Invalid("patchOperations", "bad patch")
	_, err = db.UpdateRestApi(ctx, api.ID, func(*plans.RestApi) error { return boom })
	wantErr(t, err, plans.KindInvalid, "patchOperations")
}

func TestDeleteRestApi(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	p := newPlan(t, db, "gold", plans.ApiStage{ApiID: f.api.ID, Stage: "prod"})
	err := db.DeleteRestApi(ctx, f.api.ID)
	wantErr(t, err, plans.KindInvalid, "restApiId")
	if !strings.Contains(plans.ErrorMessage(err), p.ID) {
		t.Errorf("got message %q, want it to name plan %s", plans.ErrorMessage(err), p.ID)
	}
	must(t, db.DeleteUsagePlan(ctx, p.ID))
	must(t, db.DeleteRestApi(ctx, f.api.ID))
	_, err = db.GetRestApi(ctx, f.api.ID)
	wantErr(t, err, plans.KindNotFound, "")
	ch := lastChange(t, db)
	if !ch.Snapshot || strings.Join(ch.Stages, ",") != f.api.ID+":prod" {
		t.Errorf("got change %+v, want snapshot and stage %s:prod", ch, f.api.ID)
	}
}

func TestEmptyListsAreNotNil(t *testing.T) {
	db := newDB(t)
	apis, next, err := db.ListRestApis(ctx, pageAll)
	must(t, err)
	if apis == nil || next != "" {
		t.Errorf("got %#v and position %q, want an empty slice and none", apis, next)
	}
	keys, _, err := db.ListApiKeys(ctx, "", "", pageAll)
	must(t, err)
	if keys == nil {
		t.Errorf("got nil keys, want an empty slice")
	}
}
