package admin_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"

	"tollgate/plans"
)

func TestUsagePlansAndKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	apiID, _ := e.api("pets", "prod")
	stage := types.ApiStage{ApiId: aws.String(apiID), Stage: aws.String("prod"),
		Throttle: map[string]types.ThrottleSettings{"/pets/GET": {RateLimit: 1, BurstLimit: 2}}}
	gold := call(e.c.CreateUsagePlan(e.ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("gold"),
		ApiStages: []types.ApiStage{stage},
		Throttle:  &types.ThrottleSettings{RateLimit: 10.5, BurstLimit: 20},
		Quota:     &types.QuotaSettings{Limit: 1000, Period: types.QuotaPeriodTypeWeek, Offset: 1}})).must(t)
	if len(*gold.Id) != 6 || gold.Throttle.RateLimit != 10.5 || gold.Throttle.BurstLimit != 20 ||
		gold.Quota.Limit != 1000 || gold.Quota.Period != types.QuotaPeriodTypeWeek || gold.Quota.Offset != 1 ||
		len(gold.ApiStages) != 1 || gold.ApiStages[0].Throttle["/pets/GET"].BurstLimit != 2 {
		t.Fatalf("got plan %+v, want what was sent with a 6-character id", gold)
	}
	_, err := e.c.CreateUsagePlan(e.ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("x"),
		ApiStages: []types.ApiStage{{ApiId: aws.String(apiID), Stage: aws.String("nope")}}})
	wantBadRequest(t, err, "apiStages")

	key := call(e.c.CreateApiKey(e.ctx, &apigateway.CreateApiKeyInput{Name: aws.String("partner"), Enabled: true, CustomerId: aws.String("c1")})).must(t)
	if key.Value == nil || !plans.ValidKeyValue(*key.Value) || !strings.HasPrefix(*key.Value, "tg") ||
		(plans.KeyFormat{}).BadChecksum(*key.Value) || !(plans.KeyFormat{}).Generated(*key.Value) || !key.Enabled || len(*key.Id) != 10 {
		t.Fatalf("got key %+v, want a generated value (prefix tg, checksum), enabled, a 10-character id", key)
	}
	off := call(e.c.CreateApiKey(e.ctx, &apigateway.CreateApiKeyInput{Name: aws.String("off"), Value: aws.String("abcdefghijKLMNOPQRST0123456789")})).must(t)
	if off.Enabled || *off.Value != "abcdefghijKLMNOPQRST0123456789" {
		t.Fatalf("got enabled %v value %q, want disabled by default and the given value", off.Enabled, *off.Value)
	}
	_, err = e.c.CreateApiKey(e.ctx, &apigateway.CreateApiKeyInput{Name: aws.String("dup"), Value: aws.String("abcdefghijKLMNOPQRST0123456789")})
	wantCode(t, err, "ConflictException")
	_, err = e.c.CreateApiKey(e.ctx, &apigateway.CreateApiKeyInput{Name: aws.String("short"), Value: aws.String("short-value")})
	wantBadRequest(t, err, "value")
	got := call(e.c.GetApiKey(e.ctx, &apigateway.GetApiKeyInput{ApiKey: key.Id, IncludeValue: aws.Bool(true)})).must(t)
	if got.Value != nil || *got.Name != "partner" || *got.CustomerId != "c1" {
		t.Fatalf("got key %+v, want no value, name partner, customer c1", got)
	}
	keys := call(e.c.GetApiKeys(e.ctx, &apigateway.GetApiKeysInput{IncludeValues: aws.Bool(true), CustomerId: aws.String("c1")})).must(t)
	if len(keys.Items) != 1 || keys.Items[0].Value != nil {
		t.Fatalf("got %d keys (first value %v), want 1 without value", len(keys.Items), keys.Items)
	}
	upd := call(e.c.UpdateApiKey(e.ctx, &apigateway.UpdateApiKeyInput{ApiKey: off.Id, PatchOperations: []types.PatchOperation{
		op(types.OpReplace, "/enabled", "true"), op(types.OpReplace, "/name", "on"), op(types.OpReplace, "/description", "now on"),
	}})).must(t)
	if !upd.Enabled || *upd.Name != "on" || *upd.Description != "now on" || upd.Value != nil {
		t.Fatalf("got %+v, want enabled, on, now on, no value", upd)
	}

	pk := call(e.c.CreateUsagePlanKey(e.ctx, &apigateway.CreateUsagePlanKeyInput{UsagePlanId: gold.Id, KeyId: key.Id, KeyType: aws.String("API_KEY")})).must(t)
	if *pk.Id != *key.Id || *pk.Type != "API_KEY" || *pk.Name != "partner" || pk.Value != nil {
		t.Fatalf("got usage plan key %+v, want id %s, API_KEY, partner, no value", pk, *key.Id)
	}
	_, err = e.c.CreateUsagePlanKey(e.ctx, &apigateway.CreateUsagePlanKeyInput{UsagePlanId: gold.Id, KeyId: key.Id, KeyType: aws.String("COGNITO")})
	wantBadRequest(t, err, "keyType")
	byKey := call(e.c.GetUsagePlans(e.ctx, &apigateway.GetUsagePlansInput{KeyId: key.Id})).must(t)
	if len(byKey.Items) != 1 || *byKey.Items[0].Id != *gold.Id {
		t.Fatalf("got %d plans for the key, want gold", len(byKey.Items))
	}
	planKeys := call(e.c.GetUsagePlanKeys(e.ctx, &apigateway.GetUsagePlanKeysInput{UsagePlanId: gold.Id})).must(t)
	if len(planKeys.Items) != 1 || *planKeys.Items[0].Id != *key.Id {
		t.Fatalf("got plan keys %+v, want just %s", planKeys.Items, *key.Id)
	}
	call(e.c.GetUsagePlanKey(e.ctx, &apigateway.GetUsagePlanKeyInput{UsagePlanId: gold.Id, KeyId: key.Id})).must(t)

	// One plan per (api, stage) per key, through both paths.
	silver := call(e.c.CreateUsagePlan(e.ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("silver"),
		ApiStages: []types.ApiStage{{ApiId: aws.String(apiID), Stage: aws.String("prod")}}})).must(t)
	_, err = e.c.CreateUsagePlanKey(e.ctx, &apigateway.CreateUsagePlanKeyInput{UsagePlanId: silver.Id, KeyId: key.Id, KeyType: aws.String("API_KEY")})
	wantCode(t, err, "ConflictException")
	bronze := call(e.c.CreateUsagePlan(e.ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("bronze")})).must(t)
	call(e.c.CreateUsagePlanKey(e.ctx, &apigateway.CreateUsagePlanKeyInput{UsagePlanId: bronze.Id, KeyId: key.Id, KeyType: aws.String("API_KEY")})).must(t)
	_, err = e.c.UpdateUsagePlan(e.ctx, &apigateway.UpdateUsagePlanInput{UsagePlanId: bronze.Id, PatchOperations: []types.PatchOperation{
		op(types.OpAdd, "/apiStages", apiID+":prod"),
	}})
	wantCode(t, err, "ConflictException")

	patched := call(e.c.UpdateUsagePlan(e.ctx, &apigateway.UpdateUsagePlanInput{UsagePlanId: gold.Id, PatchOperations: []types.PatchOperation{
		op(types.OpReplace, "/name", "platinum"),
		op(types.OpReplace, "/throttle/burstLimit", "40"),
		op(types.OpRemove, "/quota", ""),
		op(types.OpReplace, "/apiStages/"+apiID+":prod/throttle/~1pets/GET/rateLimit", "3"),
	}})).must(t)
	if *patched.Name != "platinum" || patched.Throttle.BurstLimit != 40 || patched.Quota != nil ||
		patched.ApiStages[0].Throttle["/pets/GET"] != (types.ThrottleSettings{RateLimit: 3, BurstLimit: 2}) {
		t.Fatalf("got %+v, want platinum, burst 40, no quota, /pets/GET rate 3 burst 2", patched)
	}
	for _, tc := range []struct{ path, value, field string }{
		{"/quota/offset", "1", "quota.limit"},
		{"/throttle/burstLimit", "0", "burstLimit"},
		{"/productCode", "x", "/productCode"},
	} {
		_, err = e.c.UpdateUsagePlan(e.ctx, &apigateway.UpdateUsagePlanInput{UsagePlanId: gold.Id, PatchOperations: []types.PatchOperation{op(types.OpReplace, tc.path, tc.value)}})
		wantBadRequest(t, err, tc.field)
	}

	_, err = e.c.DeleteStage(e.ctx, &apigateway.DeleteStageInput{RestApiId: aws.String(apiID), StageName: aws.String("prod")})
	wantCode(t, err, "BadRequestException")

	call(e.c.DeleteUsagePlanKey(e.ctx, &apigateway.DeleteUsagePlanKeyInput{UsagePlanId: gold.Id, KeyId: key.Id})).must(t)
	_, err = e.c.GetUsagePlanKey(e.ctx, &apigateway.GetUsagePlanKeyInput{UsagePlanId: gold.Id, KeyId: key.Id})
	wantCode(t, err, "NotFoundException")
	call(e.c.DeleteUsagePlan(e.ctx, &apigateway.DeleteUsagePlanInput{UsagePlanId: silver.Id})).must(t)
	call(e.c.DeleteApiKey(e.ctx, &apigateway.DeleteApiKeyInput{ApiKey: off.Id})).must(t)
	_, err = e.c.GetApiKey(e.ctx, &apigateway.GetApiKeyInput{ApiKey: off.Id})
	wantCode(t, err, "NotFoundException")
}

