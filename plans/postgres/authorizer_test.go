package postgres_test

import (
	"strings"
	"testing"

	"tollgate/plans"
)

func lambdaAuthorizer(name string) *plans.Authorizer {
	return &plans.Authorizer{Name: name, Type: plans.AuthorizerToken, IdentitySource: "method.request.header.Authorization",
		AuthorizerURI: "arn:aws:apigateway:eu-west-1:lambda:path/2015-03-31/functions/arn:aws:lambda:eu-west-1:1:function:auth/invocations"}
}

func TestAuthorizerLifecycle(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	a := lambdaAuthorizer("tok")
	must(t, db.CreateAuthorizer(ctx, f.api.ID, a))
	if a.ID == "" || a.AuthorizerResultTTLInSeconds == nil || *a.AuthorizerResultTTLInSeconds != plans.DefaultAuthorizerTTL {
		t.Fatalf("created %+v, want an id and AWS's default TTL", a)
	}
	wantMsg(t, db.CreateAuthorizer(ctx, f.api.ID, lambdaAuthorizer("tok")), plans.KindConflict, "An authorizer of this name exists")
	got, err := db.GetAuthorizer(ctx, f.api.ID, a.ID)
	must(t, err)
	if got.Name != "tok" || got.AuthorizerURI != a.AuthorizerURI || got.IdentitySource != a.IdentitySource {
		t.Errorf("got %+v, want %+v", got, a)
	}
	// A method secured by it names it; the authorizer cannot go while it does.
	_, err = db.UpdateMethod(ctx, f.api.ID, f.pets.ID, "GET", func(m *plans.Method) error {
		m.AuthorizationType, m.AuthorizerID = plans.AuthorizationCustom, a.ID
		return nil
	})
	must(t, err)
	wantMsg(t, db.DeleteAuthorizer(ctx, f.api.ID, a.ID), plans.KindConflict, "Cannot delete authorizer 'tok', is referenced in method: GET/pets")
	// Turning it into a user pool would no longer fit the CUSTOM method.
	_, err = db.UpdateAuthorizer(ctx, f.api.ID, a.ID, func(a *plans.Authorizer) error {
		a.Type, a.ProviderARNs = plans.AuthorizerCognito, []string{"arn:aws:cognito-idp:eu-west-1:1:userpool/x"}
		return nil
	})
	wantErr(t, err, plans.KindInvalid, "type")
	upd, err := db.UpdateAuthorizer(ctx, f.api.ID, a.ID, func(a *plans.Authorizer) error {
		ttl := int32(0)
		a.AuthorizerResultTTLInSeconds, a.IdentityValidationExpression = &ttl, "^Bearer .+$"
		return nil
	})
	must(t, err)
	if *upd.AuthorizerResultTTLInSeconds != 0 || upd.IdentityValidationExpression != "^Bearer .+$" || upd.ID != a.ID {
		t.Errorf("updated %+v", upd)
	}
	// The deployment copies the authorizers with the methods.
	d := &plans.Deployment{}
	must(t, db.CreateDeployment(ctx, f.api.ID, d, "prod", "", nil))
	dep, err := db.GetDeployment(ctx, f.api.ID, d.ID)
	must(t, err)
	if len(dep.Authorizers) != 1 || dep.Authorizers[0].ID != a.ID || *dep.Authorizers[0].AuthorizerResultTTLInSeconds != 0 {
		t.Errorf("deployment authorizers %+v, want the updated one", dep.Authorizers)
	}
	def := plans.StageDefinition(&plans.RestApi{Name: "pets"}, dep)
	for _, r := range def.Resources {
		if m := r.ResourceMethods["GET"]; r.Path == "/pets" && (m.AuthorizerID != "tok" || !m.Closed()) {
			t.Errorf("stage definition's /pets GET %+v, want it closed and naming its authorizer by name", m)
		}
	}
	// Opening the method releases the authorizer.
	m, err := db.UpdateMethod(ctx, f.api.ID, f.pets.ID, "GET", func(m *plans.Method) error {
		m.AuthorizationType = plans.AuthorizationNone
		return nil
	})
	must(t, err)
	if m.AuthorizerID != "" || m.Closed() {
		t.Errorf("opened method %+v, want no authorizer", m)
	}
	must(t, db.DeleteAuthorizer(ctx, f.api.ID, a.ID))
	_, err = db.GetAuthorizer(ctx, f.api.ID, a.ID)
	wantMsg(t, err, plans.KindNotFound, "Invalid authorizer identifier specified")
	as, err := db.Authorizers(ctx, f.api.ID)
	must(t, err)
	if len(as) != 0 {
		t.Errorf("authorizers %+v after delete, want none", as)
	}
}

