package main

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
)

// TestConfigFilesAsANewUser walks the config commands as the docs do:
// dump the configuration, edit a plan in the file, plan shows exactly that
// (exit 2), apply makes it, plan shows none (exit 0); the same file,
// applied to a fresh stack, reproduces it; a directory dump plans the
// same. Credentials are SigV4 from AWS_* variables for one stack and a
// bearer token for the other.
func TestConfigFilesAsANewUser(t *testing.T) {
	ctx := context.Background()
	s := mustStackWith(t, stackOptions{adminToken: consoleToken})
	w := s.setupWalk(t, ctx)
	// the key's own quota calendar is part of the configuration too
	s.adminJSONAs(t, consoleToken, http.MethodPatch, "/apikeys/"+w.keyID, map[string]any{"patchOperations": []map[string]string{
		{"op": "replace", "path": "/quotaTimeZone", "value": "Asia/Tokyo"}}}, nil)
	dir := t.TempDir()
	file := filepath.Join(dir, "tollgate.yaml")
	t.Setenv("TOLLGATE_ADMIN_TOKEN", "")
	t.Setenv("AWS_ACCESS_KEY_ID", testAccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", testSecretKey)
	t.Setenv("AWS_REGION", "eu-west-1")
	flags := adminFlags{AdminURL: "http://" + s.admin.AdminAddr}

	must(t, "dump", (&configDumpCmd{adminFlags: flags, Output: file}).Run(ctx))
	b, err := os.ReadFile(file)
	must(t, "read dump", err)
	if strings.Contains(string(b), w.keyValue) || !strings.Contains(string(b), "walk-plan") || !strings.Contains(string(b), "quotaTimeZone: Asia/Tokyo") {
		t.Fatalf("dump: want the plan, the key's quotaTimeZone and no key value:\n%s", b)
	}
	plan := func(path string) error { return (&configPlanCmd{adminFlags: flags, File: path}).Run(ctx) }
	must(t, "plan of the dump", plan(file))
	edited := strings.Replace(string(b), "limit: 6\n", "limit: 60\n", 1)
	if edited == string(b) {
		t.Fatalf("the dump has no quota limit 6:\n%s", b)
	}
	must(t, "write", os.WriteFile(file, []byte(edited), 0o600))
	if err := plan(file); !errors.Is(err, exitCode(2)) {
		t.Fatalf("plan of the edit: got %v, want exit code 2", err)
	}
	must(t, "apply", (&configApplyCmd{adminFlags: flags, File: file}).Run(ctx))
	p, err := s.sdk.GetUsagePlan(ctx, &apigateway.GetUsagePlanInput{UsagePlanId: aws.String(w.planID)})
	must(t, "GetUsagePlan", err)
	if p.Quota.Limit != 60 {
		t.Fatalf("quota after apply: got %d, want 60", p.Quota.Limit)
	}
	must(t, "plan after apply", plan(file))

	split := filepath.Join(dir, "split") + "/"
	must(t, "dump to a directory", (&configDumpCmd{adminFlags: flags, Output: split}).Run(ctx))
	must(t, "plan of the directory", plan(split))

	fresh := mustStackWith(t, stackOptions{adminToken: consoleToken})
	t.Setenv("TOLLGATE_ADMIN_TOKEN", consoleToken)
	freshFlags := adminFlags{AdminURL: "http://" + fresh.admin.AdminAddr}
	must(t, "apply on a fresh stack", (&configApplyCmd{adminFlags: freshFlags, File: file}).Run(ctx))
	must(t, "plan on the fresh stack", (&configPlanCmd{adminFlags: freshFlags, File: file}).Run(ctx))
	var keys struct {
		Items []struct {
			Name          string `json:"name"`
			QuotaTimeZone string `json:"quotaTimeZone"`
		} `json:"item"`
	}
	fresh.adminJSONAs(t, consoleToken, http.MethodGet, "/apikeys?name=walker", nil, &keys)
	if len(keys.Items) != 1 || keys.Items[0].QuotaTimeZone != "Asia/Tokyo" {
		t.Fatalf("fresh stack's keys named walker: got %+v, want one with quotaTimeZone Asia/Tokyo", keys.Items)
	}
}
