package postgres_test

import (
	"testing"

	"tollgate/plans"
)

func TestMethodLifecycle(t *testing.T) {
	db := newDB(t)
	api := newAPI(t, db, "a")
	root := rootOf(t, db, api.ID)
	m := &plans.Method{HTTPMethod: "GET", APIKeyRequired: true,
		RequestParameters: map[string]bool{"method.request.querystring.q": true}}
	must(t, db.PutMethod(ctx, api.ID, root.ID, m))
	got, err := db.GetMethod(ctx, api.ID, root.ID, "GET")
	must(t, err)
	if !got.APIKeyRequired || got.AuthorizationType != "NONE" || !got.RequestParameters["method.request.querystring.q"] || got.MethodIntegration != nil {
		t.Fatalf("got %+v, want the stored method without integration", got)
	}
	must(t, db.PutIntegration(ctx, api.ID, root.ID, "GET", &plans.Integration{Type: plans.IntegrationHTTPProxy,
		URI: "http://example.com/{x}", CacheKeyParameters: []string{"method.request.querystring.q"}}))
	got, err = db.UpdateMethod(ctx, api.ID, root.ID, "GET", func(m *plans.Method) error {
		m.APIKeyRequired, m.HTTPMethod = false, "POST"
		return nil
	})
	must(t, err)
	if got.APIKeyRequired || got.HTTPMethod != "GET" || got.MethodIntegration == nil {
		t.Errorf("got %+v, want GET, no key required, integration kept", got)
	}
	in, err := db.GetIntegration(ctx, api.ID, root.ID, "GET")
	must(t, err)
	if in.TimeoutInMillis != plans.DefaultTimeoutMillis || in.HTTPMethod != "ANY" || len(in.CacheKeyParameters) != 1 || in.ConnectionType != "INTERNET" {
		t.Errorf("got %+v, want defaults filled and the cache key parameter", in)
	}
	// PutMethod on an existing method is 409 and changes nothing (as AWS):
	// a re-run script cannot open a method or drop its integration.
	wantMsg(t, db.PutMethod(ctx, api.ID, root.ID, &plans.Method{HTTPMethod: "GET"}), plans.KindConflict, "Method already exists for this resource")
	if in, err := db.GetIntegration(ctx, api.ID, root.ID, "GET"); err != nil || in.URI != "http://example.com/{x}" {
		t.Errorf("after the refused PutMethod: integration %+v, %v; want it kept", in, err)
	}
	must(t, db.DeleteMethod(ctx, api.ID, root.ID, "GET"))
	_, err = db.GetMethod(ctx, api.ID, root.ID, "GET")
	wantMsg(t, err, plans.KindNotFound, "Invalid Method identifier specified")
}

func TestMethodErrors(t *testing.T) {
	db := newDB(t)
	api := newAPI(t, db, "a")
	root := rootOf(t, db, api.ID)
	wantErr(t, db.PutMethod(ctx, api.ID, root.ID, &plans.Method{HTTPMethod: "FETCH"}), plans.KindInvalid, "httpMethod")
	wantErr(t, db.PutMethod(ctx, api.ID, root.ID, &plans.Method{HTTPMethod: "GET", AuthorizationType: "AWS_SIGV5"}), plans.KindInvalid, "authorizationType")
	wantErr(t, db.PutMethod(ctx, api.ID, root.ID, &plans.Method{HTTPMethod: "GET", AuthorizationType: "CUSTOM"}), plans.KindInvalid, "authorizerId")
	wantMsg(t, db.PutMethod(ctx, api.ID, "nope", &plans.Method{HTTPMethod: "GET"}), plans.KindNotFound, "Invalid Resource identifier specified")
	wantMsg(t, db.PutMethod(ctx, "nope", root.ID, &plans.Method{HTTPMethod: "GET"}), plans.KindNotFound, "Invalid API identifier specified")
	wantMsg(t, db.DeleteMethod(ctx, api.ID, root.ID, "GET"), plans.KindNotFound, "Invalid Method identifier specified")
	_, err := db.UpdateMethod(ctx, api.ID, root.ID, "GET", func(*plans.Method) error { return nil })
	wantMsg(t, err, plans.KindNotFound, "Invalid Method identifier specified")
	must(t, db.PutMethod(ctx, api.ID, root.ID, &plans.Method{HTTPMethod: "GET"}))
	_, err = db.UpdateMethod(ctx, api.ID, root.ID, "GET", func(m *plans.Method) error {
		m.RequestParameters = map[string]bool{"bogus": true}
		return nil
	})
	wantErr(t, err, plans.KindInvalid, "requestParameters")
}

