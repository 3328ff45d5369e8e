package admin_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"
)

func TestRestApiLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	before := time.Now().Add(-time.Minute)
	a := call(e.c.CreateRestApi(e.ctx, &apigateway.CreateRestApiInput{Name: aws.String("pets"), Description: aws.String("d")})).must(t)
	if len(*a.Id) != 10 || *a.Name != "pets" || a.ApiKeySource != types.ApiKeySourceTypeHeader {
		t.Fatalf("got id %q name %q source %q, want a 10-character id, pets, HEADER", *a.Id, *a.Name, a.ApiKeySource)
	}
	if a.CreatedDate == nil || a.CreatedDate.Before(before) {
		t.Fatalf("got createdDate %v, want about now", a.CreatedDate)
	}
	got := call(e.c.GetRestApi(e.ctx, &apigateway.GetRestApiInput{RestApiId: a.Id})).must(t)
	if *got.Name != "pets" || *got.Description != "d" || !got.CreatedDate.Equal(*a.CreatedDate) {
		t.Fatalf("got %q %q %v, want pets d %v", *got.Name, *got.Description, got.CreatedDate, a.CreatedDate)
	}
	upd := call(e.c.UpdateRestApi(e.ctx, &apigateway.UpdateRestApiInput{RestApiId: a.Id, PatchOperations: []types.PatchOperation{
		op(types.OpReplace, "/name", "cats"), op(types.OpReplace, "/description", "meow"),
	}})).must(t)
	if *upd.Name != "cats" || *upd.Description != "meow" {
		t.Fatalf("got %q %q, want cats meow", *upd.Name, *upd.Description)
	}
	_, err := e.c.UpdateRestApi(e.ctx, &apigateway.UpdateRestApiInput{RestApiId: a.Id, PatchOperations: []types.PatchOperation{
		op(types.OpReplace, "/binaryMediaTypes", "x"),
	}})
	wantBadRequest(t, err, "/binaryMediaTypes")
	list := call(e.c.GetRestApis(e.ctx, &apigateway.GetRestApisInput{})).must(t)
	if len(list.Items) != 1 || *list.Items[0].Id != *a.Id || list.Position != nil {
		t.Fatalf("got %d items, position %v, want just %s and no position", len(list.Items), list.Position, *a.Id)
	}
	if n := e.pub.count(); n != 2 {
		t.Fatalf("got %d publishes after create and update, want 2", n)
	}
	call(e.c.DeleteRestApi(e.ctx, &apigateway.DeleteRestApiInput{RestApiId: a.Id})).must(t)
	_, err = e.c.GetRestApi(e.ctx, &apigateway.GetRestApiInput{RestApiId: a.Id})
	wantCode(t, err, "NotFoundException")
	if n := e.pub.count(); n != 3 {
		t.Fatalf("got %d publishes after delete, want 3", n)
	}
}