func TestAccount(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := call(e.c.GetAccount(e.ctx, &apigateway.GetAccountInput{})).must(t)
	if a.ThrottleSettings.RateLimit != 10000 || a.ThrottleSettings.BurstLimit != 5000 || len(a.Features) != 1 || a.Features[0] != "UsagePlans" {
		t.Fatalf("got %+v %v, want 10000/5000 and [UsagePlans]", a.ThrottleSettings, a.Features)
	}
	u := call(e.c.UpdateAccount(e.ctx, &apigateway.UpdateAccountInput{PatchOperations: []types.PatchOperation{
		op(types.OpReplace, "/throttleSettings/rateLimit", "250.5"), op(types.OpReplace, "/throttleSettings/burstLimit", "100"),
	}})).must(t)
	if u.ThrottleSettings.RateLimit != 250.5 || u.ThrottleSettings.BurstLimit != 100 {
		t.Fatalf("got %+v, want 250.5/100", u.ThrottleSettings)
	}
	_, err := e.c.UpdateAccount(e.ctx, &apigateway.UpdateAccountInput{PatchOperations: []types.PatchOperation{
		op(types.OpReplace, "/cloudwatchRoleArn", "arn:aws:iam::1:role/x"),
	}})
	wantBadRequest(t, err, "/cloudwatchRoleArn")
	_, err = e.c.UpdateAccount(e.ctx, &apigateway.UpdateAccountInput{PatchOperations: []types.PatchOperation{
		op(types.OpReplace, "/throttleSettings/burstLimit", "-1"),
	}})
	wantBadRequest(t, err, "burstLimit")
	if n := e.pub.count(); n != 1 {
		t.Fatalf("got %d publishes, want 1 (one successful write)", n)
	}
}

