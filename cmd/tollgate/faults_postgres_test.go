package main

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"tollgate/internal/faultnet"
	"tollgate/internal/waittest"

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
	proxy := faultnet.MustProxy(t, u.Host)
	u.Host = proxy.Addr()
	s := mustStackWith(t, stackOptions{databaseURL: u.String()})
	api := s.mustCaseAPI(t)
	p := s.mustPlan(t, api.id, planSpec{Quota: quota(100, types.QuotaPeriodTypeDay, 0)})
	_, known := s.mustKey(t, p)
	_, fresh := s.mustKey(t, p)
	s.sync(t)
	s.expectSeq(t, api.id, known, []seq{{200, "99", "100"}})

	proxy.Cut()
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

	proxy.Restore()
	took := waittest.Until(t, "admin /readyz 200 after PostgreSQL returned", 5*time.Second, func() bool { return s.adminStatus(t, "/readyz") == http.StatusOK })
	t.Logf("admin ready %v after PostgreSQL returned", took)
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

// TestFaultPostgresStalled: PostgreSQL accepts connections but never
// answers (a stopped process behind a proxy). The admin answers reads and
// writes 503 with Retry-After within its database timeout, and /readyz
// 503 within its own deadline; the
// gateways keep serving; when the database answers again the admin
// recovers by itself.
func TestFaultPostgresStalled(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(postgrestest.MustURL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := faultnet.MustProxy(t, u.Host)
	u.Host = proxy.Addr()
	s := mustStackWith(t, stackOptions{databaseURL: u.String(), dbTimeout: time.Second})
	api := s.mustCaseAPI(t)
	p := s.mustPlan(t, api.id, planSpec{Quota: quota(100, types.QuotaPeriodTypeDay, 0)})
	_, known := s.mustKey(t, p)
	s.sync(t)

	proxy.Stall()
	ctx := context.Background()
	// Bound: the 1 s database timeout, pgx's 1 s to give up on a query it
	// has cancelled, and slack for a loaded machine.
	const bound = 10 * time.Second
	for name, call := range map[string]func() error{
		"GetUsagePlans": func() error { _, err := s.sdk.GetUsagePlans(ctx, &apigateway.GetUsagePlansInput{}); return err },
		"CreateApiKey": func() error {
			_, err := s.sdk.CreateApiKey(ctx, &apigateway.CreateApiKeyInput{Name: aws.String("while-stalled"), Enabled: true})
			return err
		},
	} {
		start := time.Now()
		err := call()
		checkUnavailable(t, name, err)
		if took := time.Since(start); took > bound {
			t.Errorf("%s with PostgreSQL stalled: answered after %v, want within %v", name, took, bound)
		}
	}
	start := time.Now()
	if code := s.adminStatus(t, "/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("admin /readyz with PostgreSQL stalled: got %d, want 503", code)
	}
	if took := time.Since(start); took > bound {
		t.Errorf("admin /readyz with PostgreSQL stalled: answered after %v, want within %v", took, bound)
	}
	s.expectSeq(t, api.id, known, []seq{{200, "99", "100"}})

	proxy.Restore()
	waittest.Until(t, "admin /readyz 200 after PostgreSQL answers again", 20*time.Second, func() bool {
		return s.adminStatus(t, "/readyz") == http.StatusOK
	})
	_, err = s.sdk.GetUsagePlans(ctx, &apigateway.GetUsagePlansInput{})
	must(t, "GetUsagePlans after the stall", err)
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