func TestResourcesMethodsIntegrations(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	apiID, petsID := e.api("pets", "")
	id := aws.String(apiID)
	pet := call(e.c.CreateResource(e.ctx, &apigateway.CreateResourceInput{RestApiId: id, ParentId: aws.String(petsID), PathPart: aws.String("{petId}")})).must(t)
	if *pet.Path != "/pets/{petId}" || *pet.ParentId != petsID || len(*pet.Id) != 6 {
		t.Fatalf("got path %q parent %q id %q, want /pets/{petId} under %s with a 6-character id", *pet.Path, *pet.ParentId, *pet.Id, petsID)
	}
	_, err := e.c.CreateResource(e.ctx, &apigateway.CreateResourceInput{RestApiId: id, ParentId: aws.String(petsID), PathPart: aws.String("{petId}")})
	wantCode(t, err, "ConflictException")
	_, err = e.c.CreateResource(e.ctx, &apigateway.CreateResourceInput{RestApiId: id, ParentId: aws.String(petsID), PathPart: aws.String("a/b")})
	wantBadRequest(t, err, "pathPart")

	call(e.c.PutMethod(e.ctx, &apigateway.PutMethodInput{RestApiId: id, ResourceId: pet.Id, HttpMethod: aws.String("GET"), AuthorizationType: aws.String("NONE")})).must(t)
	in := call(e.c.PutIntegration(e.ctx, &apigateway.PutIntegrationInput{RestApiId: id, ResourceId: pet.Id, HttpMethod: aws.String("GET"),
		Type: types.IntegrationTypeHttpProxy, IntegrationHttpMethod: aws.String("GET"), Uri: aws.String("https://backend.example.com/pets/{petId}"),
		CacheKeyParameters: []string{"method.request.path.petId"}})).must(t)
	if in.TimeoutInMillis != 29000 || *in.Uri != "https://backend.example.com/pets/{petId}" || in.Type != types.IntegrationTypeHttpProxy {
		t.Fatalf("got timeout %d uri %q type %q, want 29000, the uri, HTTP_PROXY", in.TimeoutInMillis, *in.Uri, in.Type)
	}
	_, err = e.c.PutIntegration(e.ctx, &apigateway.PutIntegrationInput{RestApiId: id, ResourceId: pet.Id, HttpMethod: aws.String("GET"), Type: types.IntegrationTypeAwsProxy, Uri: aws.String("arn:x")})
	wantBadRequest(t, err, "AWS_PROXY")

	upd := call(e.c.UpdateIntegration(e.ctx, &apigateway.UpdateIntegrationInput{RestApiId: id, ResourceId: pet.Id, HttpMethod: aws.String("GET"), PatchOperations: []types.PatchOperation{
		op(types.OpReplace, "/timeoutInMillis", "5000"),
		op(types.OpAdd, "/cacheKeyParameters/method.request.querystring.lang", ""),
		op(types.OpRemove, "/cacheKeyParameters/method.request.path.petId", ""),
		op(types.OpReplace, "/cacheNamespace", "ns"),
		op(types.OpReplace, "/uri", "https://other.example.com/{petId}"),
	}})).must(t)
	if upd.TimeoutInMillis != 5000 || len(upd.CacheKeyParameters) != 1 || upd.CacheKeyParameters[0] != "method.request.querystring.lang" || *upd.CacheNamespace != "ns" || *upd.Uri != "https://other.example.com/{petId}" {
		t.Fatalf("got %d %v %q %q, want 5000 [lang] ns and the new uri", upd.TimeoutInMillis, upd.CacheKeyParameters, *upd.CacheNamespace, *upd.Uri)
	}
	_, err = e.c.UpdateIntegration(e.ctx, &apigateway.UpdateIntegrationInput{RestApiId: id, ResourceId: pet.Id, HttpMethod: aws.String("GET"), PatchOperations: []types.PatchOperation{
		op(types.OpReplace, "/timeoutInMillis", "30000"),
	}})
	wantBadRequest(t, err, "timeoutInMillis")

	m := call(e.c.UpdateMethod(e.ctx, &apigateway.UpdateMethodInput{RestApiId: id, ResourceId: pet.Id, HttpMethod: aws.String("GET"), PatchOperations: []types.PatchOperation{
		op(types.OpReplace, "/apiKeyRequired", "true"),
	}})).must(t)
	if m.ApiKeyRequired == nil || !*m.ApiKeyRequired {
		t.Fatalf("got apiKeyRequired %v, want true", m.ApiKeyRequired)
	}
	gm := call(e.c.GetMethod(e.ctx, &apigateway.GetMethodInput{RestApiId: id, ResourceId: pet.Id, HttpMethod: aws.String("GET")})).must(t)
	if gm.MethodIntegration == nil || gm.MethodIntegration.TimeoutInMillis != 5000 || !*gm.ApiKeyRequired {
		t.Fatalf("got method %+v, want apiKeyRequired and its integration", gm)
	}

	plain := call(e.c.GetResources(e.ctx, &apigateway.GetResourcesInput{RestApiId: id})).must(t)
	embedded := call(e.c.GetResources(e.ctx, &apigateway.GetResourcesInput{RestApiId: id, Embed: []string{"methods"}})).must(t)
	if len(plain.Items) != 3 || len(embedded.Items) != 3 {
		t.Fatalf("got %d and %d resources, want 3 (/, /pets, /pets/{petId})", len(plain.Items), len(embedded.Items))
	}
	for _, r := range embedded.Items {
		if *r.Path == "/pets/{petId}" {
			g, ok := r.ResourceMethods["GET"]
			if !ok || g.MethodIntegration == nil || *g.MethodIntegration.Uri != "https://other.example.com/{petId}" {
				t.Fatalf("got embedded methods %+v, want GET with its integration", r.ResourceMethods)
			}
		}
	}
	for _, r := range plain.Items {
		if *r.Path == "/pets/{petId}" {
			if g, ok := r.ResourceMethods["GET"]; !ok || g.MethodIntegration != nil {
				t.Fatalf("got methods %+v without embed, want GET named only", r.ResourceMethods)
			}
		}
	}

	renamed := call(e.c.UpdateResource(e.ctx, &apigateway.UpdateResourceInput{RestApiId: id, ResourceId: aws.String(petsID), PatchOperations: []types.PatchOperation{
		op(types.OpReplace, "/pathPart", "animals"),
	}})).must(t)
	if *renamed.Path != "/animals" {
		t.Fatalf("got path %q after rename, want /animals", *renamed.Path)
	}
	child := call(e.c.GetResource(e.ctx, &apigateway.GetResourceInput{RestApiId: id, ResourceId: pet.Id})).must(t)
	if *child.Path != "/animals/{petId}" {
		t.Fatalf("got child path %q after renaming its parent, want /animals/{petId}", *child.Path)
	}
	_, err = e.c.UpdateResource(e.ctx, &apigateway.UpdateResourceInput{RestApiId: id, ResourceId: aws.String(petsID), PatchOperations: []types.PatchOperation{
		op(types.OpReplace, "/parentId", "x"),
	}})
	wantBadRequest(t, err, "/parentId")

	call(e.c.DeleteIntegration(e.ctx, &apigateway.DeleteIntegrationInput{RestApiId: id, ResourceId: pet.Id, HttpMethod: aws.String("GET")})).must(t)
	_, err = e.c.GetIntegration(e.ctx, &apigateway.GetIntegrationInput{RestApiId: id, ResourceId: pet.Id, HttpMethod: aws.String("GET")})
	wantCode(t, err, "NotFoundException")
	call(e.c.DeleteMethod(e.ctx, &apigateway.DeleteMethodInput{RestApiId: id, ResourceId: pet.Id, HttpMethod: aws.String("GET")})).must(t)
	call(e.c.DeleteResource(e.ctx, &apigateway.DeleteResourceInput{RestApiId: id, ResourceId: pet.Id})).must(t)
	_, err = e.c.GetResource(e.ctx, &apigateway.GetResourceInput{RestApiId: id, ResourceId: pet.Id})
	wantCode(t, err, "NotFoundException")
}

