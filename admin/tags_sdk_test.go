package admin_test

import (
	"maps"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"
)

func TestTagsByARN(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	apiID, _ := e.api("pets", "prod")
	plan := call(e.c.CreateUsagePlan(e.ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("gold")})).must(t)
	key := call(e.c.CreateApiKey(e.ctx, &apigateway.CreateApiKeyInput{Name: aws.String("partner")})).must(t)
	for _, arn := range []string{
		"arn:aws:apigateway:us-east-1::/restapis/" + apiID,
		"arn:aws:apigateway:eu-west-1::/restapis/" + apiID + "/stages/prod",
		"arn:aws:apigateway:us-east-1::/usageplans/" + *plan.Id,
		"arn:aws:apigateway:us-east-1::/apikeys/" + *key.Id,
	} {
		call(e.c.TagResource(e.ctx, &apigateway.TagResourceInput{ResourceArn: aws.String(arn),
			Tags: map[string]string{"team": "payments", "tollgate:invalidate-cache": "true"}})).must(t)
		call(e.c.TagResource(e.ctx, &apigateway.TagResourceInput{ResourceArn: aws.String(arn),
			Tags: map[string]string{"team": "billing"}})).must(t)
		got := call(e.c.GetTags(e.ctx, &apigateway.GetTagsInput{ResourceArn: aws.String(arn)})).must(t)
		if want := map[string]string{"team": "billing", "tollgate:invalidate-cache": "true"}; !maps.Equal(got.Tags, want) {
			t.Errorf("%s: got tags %v, want %v", arn, got.Tags, want)
		}
		call(e.c.UntagResource(e.ctx, &apigateway.UntagResourceInput{ResourceArn: aws.String(arn), TagKeys: []string{"team", "absent"}})).must(t)
		got = call(e.c.GetTags(e.ctx, &apigateway.GetTagsInput{ResourceArn: aws.String(arn)})).must(t)
		if len(got.Tags) != 1 {
			t.Errorf("%s after untag: got %v, want only tollgate:invalidate-cache", arn, got.Tags)
		}
	}
	k := call(e.c.GetApiKey(e.ctx, &apigateway.GetApiKeyInput{ApiKey: key.Id})).must(t)
	if k.Tags["tollgate:invalidate-cache"] != "true" {
		t.Errorf("GetApiKey tags: got %v, want the tag put by TagResource", k.Tags)
	}
	for arn, want := range map[string]string{
		"arn:aws:apigateway:us-east-1::/restapis/nope000000": "NotFoundException",
		"arn:aws:apigateway:us-east-1::/domainnames/x":       "NotFoundException",
		"arn:aws:apigateway:us-east-1::/vpclinks/x":          "BadRequestException",
		"arn:aws:s3:::bucket":                                "BadRequestException",
	} {
		_, err := e.c.GetTags(e.ctx, &apigateway.GetTagsInput{ResourceArn: aws.String(arn)})
		wantCode(t, err, want)
	}
	_, err := e.c.TagResource(e.ctx, &apigateway.TagResourceInput{ResourceArn: aws.String("arn:aws:apigateway:us-east-1::/apikeys/" + *key.Id),
		Tags: map[string]string{"aws:owner": "x"}})
	wantBadRequest(t, err, "aws:")
	_ = types.ApiKeySourceTypeHeader
}

// TestStageStaleTagsAreValidated: the stale answer tags of a stage take a
// whole number of seconds up to a day; anything else is 400 naming the
// tag, and the stage keeps its tags.
func TestStageStaleTagsAreValidated(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	apiID, _ := e.api("pets", "prod")
	arn := aws.String("arn:aws:apigateway:us-east-1::/restapis/" + apiID + "/stages/prod")
	for _, tag := range []string{"tollgate:cache-stale-if-error", "tollgate:cache-stale-while-revalidate"} {
		for _, bad := range []string{"", "-1", "1.5", "60s", " 60", "86401", "999999"} {
			_, err := e.c.TagResource(e.ctx, &apigateway.TagResourceInput{ResourceArn: arn, Tags: map[string]string{tag: bad}})
			wantBadRequest(t, err, tag)
		}
		call(e.c.TagResource(e.ctx, &apigateway.TagResourceInput{ResourceArn: arn, Tags: map[string]string{tag: "86400"}})).must(t)
		got := call(e.c.GetStage(e.ctx, &apigateway.GetStageInput{RestApiId: aws.String(apiID), StageName: aws.String("prod")})).must(t)
		if got.Tags[tag] != "86400" {
			t.Errorf("got tags %v, want %s=86400", got.Tags, tag)
		}
	}
}

// TestPlanAnchorTagIsValidatedBesideTheField: tag-resource checks
// tollgate:quota-anchor against the plan's quota period even when the
// plan's quota.anchor field is set (and wins), so the plan never holds a
// tag a later update would refuse.
func TestPlanAnchorTagIsValidatedBesideTheField(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	plan := call(e.c.CreateUsagePlan(e.ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("gold"),
		Quota: &types.QuotaSettings{Limit: 100, Period: types.QuotaPeriodTypeMonth}})).must(t)
	call(e.c.UpdateUsagePlan(e.ctx, &apigateway.UpdateUsagePlanInput{UsagePlanId: plan.Id, PatchOperations: []types.PatchOperation{
		{Op: types.OpReplace, Path: aws.String("/quota/anchor"), Value: aws.String("15")}}})).must(t)
	arn := aws.String("arn:aws:apigateway:us-east-1::/usageplans/" + *plan.Id)
	for _, bad := range []string{"29", "MON", "", "someday"} {
		_, err := e.c.TagResource(e.ctx, &apigateway.TagResourceInput{ResourceArn: arn, Tags: map[string]string{"tollgate:quota-anchor": bad}})
		wantBadRequest(t, err, "tollgate:quota-anchor")
	}
	got := call(e.c.GetTags(e.ctx, &apigateway.GetTagsInput{ResourceArn: arn})).must(t)
	if _, ok := got.Tags["tollgate:quota-anchor"]; ok {
		t.Fatalf("after refusals: got tags %v, want no tollgate:quota-anchor", got.Tags)
	}
	call(e.c.TagResource(e.ctx, &apigateway.TagResourceInput{ResourceArn: arn, Tags: map[string]string{"tollgate:quota-anchor": "last"}})).must(t)
	// the plan stays updatable, the field cleared too
	call(e.c.UpdateUsagePlan(e.ctx, &apigateway.UpdateUsagePlanInput{UsagePlanId: plan.Id, PatchOperations: []types.PatchOperation{
		{Op: types.OpReplace, Path: aws.String("/quota/anchor"), Value: aws.String("")}, {Op: types.OpReplace, Path: aws.String("/name"), Value: aws.String("gold2")}}})).must(t)
}
