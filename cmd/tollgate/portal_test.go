package main

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"

	"tollgate/internal/browsertest"
	"tollgate/plans"
)

// TestPortal walks the developer portal in headless Chromium as a new
// partner would, on an admin node and two gateway nodes: the operator
// invites the partner (POST /portal/invites); the partner sets a password,
// signs out and in again, reads the API reference, creates a key (its
// value shown once), calls the API with it on both nodes, sees the call in
// the usage chart, rotates the key with a 10-minute overlap (both values
// work on both nodes until the overlap ends on the limiter's clock, then
// only the new one) and revokes it after confirming. Every change shows in
// the admin API the console reads, with the audit log naming the portal.
// Screenshots go to the artifacts directory.
func TestPortal(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser test runs in make test, not in make test-short")
	}
	t.Parallel()
	s := mustStackWith(t, stackOptions{adminToken: testAdminToken})
	api := s.mustCaseAPI(t)
	plan := s.mustPlan(t, api.id, planSpec{Throttle: throttle(100, 100), Quota: quota(1000, types.QuotaPeriodTypeDay, 0)})
	s.sync(t)

	var invite struct{ URL string }
	s.adminJSON(t, "POST", "/portal/invites", map[string]any{"email": "dev@partner.example", "customerId": "partner-co",
		"usagePlanIds": []string{plan}}, &invite)
	if want := "http://" + s.admin.AdminAddr + "/portal/invite/"; !strings.HasPrefix(invite.URL, want) {
		t.Fatalf("invite url %q, want it under %s", invite.URL, want)
	}

	p := browsertest.MustPage(t)
	p.Goto(invite.URL)
	p.Role("heading", "Accept your invitation")
	if got := p.Label("Email").Value(); got != "dev@partner.example" {
		t.Errorf("invite page email: got %q", got)
	}
	p.Screenshot("portal-invite")
	p.Label("Password").Fill("correct horse battery staple")
	p.Role("button", "Create account").Click()
	p.Role("heading", "APIs")
	p.Role("button", "Sign out").Click()
	p.Role("heading", "Sign in")
	p.Label("Email").Fill("dev@partner.example")
	p.Label("Password").Fill("not the password")
	p.Role("button", "Sign in").Click()
	p.Eventually("a wrong password is refused in words", func() error {
		if msg := p.Role("alert", "").Text(); msg != "Wrong email or password." {
			return fmt.Errorf("alert %q", msg)
		}
		return nil
	})
	p.Label("Password").Fill("correct horse battery staple")
	p.Role("button", "Sign in").Click()

	p.Role("heading", "APIs")
	if rows := p.Table("APIs your usage plans cover"); !rowWith(rows, "cases", "prod") {
		t.Errorf("APIs table: got %q, want cases / prod", rows)
	}
	p.Screenshot("portal-apis")
	p.Role("link", "cases").Click()
	p.Role("heading", "cases (prod)")
	p.Role("heading", "GET /items")
	p.Screenshot("portal-reference")

	p.Role("link", "Keys").Click()
	p.Role("heading", "Keys")
	p.Label("Name").Fill("production")
	p.Role("button", "Create key").Click()
	value := p.Label("API key value").Value()
	if f := (plans.KeyFormat{}); !f.Generated(value) || f.BadChecksum(value) {
		t.Fatalf("API key value %q: want a generated value", value)
	}
	p.Screenshot("portal-key-created")
	s.waitStatus(t, api.id, "/prod/items", value, 200, 5*time.Second) // usable the moment it is shown: both nodes

	p.Role("link", "Usage").Click()
	p.Role("heading", "Usage")
	today := time.Now().UTC().Format(plans.UsageDateLayout)
	rows := p.Table("Requests per day (UTC)")
	last := rows[len(rows)-1]
	if n, err := strconv.Atoi(last[1]); last[0] != today || err != nil || n < 2 {
		t.Errorf("usage table: last row %q, want today with the 2 or more requests both nodes admitted", last)
	}
	p.Eventually("the chart is drawn", func() error {
		if n := browsertest.Eval[int](p, `document.querySelectorAll("#usage-chart canvas").length`); n != 1 {
			return fmt.Errorf("%d canvases", n)
		}
		return nil
	})
	p.Screenshot("portal-usage")

	p.Role("link", "Keys").Click()
	p.Role("button", "Rotate").Click()
	p.Role("heading", "Rotate production")
	p.Label("The old value keeps working for").Select("10 minutes")
	p.Role("button", "Confirm").Click()
	p.Role("heading", "Key rotated")
	fresh := p.Label("API key value").Value()
	if fresh == value || fresh == "" {
		t.Fatalf("rotated value %q, want a new one", fresh)
	}
	p.Screenshot("portal-key-rotated")
	s.waitStatus(t, api.id, "/prod/items", fresh, 200, 5*time.Second)
	for i := range 2 {
		if res := s.call(t, i, api.id, "/prod/items", value); res.StatusCode != 200 {
			t.Fatalf("old value within the overlap, gateway %d: got %d, want 200", i, res.StatusCode)
		}
	}
	var keys struct {
		Item []struct{ ID, Name, CustomerID string }
	}
	s.adminJSON(t, "GET", "/apikeys?customerId=partner-co", nil, &keys)
	if len(keys.Item) != 1 || keys.Item[0].Name != "production" {
		t.Fatalf("the admin API lists %+v for customer partner-co, want the one key made in the portal", keys.Item)
	}
	s.useClock(t, time.Now().Add(10*time.Minute+2*time.Second)) // the limiter's clock past the overlap
	s.waitStatus(t, api.id, "/prod/items", value, 403, 5*time.Second)
	s.waitStatus(t, api.id, "/prod/items", fresh, 200, 5*time.Second)

	p.Role("link", "Keys").Click()
	p.Role("button", "Revoke").Click()
	p.Role("heading", "Revoke production")
	p.Screenshot("portal-revoke")
	p.Role("button", "Confirm").Click()
	p.Eventually("the revocation is reported", func() error {
		if msg := p.Role("status", "").Text(); !strings.HasPrefix(msg, "The key was revoked") {
			return fmt.Errorf("status %q", msg)
		}
		return nil
	})
	s.waitStatus(t, api.id, "/prod/items", fresh, 403, 5*time.Second)

	var audit struct {
		Item []struct{ Source, Operation, Actor string }
	}
	s.adminJSON(t, "GET", "/audit?resource=/apikeys/"+keys.Item[0].ID, nil, &audit)
	ops := map[string]bool{}
	for _, e := range audit.Item {
		if e.Source == plans.SourcePortal && e.Actor == "portal:dev@partner.example" {
			ops[e.Operation] = true
		}
	}
	if !ops["RotateApiKey"] || !ops["DeleteApiKey"] {
		t.Errorf("audit entries %+v: want the rotation and the deletion with source portal and the partner as actor", audit.Item)
	}

	p.Viewport(390, 844)
	p.Role("link", "Keys").Click()
	p.Role("heading", "Keys")
	p.Screenshot("portal-keys-phone")
	if probs := p.Problems(); len(probs) > 0 {
		t.Errorf("the page reported problems (exceptions, console errors or CSP violations):\n%s", strings.Join(probs, "\n"))
	}
	t.Logf("portal screenshots in %s", browsertest.ArtifactsDir(t))
}

