package admin_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"

	"tollgate/openapi/openapitest"
	"tollgate/plans"
)

// apiShape is what must survive an export and a new import: every
// resource path with its methods as GetResources shows them, ids and
// cache namespaces (the resource id by default) left out.
func apiShape(t *testing.T, e *env, apiID string) string {
	t.Helper()
	rs := call(e.c.GetResources(e.ctx, &apigateway.GetResourcesInput{RestApiId: &apiID, Limit: aws.Int32(500),
		Embed: []string{"methods"}})).must(t)
	type method struct {
		Key    bool
		Params map[string]bool
		Resp   map[string]types.MethodResponse
		Integ  *types.Integration
	}
	shape := map[string]map[string]method{}
	for _, r := range rs.Items {
		ms := map[string]method{}
		for verb, m := range r.ResourceMethods {
			in := m.MethodIntegration
			if in != nil && aws.ToString(in.CacheNamespace) == aws.ToString(r.Id) {
				in.CacheNamespace = nil
			}
			ms[verb] = method{aws.ToBool(m.ApiKeyRequired), m.RequestParameters, m.MethodResponses, in}
		}
		shape[aws.ToString(r.Path)] = ms
	}
	b, _ := json.Marshal(shape)
	return string(b)
}

func TestImportDeployExportReimport(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	doc, err := os.ReadFile("testdata/petstore-aws.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.c.ImportRestApi(e.ctx, &apigateway.ImportRestApiInput{Body: doc, FailOnWarnings: true})
	wantBadRequest(t, err, "failonwarnings")
	if apis := call(e.c.GetRestApis(e.ctx, &apigateway.GetRestApisInput{})).must(t); len(apis.Items) != 0 {
		t.Fatalf("after a refused import: %d APIs, want none", len(apis.Items))
	}
	api := call(e.c.ImportRestApi(e.ctx, &apigateway.ImportRestApiInput{Body: doc})).must(t)
	if aws.ToString(api.Name) != "petstore" || len(api.Warnings) != 4 {
		t.Fatalf("import: got %q with warnings %q, want petstore and 4 warnings", aws.ToString(api.Name), api.Warnings)
	}
	// The aws_proxy method came without an integration: deploying needs one.
	_, err = e.c.CreateDeployment(e.ctx, &apigateway.CreateDeploymentInput{RestApiId: api.Id, StageName: aws.String("prod")})
	wantBadRequest(t, err, "No integration defined for method")
	overwrite := strings.Replace(string(doc), "type: aws_proxy", "type: mock", 1)
	put := call(e.c.PutRestApi(e.ctx, &apigateway.PutRestApiInput{RestApiId: api.Id, Mode: types.PutModeOverwrite, Body: []byte(overwrite)})).must(t)
	if len(put.Warnings) != 3 {
		t.Errorf("put: got warnings %q, want 3", put.Warnings)
	}
	call(e.c.CreateDeployment(e.ctx, &apigateway.CreateDeploymentInput{RestApiId: api.Id, StageName: aws.String("prod")})).must(t)
	want := apiShape(t, e, *api.Id)

	for _, exportType := range []string{"oas30", "swagger"} {
		for _, accept := range []string{"application/json", "application/yaml"} {
			// The Go SDK replaces Accept with application/json (the AWS CLI
			// sends it as given), so the export is fetched directly.
			body, ct := e.export(*api.Id, "prod", exportType, accept)
			if ct != accept {
				t.Errorf("%s %s: content type %q", exportType, accept, ct)
			}
			again := call(e.c.ImportRestApi(e.ctx, &apigateway.ImportRestApiInput{Body: body, FailOnWarnings: true})).must(t)
			if got := apiShape(t, e, *again.Id); got != want {
				t.Errorf("%s %s: import(export(api)) differs:\n got %s\nwant %s\n%s", exportType, accept, got, want, body)
			}
		}
	}
	grs := call(e.c.GetGatewayResponses(e.ctx, &apigateway.GetGatewayResponsesInput{RestApiId: api.Id})).must(t)
	var put4xx []string
	for _, g := range grs.Items {
		if !g.DefaultResponse {
			put4xx = append(put4xx, string(g.ResponseType))
		}
	}
	sort.Strings(put4xx)
	if !slices.Equal(put4xx, []string{"DEFAULT_4XX", "THROTTLED"}) {
		t.Errorf("gateway responses: got %v", put4xx)
	}
}

func TestPutRestApiMergeKeepsWhatTheDocumentDoesNotName(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	apiID, _ := e.api("pets", "")
	doc := `{"openapi":"3.0.1","info":{"title":"ignored in merge","version":"1"},"paths":{"/toys":{"get":{"responses":{"200":{"description":"ok"}},
		"x-amazon-apigateway-integration":{"type":"mock"}}},"/pets":{"post":{"responses":{"201":{"description":"ok"}},"x-amazon-apigateway-integration":{"type":"mock"}}}}}`
	call(e.c.PutRestApi(e.ctx, &apigateway.PutRestApiInput{RestApiId: &apiID, Mode: types.PutModeMerge, Body: []byte(doc)})).must(t)
	shape := apiShape(t, e, apiID)
	for _, want := range []string{`"/toys":{"GET"`, `"/pets":{"GET"`, `"POST"`} {
		if !strings.Contains(shape, want) {
			t.Errorf("after merge: %s, want %s", shape, want)
		}
	}
	if a := call(e.c.GetRestApi(e.ctx, &apigateway.GetRestApiInput{RestApiId: &apiID})).must(t); aws.ToString(a.Name) != "pets" {
		t.Errorf("merge renamed the API to %q", aws.ToString(a.Name))
	}
	bad := `{"openapi":"3.0.1","info":{"title":"t","version":"1"},"paths":{"/pets/{id}":{"get":{"responses":{"200":{"description":"ok"}},
		"x-amazon-apigateway-integration":{"type":"http_proxy","uri":"nope"}}}}}`
	_, err := e.c.PutRestApi(e.ctx, &apigateway.PutRestApiInput{RestApiId: &apiID, Mode: types.PutModeOverwrite, Body: []byte(bad)})
	wantBadRequest(t, err, "paths./pets/{id}.get.x-amazon-apigateway-integration.uri")
	if after := apiShape(t, e, apiID); after != shape {
		t.Errorf("a refused overwrite changed the API:\n got %s\nwant %s", after, shape)
	}
}

// export GETs the stage's export with extensions=apigateway and Accept.
func (e *env) export(apiID, stage, exportType, accept string) ([]byte, string) {
	e.t.Helper()
	req, err := http.NewRequest("GET", e.url+"/restapis/"+apiID+"/stages/"+stage+"/exports/"+exportType+"?extensions=apigateway", nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		e.t.Fatalf("export: got %d %s", resp.StatusCode, b)
	}
	return b, resp.Header.Get("Content-Type")
}

// FuzzImportRestApi feeds arbitrary documents to ImportRestApi against a
// real database: never a 5xx, and a refused import leaves no API behind
// (all or nothing); an accepted one adds exactly one.
func FuzzImportRestApi(f *testing.F) {
	h, _ := fuzzAdmin(f)
	if doc, err := os.ReadFile("testdata/petstore-aws.yaml"); err == nil {
		f.Add(string(doc), false)
		f.Add(string(doc), true)
	}
	for _, seed := range []string{
		`{"openapi":"3.0.1","info":{"title":"t","version":"1"},"paths":{"/a/{b}":{"get":{"responses":{"200":{"description":"x"}},"x-amazon-apigateway-integration":{"type":"mock"}}}}}`,
		`{"openapi":"3.0.1","info":{"title":"t","version":"1"},"paths":{"/a":{"get":{"responses":{"200":{"description":"x"}},"x-amazon-apigateway-integration":{"type":"http_proxy","uri":"http://x/{y}","timeoutInMillis":10}}}}}`,
		`{"swagger":"2.0","info":{"title":"t","version":"1"},"paths":{"/a":{"x-amazon-apigateway-any-method":{"responses":{"200":{"description":"x"}}}}}}`,
		"openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths: {/x: {get: {responses: {'200': {description: x}}}}}\n", "", "{",
	} {
		f.Add(seed, false)
	}
	f.Fuzz(func(t *testing.T, doc string, failOnWarnings bool) {
		before := countAPIs(t, h)
		path := "/restapis?mode=import"
		if failOnWarnings {
			path += "&failonwarnings=true"
		}
		status, out := serve(h, "POST", path, doc)
		after := countAPIs(t, h)
		switch {
		case status >= 500:
			t.Fatalf("doc %q: got %d %s, want < 500", doc, status, out)
		case status >= 400 && after != before:
			t.Fatalf("doc %q: refused (%d %s) but the API count went %d → %d", doc, status, out, before, after)
		case status < 400 && after != before+1:
			t.Fatalf("doc %q: imported (%d) but the API count went %d → %d", doc, status, before, after)
		}
	})
}

// countAPIs counts the REST APIs through GetRestApis (every page).
func countAPIs(t *testing.T, h http.Handler) int { return countItems(t, h, "/restapis") }

// The SDK's import parameters reach the importer: basepath places the
// document's base path as API Gateway does, and an unknown mode is a 400.
func TestImportBasePathParameter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	doc := []byte(`{"swagger":"2.0","info":{"title":"v1","version":"1"},"basePath":"/prod/v1","paths":{"/pets":{"get":{"x-amazon-apigateway-integration":{"type":"mock"}}}}}`)
	for mode, want := range map[string]string{"prepend": "/prod/v1/pets", "split": "/v1/pets", "ignore": "/pets"} {
		api := call(e.c.ImportRestApi(e.ctx, &apigateway.ImportRestApiInput{Body: doc, Parameters: map[string]string{"basepath": mode}})).must(t)
		if shape := apiShape(t, e, *api.Id); !strings.Contains(shape, `"`+want+`":{"GET"`) {
			t.Errorf("basepath=%s: got %s, want GET %s", mode, shape, want)
		}
	}
	_, err := e.c.ImportRestApi(e.ctx, &apigateway.ImportRestApiInput{Body: doc, Parameters: map[string]string{"basepath": "strip"}})
	wantBadRequest(t, err, "basepath")
}