// Every RestApi answer names its root resource, as AWS's does, so a
// script can create resources under it without listing them first.
func TestRestApiNamesItsRootResource(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	created := call(e.c.CreateRestApi(e.ctx, &apigateway.CreateRestApiInput{Name: aws.String("root")})).must(t)
	rs := call(e.c.GetResources(e.ctx, &apigateway.GetResourcesInput{RestApiId: created.Id})).must(t)
	root := aws.ToString(rs.Items[0].Id)
	if aws.ToString(created.RootResourceId) != root || len(root) != 10 {
		t.Fatalf("CreateRestApi: rootResourceId %q, want the root resource %q", aws.ToString(created.RootResourceId), root)
	}
	got := call(e.c.GetRestApi(e.ctx, &apigateway.GetRestApiInput{RestApiId: created.Id})).must(t)
	list := call(e.c.GetRestApis(e.ctx, &apigateway.GetRestApisInput{})).must(t)
	updated := call(e.c.UpdateRestApi(e.ctx, &apigateway.UpdateRestApiInput{RestApiId: created.Id,
		PatchOperations: []types.PatchOperation{op(types.OpReplace, "/name", "renamed")}})).must(t)
	imported := call(e.c.ImportRestApi(e.ctx, &apigateway.ImportRestApiInput{Body: []byte(`{"openapi":"3.0.1","info":{"title":"i","version":"1"},"paths":{}}`)})).must(t)
	for name, id := range map[string]*string{"GetRestApi": got.RootResourceId, "GetRestApis": list.Items[0].RootResourceId, "UpdateRestApi": updated.RootResourceId} {
		if aws.ToString(id) != root {
			t.Errorf("%s: rootResourceId %q, want %q", name, aws.ToString(id), root)
		}
	}
	irs := call(e.c.GetResources(e.ctx, &apigateway.GetResourcesInput{RestApiId: imported.Id})).must(t)
	if aws.ToString(imported.RootResourceId) != aws.ToString(irs.Items[0].Id) {
		t.Errorf("ImportRestApi: rootResourceId %q, want %q", aws.ToString(imported.RootResourceId), aws.ToString(irs.Items[0].Id))
	}
}
