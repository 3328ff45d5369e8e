package portal

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-chi/chi/v5"

	"tollgate/internal/clocktest"
	"tollgate/openapi"
	"tollgate/plans"
)

// A partner invited for a customer and a plan sees the API its plan
// covers and its reference, creates a key (shown once, enabled, in the
// plan, of its customer), rotates it (a form sent twice rotates once) and
// revokes it after confirming.
func TestPartnerManagesItsKeys(t *testing.T) {
	t.Parallel()
	tp := mustPortal(t, nil)
	apiID, planID := tp.mustAPI(t, "catalog")
	p := tp.invited(t, "Ann@Example.com", "acme", planID)

	apis := p.get("/portal/apis", http.StatusOK)
	if !strings.Contains(apis.body, "/portal/apis/"+apiID+"/prod") || !strings.Contains(apis.body, "http://"+apiID+".execute-api.localhost:8000/prod") {
		t.Fatalf("APIs page: no link to the reference or base URL of %s:\n%s", apiID, apis.body)
	}
	ref := p.get("/portal/apis/"+apiID+"/prod", http.StatusOK)
	for _, want := range []string{"<code>/items</code>", "Requires an API key.", "x-api-key", "openapi.json"} {
		if !strings.Contains(ref.body, want) {
			t.Errorf("reference page lacks %q:\n%s", want, ref.body)
		}
	}
	if doc := p.get("/portal/apis/"+apiID+"/prod/openapi.json", http.StatusOK); !strings.Contains(doc.body, `"/items"`) || strings.Contains(doc.body, "x-amazon-apigateway-integration") {
		t.Errorf("OpenAPI download: want /items without the integrations:\n%s", doc.body)
	}

	value, id := p.createKey("production", planID)
	if f := (plans.KeyFormat{}); !f.Generated(value) || f.BadChecksum(value) {
		t.Fatalf("created value %q: want a generated value", value)
	}
	ctx := context.Background()
	k, err := tp.db.GetApiKey(ctx, id)
	must(t, err)
	inPlan, _, err := tp.db.ListUsagePlans(ctx, id, plans.Page{Limit: 5})
	must(t, err)
	if k.CustomerID != "acme" || !k.Enabled || len(inPlan) != 1 || inPlan[0].ID != planID {
		t.Fatalf("stored key %+v in plans %v: want enabled, customer acme, in plan %s", k, inPlan, planID)
	}
	if keys := p.get("/portal/keys", http.StatusOK); strings.Contains(keys.body, value) || !strings.Contains(keys.body, "production") {
		t.Fatalf("keys page: want the key listed without its value:\n%s", keys.body)
	}

	rotate := p.get("/portal/keys/"+id+"/rotate", http.StatusOK).body
	token := regexp.MustCompile(`name="token" value="([^"]+)"`).FindStringSubmatch(rotate)[1]
	form := url.Values{"overlap": {"600"}, "token": {token}}
	first := valueRe.FindStringSubmatch(p.post("/portal/keys/"+id+"/rotate", form, csrfRe.FindStringSubmatch(rotate)[1], http.StatusOK).body)
	again := valueRe.FindStringSubmatch(p.post("/portal/keys/"+id+"/rotate", form, csrfRe.FindStringSubmatch(rotate)[1], http.StatusOK).body)
	if first == nil || again == nil || first[1] == value || first[1] != again[1] {
		t.Fatalf("rotation: got %v then %v, want one new value shown twice", first, again)
	}
	recs, err := tp.db.KeyRecords(ctx, []string{plans.HashKey(value, nil), plans.HashKey(first[1], nil)})
	must(t, err)
	if len(recs) != 2 || recs[plans.HashKey(value, nil)].ValueExpiresAt.IsZero() {
		t.Fatalf("after rotation: records %v, want the old value kept for its overlap and the new one", recs)
	}

	revoke := p.get("/portal/keys/"+id+"/revoke", http.StatusOK).body
	if r := p.post("/portal/keys/"+id+"/revoke", url.Values{}, csrfRe.FindStringSubmatch(revoke)[1], http.StatusSeeOther); r.header.Get("Location") != "/portal/keys?revoked=1" {
		t.Fatalf("revoke: redirected to %q", r.header.Get("Location"))
	}
	if _, err := tp.db.GetApiKey(ctx, id); plans.ErrorKind(err) != plans.KindNotFound {
		t.Fatalf("after revoking: GetApiKey error %v, want not found", err)
	}
}