// With TOLLGATE_PORTAL_ADDR the portal has a port of its own, where
// nothing of the admin API answers; the admin port keeps the invite call,
// whose links point at the portal's port, and serves no portal page.
func TestPortalOnItsOwnPort(t *testing.T) {
	t.Parallel()
	s := mustStackWith(t, stackOptions{allInOne: true, adminToken: testAdminToken, portalAddr: "127.0.0.1:0"})
	portalAddr := s.admin.PortalAddr
	if portalAddr == "" || portalAddr == s.admin.AdminAddr {
		t.Fatalf("portal address %q, want a listener of its own", portalAddr)
	}
	get := func(url string) int {
		res, err := http.Get(url)
		must(t, "GET "+url, err)
		res.Body.Close()
		return res.StatusCode
	}
	if code := get("http://" + portalAddr + "/portal/signin"); code != 200 {
		t.Errorf("portal port /portal/signin: got %d, want 200", code)
	}
	if code := get("http://" + portalAddr + "/restapis"); code != 404 {
		t.Errorf("portal port /restapis: got %d, want 404 (no admin API there)", code)
	}
	if code := get("http://" + s.admin.AdminAddr + "/portal/signin"); code == 200 {
		t.Errorf("admin port /portal/signin: got 200, want no portal page there")
	}
	api := s.mustCaseAPI(t)
	plan := s.mustPlan(t, api.id, planSpec{})
	var invite struct{ URL string }
	s.adminJSON(t, "POST", "/portal/invites", map[string]any{"email": "a@b.example", "customerId": "c", "usagePlanIds": []string{plan}}, &invite)
	if !strings.HasPrefix(invite.URL, "http://"+portalAddr+"/portal/invite/") {
		t.Errorf("invite url %q, want it on the portal's port %s", invite.URL, portalAddr)
	}
}
