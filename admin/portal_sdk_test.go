package admin_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"

	"tollgate/admin"
	"tollgate/plans"
	"tollgate/plans/postgres"
)

// POST /portal/invites answers an absolute link on the portal's URL whose
// token the store keeps only hashed; bad input is 400 naming the field;
// DELETE /portal/accounts/{email} removes an account.
func TestPortalInvites(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, func(o *admin.Options) {
		o.PortalInvites = o.Store.(*postgres.DB)
		o.PortalURL = "https://developers.example.com/"
	})
	plan := call(e.c.CreateUsagePlan(e.ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("p")})).must(t)
	status, _, body := e.raw("POST", "/portal/invites", `{"email":"Dev@Partner.example","customerId":"acme","usagePlanIds":["`+*plan.Id+`"]}`)
	var out struct{ URL, ExpiresAt string }
	if err := json.Unmarshal([]byte(body), &out); err != nil || status != 201 || !strings.HasPrefix(out.URL, "https://developers.example.com/portal/invite/") || out.ExpiresAt == "" {
		t.Fatalf("invite: got %d %s, want 201 with a link on the portal's URL", status, body)
	}
	token := strings.TrimPrefix(out.URL, "https://developers.example.com/portal/invite/")
	in, err := e.db.PortalInvite(context.Background(), plans.PortalTokenHash(plans.TokenInvite, token))
	if err != nil || in.Email != "dev@partner.example" || in.CustomerID != "acme" {
		t.Fatalf("stored invite %+v, %v", in, err)
	}
	for _, c := range []struct{ body, field string }{
		{`{"email":"nope","customerId":"acme","usagePlanIds":["` + *plan.Id + `"]}`, "email"},
		{`{"email":"a@b.example","usagePlanIds":["` + *plan.Id + `"]}`, "customerId"},
		{`{"email":"a@b.example","customerId":"acme","usagePlanIds":["zzzzzz"]}`, "usagePlanIds"},
		{`{"email":"a@b.example","customerId":"acme"}`, "usagePlanIds"},
	} {
		if status, _, body := e.raw("POST", "/portal/invites", c.body); status != 400 || !strings.Contains(body, c.field) {
			t.Errorf("%s: got %d %s, want 400 naming %s", c.body, status, body, c.field)
		}
	}
	// Pending invites are listed (never their links) and can be revoked.
	e.raw("POST", "/portal/invites", `{"email":"other@partner.example","customerId":"other","usagePlanIds":["`+*plan.Id+`"]}`)
	var invites struct {
		Item []struct {
			Email, CustomerID string
			UsagePlanIDs      []string `json:"usagePlanIds"`
			ExpiresAt         string
		}
		Position string
	}
	status, _, body = e.raw("GET", "/portal/invites?limit=1", "")
	if err := json.Unmarshal([]byte(body), &invites); err != nil || status != 200 || len(invites.Item) != 1 || invites.Item[0].Email != "dev@partner.example" ||
		invites.Item[0].CustomerID != "acme" || invites.Position == "" || strings.Contains(body, token) {
		t.Fatalf("GET /portal/invites?limit=1: %d %s, want dev@partner.example's invite and a position, without its link", status, body)
	}
	status, _, body = e.raw("GET", "/portal/invites?limit=1&position="+invites.Position, "")
	invites.Position = ""
	if err := json.Unmarshal([]byte(body), &invites); err != nil || len(invites.Item) != 1 || invites.Item[0].Email != "other@partner.example" || invites.Position != "" {
		t.Fatalf("second page of invites: %d %s", status, body)
	}
	if status, _, _ := e.raw("DELETE", "/portal/invites/Other@Partner.example", ""); status != 202 {
		t.Errorf("revoke an invite: got %d, want 202", status)
	}
	if status, _, _ := e.raw("DELETE", "/portal/invites/other@partner.example", ""); status != 404 {
		t.Errorf("revoke it again: got %d, want 404", status)
	}

	if _, err := e.db.AcceptPortalInvite(context.Background(), plans.PortalTokenHash(plans.TokenInvite, token), "hash"); err != nil {
		t.Fatal(err)
	}
	if _, _, body := e.raw("GET", "/portal/invites", ""); body != `{"item":[]}` {
		t.Errorf("invites after one was used and the other revoked: %s, want none", body)
	}
	status, _, body = e.raw("GET", "/portal/accounts", "")
	if status != 200 || !strings.Contains(body, `"email":"dev@partner.example"`) || !strings.Contains(body, `"customerId":"acme"`) || strings.Contains(body, "hash") {
		t.Errorf("GET /portal/accounts: %d %s, want the account without its password hash", status, body)
	}
	if status, _, _ := e.raw("DELETE", "/portal/accounts/dev@partner.example", ""); status != 202 {
		t.Errorf("delete account: got %d, want 202", status)
	}
	if status, _, _ := e.raw("DELETE", "/portal/accounts/dev@partner.example", ""); status != 404 {
		t.Errorf("delete it again: got %d, want 404", status)
	}
}
