package main

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"
	"github.com/aws/smithy-go"

	"tollgate/plans/postgres/postgrestest"
)

// TestFaultPostgresDown cuts the admin's PostgreSQL (a TCP proxy in front
// of the shared server; the server itself is never stopped): the gateways
// keep serving with their last config and keep counting; the admin answers
// 503 ServiceUnavailableException with a message and Retry-After, and
// writes nothing; when the connection returns both recover by themselves.
func TestFaultPostgresDown(t *testing.T) {
	t.Parallel()
	dbURL := postgrestest.MustURL(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := mustTCPProxy(t, u.Host)
	u.Host = proxy.addr()
	s := mustStackWith(t, stackOptions{databaseURL: u.String()})
	api := s.mustCaseAPI(t)
	p := s.mustPlan(t, api.id, planSpec{Quota: quota(100, types.QuotaPeriodTypeDay, 0)})
	_, known := s.mustKey(t, p)
	_, fresh := s.mustKey(t, p)
	s.sync(t)
	s.expectSeq(t, api.id, known, []seq{{200, "99", "100"}})

	proxy.cut()
	s.expectSeq(t, api.id, known, []seq{{200, "98", "100"}, {200, "97", "100"}})
	s.expectSeq(t, api.id, fresh, []seq{{200, "99", "100"}, {200, "98", "100"}})
	ctx := context.Background()
	_, err = s.sdk.CreateApiKey(ctx, &apigateway.CreateApiKeyInput{Name: aws.String("while-down"), Enabled: true})
	checkUnavailable(t, "CreateApiKey", err)
	_, err = s.sdk.UpdateUsagePlan(ctx, &apigateway.UpdateUsagePlanInput{UsagePlanId: &p, PatchOperations: replaceOps([]string{"/quota/limit", "3"})})
	checkUnavailable(t, "UpdateUsagePlan", err)
	if code := s.adminStatus(t, "/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("admin /readyz with PostgreSQL down: got %d, want 503", code)
	}

	proxy.restore()
	start := time.Now()
	for s.adminStatus(t, "/readyz") != http.StatusOK {
		if time.Since(start) > 5*time.Second {
			t.Fatalf("admin /readyz not 200 5s after PostgreSQL returned")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("admin ready %v after PostgreSQL returned", time.Since(start))
	keys, err := s.sdk.GetApiKeys(ctx, &apigateway.GetApiKeysInput{NameQuery: aws.String("while-down")})
	must(t, "GetApiKeys", err)
	if len(keys.Items) != 0 {
		t.Errorf("keys named while-down after the outage: got %d, want 0 (the refused write left nothing)", len(keys.Items))
	}
	s.expectSeq(t, api.id, known, []seq{{200, "96", "100"}}) // the refused patch never applied
	s.mustPatchPlan(t, p, "/quota/limit", "10")
	s.sync(t)
	s.expectSeq(t, api.id, known, []seq{{200, "5", "10"}})
}

// checkUnavailable fails unless err is the admin's 503
// ServiceUnavailableException with a message.
func checkUnavailable(t *testing.T, op string, err error) {
	t.Helper()
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("%s with PostgreSQL down: got %v, want a 503 ServiceUnavailableException", op, err)
	}
	if ae.ErrorCode() != "ServiceUnavailableException" || strings.TrimSpace(ae.ErrorMessage()) == "" {
		t.Errorf("%s with PostgreSQL down: got %s %q, want ServiceUnavailableException with a message", op, ae.ErrorCode(), ae.ErrorMessage())
	}
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) && re.HTTPStatusCode() != http.StatusServiceUnavailable {
		t.Errorf("%s with PostgreSQL down: status %d, want 503", op, re.HTTPStatusCode())
	}
}

// adminStatus returns the status of an unauthenticated GET on the admin.
func (s *stack) adminStatus(t *testing.T, path string) int {
	t.Helper()
	res, err := http.Get("http://" + s.admin.AdminAddr + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	_ = res.Body.Close()
	return res.StatusCode
}