// Every route of the portal, called by one partner with another
// partner's ids (key, API, stage, plan), answers as if they did not
// exist, and no page shows anything of the other partner.
func TestNothingOfAnotherPartnerIsVisible(t *testing.T) {
	t.Parallel()
	tp := mustPortal(t, nil)
	apiA, planA := tp.mustAPI(t, "alpha-api")
	_, planB := tp.mustAPI(t, "beta-api")
	a := tp.invited(t, "a@example.com", "customer-a", planA)
	b := tp.invited(t, "b@example.com", "customer-b", planB)
	valueA, keyA := a.createKey("alpha-secret-key", planA)
	_, keyB := b.createKey("beta-key", planB)
	csrfB := b.csrfOf("/portal/keys")
	secretsOfA := []string{keyA, valueA, "alpha-secret-key", apiA, "alpha-api", "customer-a", "a@example.com", planA}

	ids := map[string]string{"keyId": keyA, "apiId": apiA, "stage": "prod"}
	seen := 0
	err := chi.Walk(tp.handler.(chi.Routes), func(method, pattern string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		path := regexp.MustCompile(`\{(\w+)\}`).ReplaceAllStringFunc(pattern, func(m string) string { return ids[m[1:len(m)-1]] })
		want, form := http.StatusNotFound, url.Values(nil)
		switch {
		case strings.HasPrefix(pattern, "/portal/static/"), pattern == "/" || pattern == "/portal" || pattern == "/portal/",
			strings.HasPrefix(pattern, "/portal/invite/"), strings.HasPrefix(pattern, "/portal/sign"):
			return nil // no partner's data: public pages, files, redirects
		case method == http.MethodPost && pattern == "/portal/keys":
			want, form = http.StatusBadRequest, url.Values{"name": {"x"}, "plan": {planA}}
		case method == http.MethodPost:
			form = url.Values{"overlap": {"600"}, "token": {"t"}}
		case !strings.Contains(pattern, "{"):
			want = http.StatusOK // lists: checked below for the other partner's data
			if pattern == "/portal/usage" {
				path += "?key=" + keyA
				want = http.StatusNotFound
			}
		}
		if form != nil {
			form.Set(csrfField, csrfB)
		}
		seen++
		r := b.do(method, path, form)
		if r.status != want {
			t.Errorf("%s %s as the other partner: got %d, want %d:\n%s", method, path, r.status, want, r.body)
		}
		for _, s := range secretsOfA {
			if strings.Contains(r.body, s) {
				t.Errorf("%s %s as the other partner shows %q", method, path, s)
			}
		}
		return nil
	})
	must(t, err)
	if seen < 10 {
		t.Fatalf("walked %d routes, want every portal route with data (10 or more)", seen)
	}
	if k, err := tp.db.GetApiKey(context.Background(), keyA); err != nil || !k.Enabled {
		t.Fatalf("partner A's key after B's tries: %+v, %v; want it untouched", k, err)
	}
	if r := b.get("/portal/usage?key="+keyB, http.StatusOK); !strings.Contains(r.body, "beta-key") {
		t.Errorf("B's own usage page lacks its key:\n%s", r.body)
	}
}

