package admin_test

import (
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"
)

func TestImportApiKeysFromCSV(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	apiID, _ := e.api("pets", "prod")
	plan := call(e.c.CreateUsagePlan(e.ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("gold"),
		ApiStages: []types.ApiStage{{ApiId: &apiID, Stage: aws.String("prod")}}})).must(t)
	csv := "Name,Key,Description,Enabled,UsagePlanIds\n" +
		"alpha,alphaKey0123456789abcdef,first,TRUE," + *plan.Id + "\n" +
		"beta,betaKey0123456789abcdefg,,false,\n" +
		"gamma,gammaKey0123456789abcdef,,true,nope00\n"
	_, err := e.c.ImportApiKeys(e.ctx, &apigateway.ImportApiKeysInput{Body: []byte(csv), Format: types.ApiKeysFormatCsv, FailOnWarnings: true})
	wantBadRequest(t, err, "line 4")
	if keys := call(e.c.GetApiKeys(e.ctx, &apigateway.GetApiKeysInput{})).must(t); len(keys.Items) != 0 {
		t.Fatalf("after a failed import with failonwarnings: got %d keys, want none", len(keys.Items))
	}
	out := call(e.c.ImportApiKeys(e.ctx, &apigateway.ImportApiKeysInput{Body: []byte(csv), Format: types.ApiKeysFormatCsv})).must(t)
	if len(out.Ids) != 2 || len(out.Warnings) != 1 {
		t.Fatalf("got ids %v warnings %v, want 2 ids and 1 warning (unknown plan on line 4)", out.Ids, out.Warnings)
	}
	members := call(e.c.GetUsagePlanKeys(e.ctx, &apigateway.GetUsagePlanKeysInput{UsagePlanId: plan.Id})).must(t)
	if len(members.Items) != 1 || *members.Items[0].Id != out.Ids[0] || *members.Items[0].Name != "alpha" {
		t.Errorf("plan keys: got %+v, want alpha", members.Items)
	}
	beta := call(e.c.GetApiKey(e.ctx, &apigateway.GetApiKeyInput{ApiKey: &out.Ids[1]})).must(t)
	if beta.Enabled || *beta.Name != "beta" || beta.Value != nil {
		t.Errorf("beta: got %+v, want disabled, named beta, without a value", beta)
	}
	again := call(e.c.ImportApiKeys(e.ctx, &apigateway.ImportApiKeysInput{Format: types.ApiKeysFormatCsv,
		Body: []byte("key,name,enabled\nbetaKey0123456789abcdefg,beta2,true\n")})).must(t)
	if !slices.Equal(again.Ids, out.Ids[1:]) {
		t.Fatalf("re-import: got ids %v, want the existing key %s", again.Ids, out.Ids[1])
	}
	if b := call(e.c.GetApiKey(e.ctx, &apigateway.GetApiKeyInput{ApiKey: &out.Ids[1]})).must(t); !b.Enabled || *b.Name != "beta2" {
		t.Errorf("re-imported beta: got %+v, want enabled beta2 (the most recent version wins, as AWS)", b)
	}
}