func TestIntegrationErrors(t *testing.T) {
	db := newDB(t)
	api := newAPI(t, db, "a")
	root := rootOf(t, db, api.ID)
	wantMsg(t, db.PutIntegration(ctx, api.ID, root.ID, "GET", &plans.Integration{Type: plans.IntegrationMock}),
		plans.KindNotFound, "Invalid Method identifier specified")
	must(t, db.PutMethod(ctx, api.ID, root.ID, &plans.Method{HTTPMethod: "GET"}))
	cases := []struct {
		name  string
		in    plans.Integration
		field string
	}{
		{"AWS type", plans.Integration{Type: "AWS"}, "type"},
		{"HTTP type", plans.Integration{Type: "HTTP", URI: "http://x"}, "type"},
		{"no uri", plans.Integration{Type: plans.IntegrationHTTPProxy}, "uri"},
		{"timeout", plans.Integration{Type: plans.IntegrationMock, TimeoutInMillis: 30000}, "timeoutInMillis"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantErr(t, db.PutIntegration(ctx, api.ID, root.ID, "GET", &c.in), plans.KindInvalid, c.field)
		})
	}
	wantMsg(t, db.DeleteIntegration(ctx, api.ID, root.ID, "GET"), plans.KindNotFound, "No integration defined for method")
	must(t, db.PutIntegration(ctx, api.ID, root.ID, "GET", &plans.Integration{Type: plans.IntegrationMock}))
	in, err := db.UpdateIntegration(ctx, api.ID, root.ID, "GET", func(in *plans.Integration) error {
		in.TimeoutInMillis = 1000
		return nil
	})
	must(t, err)
	if in.TimeoutInMillis != 1000 {
		t.Errorf("got timeout %d, want 1000", in.TimeoutInMillis)
	}
	_, err = db.UpdateIntegration(ctx, api.ID, root.ID, "GET", func(in *plans.Integration) error {
		in.Type = "AWS_PROXY"
		return nil
	})
	wantErr(t, err, plans.KindInvalid, "type")
	must(t, db.DeleteIntegration(ctx, api.ID, root.ID, "GET"))
	_, err = db.GetIntegration(ctx, api.ID, root.ID, "GET")
	wantMsg(t, err, plans.KindNotFound, "No integration defined for method")
}

func TestResourceEditsDoNotChangeVersion(t *testing.T) {
	db := newDB(t)
	api := newAPI(t, db, "a")
	v := version(t, db)
	root := rootOf(t, db, api.ID)
	r, err := db.CreateResource(ctx, api.ID, root.ID, "x")
	must(t, err)
	addMethod(t, db, api.ID, r.ID, "GET", true)
	_, err = db.UpdateMethod(ctx, api.ID, r.ID, "GET", func(m *plans.Method) error { m.APIKeyRequired = false; return nil })
	must(t, err)
	must(t, db.DeleteResource(ctx, api.ID, r.ID))
	if got := version(t, db); got != v {
		t.Errorf("got version %d after resource, method and integration edits, want %d", got, v)
	}
}

func TestMethodAndIntegrationResponsesAreStored(t *testing.T) {
	db := newDB(t)
	api := newAPI(t, db, "a")
	root := rootOf(t, db, api.ID)
	must(t, db.PutMethod(ctx, api.ID, root.ID, &plans.Method{HTTPMethod: "OPTIONS", MethodResponses: map[string]*plans.MethodResponse{
		"200": {StatusCode: "200", ResponseParameters: map[string]bool{"method.response.header.Access-Control-Allow-Origin": false}}}}))
	ir := map[string]*plans.IntegrationResponse{"200": {StatusCode: "200",
		ResponseParameters: map[string]string{"method.response.header.Access-Control-Allow-Origin": "'*'"},
		ResponseTemplates:  map[string]string{"application/json": "{}"}}}
	must(t, db.PutIntegration(ctx, api.ID, root.ID, "OPTIONS", &plans.Integration{Type: plans.IntegrationMock,
		RequestTemplates: map[string]string{"application/json": `{"statusCode": 200}`}, IntegrationResponses: ir}))
	got, err := db.GetMethod(ctx, api.ID, root.ID, "OPTIONS")
	must(t, err)
	if got.MethodResponses["200"] == nil || got.MethodResponses["200"].ResponseParameters["method.response.header.Access-Control-Allow-Origin"] {
		t.Errorf("method responses: got %+v, want the 200 with its optional header", got.MethodResponses)
	}
	in := got.MethodIntegration
	if in.IntegrationResponses["200"] == nil || in.IntegrationResponses["200"].ResponseParameters["method.response.header.Access-Control-Allow-Origin"] != "'*'" ||
		in.MockStatus() != "200" {
		t.Errorf("integration: got %+v, want its integration response and request template", in)
	}
	_, err = db.UpdateIntegration(ctx, api.ID, root.ID, "OPTIONS", func(in *plans.Integration) error {
		in.IntegrationResponses["200"].StatusCode = "201"
		return nil
	})
	wantErr(t, err, plans.KindInvalid, "integrationResponses")
}