// A POST without the page's CSRF token, with another session's, or from
// another origin is refused and changes nothing; the session cookie is
// HTTP only and SameSite=Strict.
func TestFormsRefuseCrossSiteRequests(t *testing.T) {
	t.Parallel()
	tp := mustPortal(t, nil)
	_, planID := tp.mustAPI(t, "api")
	a := tp.invited(t, "a@example.com", "acme", planID)
	other := tp.invited(t, "o@example.com", "other", planID)
	for name, form := range map[string]url.Values{
		"no token":           {"name": {"k"}, "plan": {planID}},
		"another's token":    {"name": {"k"}, "plan": {planID}, csrfField: {other.csrfOf("/portal/keys")}},
		"an anonymous token": {"name": {"k"}, "plan": {planID}, csrfField: {tp.newPartner(t).csrfOf("/portal/signin")}},
	} {
		if r := a.do(http.MethodPost, "/portal/keys", form); r.status != http.StatusForbidden {
			t.Errorf("%s: got %d, want 403", name, r.status)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, tp.url+"/portal/keys", strings.NewReader(url.Values{"name": {"k"}, "plan": {planID},
		csrfField: {a.csrfOf("/portal/keys")}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	res, err := a.http.Do(req)
	must(t, err)
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin POST: got %d, want 403", res.StatusCode)
	}
	if ks, _, _ := tp.db.ListApiKeys(context.Background(), "", "acme", plans.Page{Limit: 5}); len(ks) != 0 {
		t.Fatalf("refused posts created keys %v", ks)
	}

	p := tp.newPartner(t)
	token := plans.NewPortalToken()
	must(t, tp.db.CreatePortalInvite(context.Background(), &plans.PortalInvite{Email: "c@example.com", CustomerID: "c", UsagePlanIDs: []string{planID}},
		plans.PortalTokenHash(plans.TokenInvite, token)))
	r := p.post("/portal/invite/"+token, url.Values{"password": {"a long enough password"}}, p.csrfOf("/portal/invite/"+token), http.StatusSeeOther)
	cookie := ""
	for _, c := range r.header.Values("Set-Cookie") {
		if strings.HasPrefix(c, sessionCookie+"=") {
			cookie = c
		}
	}
	for _, attr := range []string{"HttpOnly", "SameSite=Strict", "Path=/portal/"} {
		if !strings.Contains(cookie, attr) {
			t.Errorf("session cookie %q lacks %s", cookie, attr)
		}
	}
	if strings.Contains(cookie, "Secure") {
		t.Errorf("session cookie %q is Secure on a plain-HTTP portal (the browser would drop it)", cookie)
	}
	if s := mustPortal(t, func(o *Options) { o.BaseURL = "https://developers.example.com" }); !s.cookie(sessionCookie, "v", 1).Secure {
		t.Error("a portal on https:// sets cookies without Secure")
	}
}

// Failed sign-ins are limited per client address, and an unknown email
// is refused as a wrong password is.
func TestSignInFailuresAreLimited(t *testing.T) {
	t.Parallel()
	// The clock stands still: slow password checks on a busy machine
	// must not refill the bucket between the failures.
	clock := clocktest.New(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	tp := mustPortal(t, func(o *Options) { o.Now = clock.Now })
	_, planID := tp.mustAPI(t, "api")
	tp.invited(t, "a@example.com", "acme", planID)
	p := tp.newPartner(t)
	csrf := p.csrfOf("/portal/signin")
	for i := range signinBurst {
		email := "a@example.com"
		if i%2 == 1 {
			email = "nobody@example.com"
		}
		r := p.post("/portal/signin", url.Values{"email": {email}, "password": {"wrong password!"}}, csrf, http.StatusUnauthorized)
		if !strings.Contains(r.body, "Wrong email or password.") {
			t.Fatalf("failure %d: want the same words for both causes:\n%s", i, r.body)
		}
	}
	r := p.post("/portal/signin", url.Values{"email": {"a@example.com"}, "password": {"a long enough password"}}, csrf, http.StatusTooManyRequests)
	if r.header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
}

// With a sign-up plan, anyone may create an account of their own
// customer whose keys go in that plan; without one there is no sign-up.
func TestSignUpPutsKeysOnTheOperatorsPlan(t *testing.T) {
	t.Parallel()
	off := mustPortal(t, nil)
	off.newPartner(t).get("/portal/signup", http.StatusNotFound)

	var planID string
	tp := mustPortal(t, func(o *Options) { o.SignupPlan = "pending" })
	_, planID = tp.mustAPI(t, "open-api")
	tp.opts.SignupPlan = planID // the plan exists once the API does
	p := tp.newPartner(t)
	csrf := p.csrfOf("/portal/signup")
	p.post("/portal/signup", url.Values{"email": {"new@example.com"}, "password": {"short"}}, csrf, http.StatusBadRequest)
	p.post("/portal/signup", url.Values{"email": {"new@example.com"}, "password": {"a long enough password"}}, csrf, http.StatusSeeOther)
	_, id := p.createKey("mine", planID)
	k, err := tp.db.GetApiKey(context.Background(), id)
	must(t, err)
	if !strings.HasPrefix(k.CustomerID, "portal-") {
		t.Fatalf("self-service key's customer %q, want portal-<account id>", k.CustomerID)
	}
	again := tp.newPartner(t)
	again.post("/portal/signup", url.Values{"email": {"NEW@example.com"}, "password": {"another long password"}}, again.csrfOf("/portal/signup"), http.StatusConflict)
}

var (
	tagRe       = regexp.MustCompile(`(?is)<(script|style)\b[^>]*>`)
	inlineAttrs = regexp.MustCompile(`(?i)\s(style|on[a-z]+)\s*=`)
)

// The templates work under the portal's CSP: no inline script or style,
// no inline handler; and every response carries the CSP.
func TestTemplatesWorkUnderTheCSP(t *testing.T) {
	t.Parallel()
	err := fs.WalkDir(templateFiles, "templates", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(templateFiles, p)
		for _, tag := range tagRe.FindAllStringSubmatch(string(b), -1) {
			if strings.EqualFold(tag[1], "style") || !strings.Contains(tag[0], "src=") {
				t.Errorf("%s: inline %s", p, tag[0])
			}
		}
		if m := inlineAttrs.FindString(string(b)); m != "" {
			t.Errorf("%s: inline style or event handler %q", p, m)
		}
		return err
	})
	must(t, err)
	tp := mustPortal(t, nil)
	r := tp.newPartner(t).get("/portal/signin", http.StatusOK)
	if r.header.Get("Content-Security-Policy") != CSP || r.header.Get("Cache-Control") != "no-store" || r.header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("headers %v: want the CSP, no-store and DENY", r.header)
	}
}

// Creating a key and putting it in its plan are one transaction: a key
// that cannot join its plan (here the plan was deleted after the partner
// was invited to it) is never stored, and nothing of it is audited.
func TestKeyThatCannotJoinItsPlanIsNeverStored(t *testing.T) {
	t.Parallel()
	tp := mustPortal(t, nil)
	_, planID := tp.mustAPI(t, "catalog")
	p := tp.invited(t, "bo@example.com", "bo-co", planID)
	csrf := p.csrfOf("/portal/keys")
	ctx := context.Background()
	must(t, tp.db.DeleteUsagePlan(ctx, planID))
	p.post("/portal/keys", url.Values{"name": {"orphan"}, "plan": {planID}}, csrf, http.StatusNotFound)
	keys, _, err := tp.db.ListApiKeys(ctx, "", "bo-co", plans.Page{Limit: 10})
	must(t, err)
	if len(keys) != 0 {
		t.Fatalf("keys of the partner %+v, want none: the key could not join its plan", keys)
	}
	entries, _, err := tp.db.AuditEntries(ctx, plans.AuditQuery{Actor: "portal:bo@example.com", Limit: 10})
	must(t, err)
	for _, e := range entries {
		if e.Operation == "CreateApiKey" || e.Operation == "CreateUsagePlanKey" {
			t.Errorf("audit entry %+v of a creation that was rolled back", e)
		}
	}
}

// budgetUsage is a usage port where every key used one unit a day and the
// customer's budget has 70 of 100 left in a period that began two days
// ago.
type budgetUsage struct{ zeroUsage }

func (budgetUsage) KeyUsage(_ context.Context, _, _ string, from, to time.Time) ([][]int64, error) {
	var out [][]int64
	for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
		out = append(out, []int64{1, -1})
	}
	return out, nil
}

func (budgetUsage) CustomerUsage(_ context.Context, _, customerID string) (*plans.CustomerUsage, error) {
	if customerID != "acme" {
		return nil, fmt.Errorf("budget of customer %q read for the partner of acme", customerID)
	}
	start := plans.UTCDate(time.Now()).AddDate(0, 0, -2)
	return &plans.CustomerUsage{Limit: 100, Used: 30, Remaining: 70, PeriodStart: start, PeriodEnd: start.AddDate(0, 1, 0)}, nil
}

// The usage page of a key in a plan with a customer quota shows the
// budget all the partner's keys share: what is left now, and a line of
// what was left at the end of each day of the current period, counted
// back by the units of every key of the partner.
func TestUsagePageShowsTheBudgetAllKeysShare(t *testing.T) {
	t.Parallel()
	tp := mustPortal(t, func(o *Options) { o.Usage = budgetUsage{} })
	apiID, _ := tp.mustAPI(t, "catalog")
	plan := &plans.UsagePlan{Name: "metered", ApiStages: []plans.ApiStage{{ApiID: apiID, Stage: "prod"}},
		Quota: &plans.Quota{Limit: 1000, Period: "MONTH"}, Tags: map[string]string{plans.CustomerQuotaTag: "100"}}
	must(t, tp.db.CreateUsagePlan(context.Background(), plan))
	p := tp.invited(t, "ann@example.com", "acme", plan.ID)
	_, id := p.createKey("one", plan.ID)
	p.createKey("two", plan.ID)
	body := p.get("/portal/usage?key="+id, http.StatusOK).body
	if !strings.Contains(body, "Budget shared by all your keys: 70 of 100 left this period") {
		t.Fatalf("usage page without the budget:\n%s", body)
	}
	m := regexp.MustCompile(`data-budget="([^"]*)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no budget line on the chart:\n%s", body)
	}
	days := strings.Split(m[1], ",")
	if len(days) != usageDays || strings.Join(days[usageDays-3:], ",") != "74,72,70" || strings.Join(days[:usageDays-3], "") != "" {
		t.Errorf("budget line %q, want empty days before the period, then 74,72,70 (two keys, one unit a day each)", m[1])
	}
}

// An operation secured by an authorizer or IAM is shown as not available
// (the gateway refuses it), and its scheme's header is not taken for the
// API key's.
func TestReferenceShowsOperationsBehindAnAuthorizerAsClosed(t *testing.T) {
	t.Parallel()
	def := &plans.ApiDefinition{Name: "a", ApiKeySource: plans.ApiKeySourceHeader,
		Authorizers: []plans.Authorizer{{Name: "lambda", Type: plans.AuthorizerToken, IdentitySource: "method.request.header.Authorization", AuthorizerURI: "arn:x"}},
		Resources: []plans.Resource{{Path: "/", ResourceMethods: map[string]*plans.Method{
			"GET":    {HTTPMethod: "GET", AuthorizationType: plans.AuthorizationCustom, AuthorizerID: "lambda"},
			"DELETE": {HTTPMethod: "DELETE", AuthorizationType: plans.AuthorizationIAM},
			"POST":   {HTTPMethod: "POST", AuthorizationType: plans.AuthorizationNone, APIKeyRequired: true},
		}}}}
	raw, _, err := openapi.Export(def, openapi.ExportOptions{})
	must(t, err)
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	must(t, err)
	ref := &reference{}
	for _, m := range []string{"GET", "DELETE", "POST"} {
		o := operationView(doc, m, "/", doc.Paths.Value("/").GetOperation(m), ref)
		if want := m != "POST"; o.Closed != want || o.KeyRequired == want {
			t.Errorf("%s: closed %v, key required %v; want closed %v", m, o.Closed, o.KeyRequired, want)
		}
	}
	if ref.KeyHeader != "x-api-key" {
		t.Errorf("key header %q, want x-api-key", ref.KeyHeader)
	}
}
