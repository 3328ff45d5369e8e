package portal

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"tollgate/plans"
	"tollgate/plans/postgres"
	"tollgate/plans/postgres/postgrestest"
	"tollgate/web"
)

// zeroUsage answers every key's usage as nothing used (the real usage
// path, through the admin's GetUsage, is walked by the browser test in
// cmd/tollgate).
type zeroUsage struct{}

func (zeroUsage) KeyUsage(_ context.Context, _, _ string, from, to time.Time) ([][]int64, error) {
	var out [][]int64
	for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
		out = append(out, []int64{0, -1})
	}
	return out, nil
}

// CustomerUsage answers no budget.
func (zeroUsage) CustomerUsage(context.Context, string, string) (*plans.CustomerUsage, error) {
	return nil, nil
}

// testPortal is a portal on a fresh database, served by httptest.
type testPortal struct {
	*Server
	db  *postgres.DB
	url string
}

func mustPortal(t *testing.T, edit func(*Options)) *testPortal {
	t.Helper()
	db := postgrestest.MustDB(t)
	opts := Options{Accounts: db, Keys: db, Catalog: db, Usage: zeroUsage{}, Static: web.FS(),
		GatewayURL: "http://{apiId}.execute-api.localhost:8000"}
	if edit != nil {
		edit(&opts)
	}
	tp := &testPortal{db: db}
	srv := httptest.NewUnstartedServer(nil)
	tp.url = "http://" + srv.Listener.Addr().String()
	if opts.BaseURL == "" {
		opts.BaseURL = tp.url
	}
	tp.Server = New(opts)
	srv.Config.Handler = tp.Server
	srv.Start()
	t.Cleanup(srv.Close)
	return tp
}

// mustAPI creates API name with GET /items (API key required, MOCK)
// deployed to stage prod, and a usage plan covering it; it returns the
// API's and the plan's ids.
func (tp *testPortal) mustAPI(t *testing.T, name string) (apiID, planID string) {
	t.Helper()
	ctx, db := context.Background(), tp.db
	api := &plans.RestApi{Name: name}
	must(t, db.CreateRestApi(ctx, api))
	rs, _, err := db.ListResources(ctx, api.ID, plans.Page{Limit: 10})
	must(t, err)
	items, err := db.CreateResource(ctx, api.ID, rs[0].ID, "items")
	must(t, err)
	must(t, db.PutMethod(ctx, api.ID, items.ID, &plans.Method{HTTPMethod: "GET", AuthorizationType: "NONE", APIKeyRequired: true}))
	must(t, db.PutIntegration(ctx, api.ID, items.ID, "GET", &plans.Integration{Type: plans.IntegrationMock}))
	must(t, db.CreateDeployment(ctx, api.ID, &plans.Deployment{}, "prod", "", nil))
	plan := &plans.UsagePlan{Name: name + "-plan", ApiStages: []plans.ApiStage{{ApiID: api.ID, Stage: "prod"}},
		Quota: &plans.Quota{Limit: 1000, Period: "DAY"}}
	must(t, db.CreateUsagePlan(ctx, plan))
	return api.ID, plan.ID
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// partner is a browser-like client of the portal: cookies kept, redirects
// not followed (tests look at them).
type partner struct {
	t    *testing.T
	tp   *testPortal
	http *http.Client
}

func (tp *testPortal) newPartner(t *testing.T) *partner {
	jar, _ := cookiejar.New(nil)
	return &partner{t: t, tp: tp, http: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// invited makes an invite (as the admin API does) for email, customer and
// plans, accepts it with a password and returns the signed-in partner.
func (tp *testPortal) invited(t *testing.T, email, customer string, planIDs ...string) *partner {
	t.Helper()
	token := plans.NewPortalToken()
	must(t, tp.db.CreatePortalInvite(context.Background(), &plans.PortalInvite{Email: email, CustomerID: customer, UsagePlanIDs: planIDs},
		plans.PortalTokenHash(plans.TokenInvite, token)))
	p := tp.newPartner(t)
	path := "/portal/invite/" + token
	p.post(path, url.Values{"password": {"a long enough password"}}, p.csrfOf(path), http.StatusSeeOther)
	return p
}

// reply is an answer the partner read.
type reply struct {
	status int
	header http.Header
	body   string
}

func (p *partner) do(method, path string, form url.Values) reply {
	p.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, p.tp.url+path, body)
	must(p.t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", p.tp.url)
	}
	res, err := p.http.Do(req)
	must(p.t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return reply{status: res.StatusCode, header: res.Header, body: string(b)}
}

// get fetches path and requires status want.
func (p *partner) get(path string, want int) reply {
	p.t.Helper()
	r := p.do(http.MethodGet, path, nil)
	if r.status != want {
		p.t.Fatalf("GET %s: got %d, want %d:\n%s", path, r.status, want, r.body)
	}
	return r
}

// post sends form with csrf to path and requires status want.
func (p *partner) post(path string, form url.Values, csrf string, want int) reply {
	p.t.Helper()
	form.Set(csrfField, csrf)
	r := p.do(http.MethodPost, path, form)
	if r.status != want {
		p.t.Fatalf("POST %s: got %d, want %d:\n%s", path, r.status, want, r.body)
	}
	return r
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrfOf returns the CSRF token of the page at path.
func (p *partner) csrfOf(path string) string {
	p.t.Helper()
	m := csrfRe.FindStringSubmatch(p.get(path, http.StatusOK).body)
	if m == nil {
		p.t.Fatalf("GET %s: no CSRF field", path)
	}
	return m[1]
}

var valueRe = regexp.MustCompile(`id="key-value" readonly value="([A-Za-z0-9]+)"`)

// createKey creates a key named name in plan and returns its value and id.
func (p *partner) createKey(name, planID string) (value, id string) {
	p.t.Helper()
	r := p.post("/portal/keys", url.Values{"name": {name}, "plan": {planID}}, p.csrfOf("/portal/keys"), http.StatusCreated)
	m := valueRe.FindStringSubmatch(r.body)
	idm := regexp.MustCompile(`\(<code>([a-z0-9]{10})</code>\)`).FindStringSubmatch(r.body)
	if m == nil || idm == nil {
		p.t.Fatalf("create key: no value or id on the page:\n%s", r.body)
	}
	return m[1], idm[1]
}