func TestMethodAuthorizerMustBeTheAPIsOfTheMatchingType(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	other := newAPI(t, db, "other")
	foreign := lambdaAuthorizer("foreign")
	must(t, db.CreateAuthorizer(ctx, other.ID, foreign))
	pool := &plans.Authorizer{Name: "pool", Type: plans.AuthorizerCognito, ProviderARNs: []string{"arn:aws:cognito-idp:eu-west-1:1:userpool/x"}}
	must(t, db.CreateAuthorizer(ctx, f.api.ID, pool))
	for _, m := range []*plans.Method{
		{HTTPMethod: "POST", AuthorizationType: plans.AuthorizationCustom, AuthorizerID: foreign.ID},
		{HTTPMethod: "POST", AuthorizationType: plans.AuthorizationCustom, AuthorizerID: pool.ID},
		{HTTPMethod: "POST", AuthorizationType: plans.AuthorizationCognito},
	} {
		wantErr(t, db.PutMethod(ctx, f.api.ID, f.root.ID, m), plans.KindInvalid, "authorizerId")
	}
	m := &plans.Method{HTTPMethod: "POST", AuthorizationType: plans.AuthorizationCognito, AuthorizerID: pool.ID, AuthorizationScopes: []string{"email"}}
	must(t, db.PutMethod(ctx, f.api.ID, f.root.ID, m))
	got, err := db.GetMethod(ctx, f.api.ID, f.root.ID, "POST")
	must(t, err)
	if got.AuthorizerID != pool.ID || strings.Join(got.AuthorizationScopes, ",") != "email" {
		t.Errorf("got %+v, want the pool and its scope", got)
	}
	iam := &plans.Method{HTTPMethod: "PUT", AuthorizationType: plans.AuthorizationIAM, AuthorizerID: pool.ID}
	must(t, db.PutMethod(ctx, f.api.ID, f.root.ID, iam))
	if got, _ := db.GetMethod(ctx, f.api.ID, f.root.ID, "PUT"); got.AuthorizationType != plans.AuthorizationIAM || got.AuthorizerID != "" {
		t.Errorf("got %+v, want AWS_IAM without an authorizer", got)
	}
	wantErr(t, db.CreateAuthorizer(ctx, f.api.ID, &plans.Authorizer{Name: "x", Type: plans.AuthorizerToken, AuthorizerURI: "arn:x"}), plans.KindInvalid, "identitySource")
	wantErr(t, db.CreateAuthorizer(ctx, f.api.ID, &plans.Authorizer{Name: "x", Type: "JWT"}), plans.KindInvalid, "type")
}

// An import names authorizers by their scheme names: overwrite replaces
// the API's authorizers (one of the same name keeps its id), merge adds.
func TestImportStoresAuthorizersByName(t *testing.T) {
	db := newDB(t)
	tok := *lambdaAuthorizer("tok")
	def := &plans.ApiDefinition{Name: "a", ApiKeySource: plans.ApiKeySourceHeader, Authorizers: []plans.Authorizer{tok},
		Resources: []plans.Resource{{Path: "/"}, {Path: "/p", PathPart: "p", ResourceMethods: map[string]*plans.Method{
			"GET": {HTTPMethod: "GET", AuthorizationType: plans.AuthorizationCustom, AuthorizerID: "tok"}}}}}
	api, err := db.ImportRestApi(ctx, def)
	must(t, err)
	as, err := db.Authorizers(ctx, api.ID)
	must(t, err)
	if len(as) != 1 || as[0].Name != "tok" {
		t.Fatalf("authorizers %+v, want tok", as)
	}
	if def.Resources[1].ResourceMethods["GET"].AuthorizerID != "tok" {
		t.Errorf("the import changed its definition's method: %+v", def.Resources[1].ResourceMethods["GET"])
	}
	rs, _, err := db.ListResources(ctx, api.ID, plansPage(10))
	must(t, err)
	for _, r := range rs {
		if m := r.ResourceMethods["GET"]; r.Path == "/p" && m.AuthorizerID != as[0].ID {
			t.Errorf("stored method %+v, want authorizer id %s", m, as[0].ID)
		}
	}
	// Overwrite with tok and a new one: tok keeps its id.
	req := plans.Authorizer{Name: "req", Type: plans.AuthorizerRequest, AuthorizerURI: "arn:y"}
	def.Authorizers = []plans.Authorizer{req, tok}
	_, err = db.PutRestApi(ctx, api.ID, plans.PutModeOverwrite, def)
	must(t, err)
	again, err := db.Authorizers(ctx, api.ID)
	must(t, err)
	if len(again) != 2 || again[1].Name != "tok" || again[1].ID != as[0].ID {
		t.Errorf("after overwrite %+v, want req and tok with its id", again)
	}
	// A method naming an authorizer of the wrong type is refused, naming it.
	bad := &plans.ApiDefinition{Name: "b", ApiKeySource: plans.ApiKeySourceHeader, Authorizers: []plans.Authorizer{tok},
		Resources: []plans.Resource{{Path: "/", ResourceMethods: map[string]*plans.Method{
			"GET": {HTTPMethod: "GET", AuthorizationType: plans.AuthorizationCognito, AuthorizerID: "tok"}}}}}
	_, err = db.ImportRestApi(ctx, bad)
	wantErr(t, err, plans.KindInvalid, "paths./")
	// Overwrite without authorizers deletes them.
	def.Authorizers, def.Resources = nil, []plans.Resource{{Path: "/"}}
	_, err = db.PutRestApi(ctx, api.ID, plans.PutModeOverwrite, def)
	must(t, err)
	if as, _ := db.Authorizers(ctx, api.ID); len(as) != 0 {
		t.Errorf("after overwrite without authorizers: %+v", as)
	}
}