// A document as large as the admin's body cap allows imports: 16,000
// paths (5.4 MiB) become 48,001 resources in one transaction, without
// the statement timeout cutting it off as database unavailable.
func TestLargeDocumentImportsWhole(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	doc := openapitest.LargeDocument(16000)
	status, errType, body := e.raw("POST", "/restapis?mode=import&failonwarnings=true", string(doc))
	if status != 201 {
		t.Fatalf("import of %d bytes: got %d %s %s, want 201", len(doc), status, errType, body)
	}
	var api plans.RestApi
	if err := json.Unmarshal([]byte(body), &api); err != nil {
		t.Fatal(err)
	}
	resources, last, position := 0, plans.Resource{}, ""
	for {
		var page struct {
			Item     []plans.Resource
			Position string
		}
		e.getJSON("/restapis/"+api.ID+"/resources?limit=500"+position, &page)
		for _, r := range page.Item {
			resources++
			if r.Path == "/r15999/items/{id}" {
				last = r
			}
		}
		if page.Position == "" {
			break
		}
		position = "&position=" + page.Position
	}
	var m plans.Method
	e.getJSON("/restapis/"+api.ID+"/resources/"+last.ID+"/methods/GET", &m)
	if resources != 48001 || m.MethodIntegration == nil || m.MethodIntegration.URI != "http://backend.example/r15999/items/{id}" {
		t.Errorf("got %d resources and GET %+v on the last path, want 48001 and its integration", resources, m)
	}
}
