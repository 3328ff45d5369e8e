package postgres_test

import (
	"strings"
	"testing"

	"tollgate/plans"
)

func TestCreateDeploymentCreatesStage(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	d := f.deployment
	if len(d.ID) != plans.ShortIDLen || d.CreatedDate.IsZero() || len(d.Resources) != 2 {
		t.Fatalf("got %+v, want a 6-character id, a date and 2 resources", d)
	}
	st, err := db.GetStage(ctx, f.api.ID, "prod")
	must(t, err)
	if st.DeploymentID != d.ID || st.Description != "production" || st.Variables["up"] != "example.com" {
		t.Errorf("got stage %+v, want deployment %s, description and variables", st, d.ID)
	}
	ch := lastChange(t, db)
	if !ch.Snapshot || strings.Join(ch.Stages, ",") != f.api.ID+":prod" {
		t.Errorf("got change %+v, want snapshot and stage %s:prod", ch, f.api.ID)
	}
	got, err := db.GetDeployment(ctx, f.api.ID, d.ID)
	must(t, err)
	if got.Description != "first" || len(got.Resources) != 2 || got.Resources[0].Path != "/" {
		t.Errorf("got %+v, want the copy sorted by path", got)
	}
}

func TestDeploymentIsACopy(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	_, err := db.UpdateMethod(ctx, f.api.ID, f.pets.ID, "GET", func(m *plans.Method) error {
		m.APIKeyRequired = false
		return nil
	})
	must(t, err)
	must(t, db.DeleteResource(ctx, f.api.ID, f.pets.ID))
	got, err := db.GetDeployment(ctx, f.api.ID, f.deployment.ID)
	must(t, err)
	var pets *plans.Resource
	for i := range got.Resources {
		if got.Resources[i].Path == "/pets" {
			pets = &got.Resources[i]
		}
	}
	if pets == nil || !pets.ResourceMethods["GET"].APIKeyRequired {
		t.Errorf("got resources %+v, want /pets GET requiring a key as deployed", got.Resources)
	}
}

func TestCreateDeploymentRepointsStage(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	d2 := &plans.Deployment{}
	must(t, db.CreateDeployment(ctx, f.api.ID, d2, "prod", "ignored", map[string]string{"extra": "1"}))
	st, err := db.GetStage(ctx, f.api.ID, "prod")
	must(t, err)
	if st.DeploymentID != d2.ID || st.Description != "production" || st.Variables["up"] != "example.com" || st.Variables["extra"] != "1" {
		t.Errorf("got stage %+v, want deployment %s, old description, merged variables", st, d2.ID)
	}
}

func TestCreateDeploymentWithoutStageChangesNothing(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	v := version(t, db)
	must(t, db.CreateDeployment(ctx, f.api.ID, &plans.Deployment{}, "", "", nil))
	if got := version(t, db); got != v {
		t.Errorf("got version %d, want %d", got, v)
	}
	ds, _, err := db.ListDeployments(ctx, f.api.ID, pageAll)
	must(t, err)
	if len(ds) != 2 {
		t.Errorf("got %d deployments, want 2", len(ds))
	}
}

func TestCreateDeploymentErrors(t *testing.T) {
	db := newDB(t)
	api := newAPI(t, db, "a")
	root := rootOf(t, db, api.ID)
	err := db.CreateDeployment(ctx, api.ID, &plans.Deployment{}, "", "", nil)
	wantErr(t, err, plans.KindInvalid, "resourceMethods")
	must(t, db.PutMethod(ctx, api.ID, root.ID, &plans.Method{HTTPMethod: "GET"}))
	err = db.CreateDeployment(ctx, api.ID, &plans.Deployment{}, "prod", "", nil)
	wantErr(t, err, plans.KindInvalid, "resourceMethods")
	if !strings.HasPrefix(plans.ErrorMessage(err), "No integration defined for method") {
		t.Errorf("got message %q, want No integration defined for method", plans.ErrorMessage(err))
	}
	must(t, db.PutIntegration(ctx, api.ID, root.ID, "GET", &plans.Integration{Type: plans.IntegrationMock}))
	err = db.CreateDeployment(ctx, api.ID, &plans.Deployment{}, "bad name", "", nil)
	wantErr(t, err, plans.KindInvalid, "stageName")
	err = db.CreateDeployment(ctx, "nope", &plans.Deployment{}, "", "", nil)
	wantMsg(t, err, plans.KindNotFound, "Invalid API identifier specified")
	ds, _, err := db.ListDeployments(ctx, api.ID, pageAll)
	must(t, err)
	if len(ds) != 0 {
		t.Errorf("got %d deployments after failures, want 0", len(ds))
	}
}

func TestDeleteDeployment(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	err := db.DeleteDeployment(ctx, f.api.ID, f.deployment.ID)
	wantErr(t, err, plans.KindInvalid, "deploymentId")
	if !strings.Contains(plans.ErrorMessage(err), "prod") {
		t.Errorf("got message %q, want it to name stage prod", plans.ErrorMessage(err))
	}
	d2 := &plans.Deployment{}
	must(t, db.CreateDeployment(ctx, f.api.ID, d2, "prod", "", nil))
	must(t, db.DeleteDeployment(ctx, f.api.ID, f.deployment.ID))
	_, err = db.GetDeployment(ctx, f.api.ID, f.deployment.ID)
	wantMsg(t, err, plans.KindNotFound, "Invalid Deployment identifier specified")
	wantMsg(t, db.DeleteDeployment(ctx, f.api.ID, f.deployment.ID), plans.KindNotFound, "Invalid Deployment identifier specified")
}