func TestPagination(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, name := range []string{"k1", "k2", "k3"} {
		call(e.c.CreateApiKey(e.ctx, &apigateway.CreateApiKeyInput{Name: aws.String(name)})).must(t)
	}
	seen := map[string]bool{}
	var position *string
	for pageNo := 1; ; pageNo++ {
		p := call(e.c.GetApiKeys(e.ctx, &apigateway.GetApiKeysInput{Limit: aws.Int32(2), Position: position})).must(t)
		for _, k := range p.Items {
			seen[*k.Id] = true
		}
		if pageNo == 1 && (len(p.Items) != 2 || p.Position == nil) {
			t.Fatalf("got %d items and position %v on page 1, want 2 and a position", len(p.Items), p.Position)
		}
		if p.Position == nil {
			if pageNo != 2 || len(p.Items) != 1 {
				t.Fatalf("got last page %d with %d items, want page 2 with 1", pageNo, len(p.Items))
			}
			break
		}
		position = p.Position
	}
	if len(seen) != 3 {
		t.Fatalf("got %d distinct keys over the pages, want 3", len(seen))
	}
	for _, limit := range []int32{0, 501} {
		_, err := e.c.GetApiKeys(e.ctx, &apigateway.GetApiKeysInput{Limit: aws.Int32(limit)})
		wantBadRequest(t, err, "limit")
	}
	empty := call(e.c.GetUsagePlans(e.ctx, &apigateway.GetUsagePlansInput{})).must(t)
	if empty.Items == nil || len(empty.Items) != 0 || empty.Position != nil {
		t.Fatalf("got %v / %v, want an empty item list and no position", empty.Items, empty.Position)
	}
}
