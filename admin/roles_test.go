package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/go-chi/chi/v5"

	"tollgate/plans"
	"tollgate/plans/postgres"
	"tollgate/plans/postgres/postgrestest"
)

const bootstrapTestToken = "bootstrap-test-token-0123456789abcdef"

// zeroUsage is a UsageCounter that counts nothing: it registers the usage
// routes; the role table never reaches it with a plan that exists.
type zeroUsage struct{}

func (zeroUsage) Now(context.Context) (time.Time, error) { return time.Now(), nil }

func (zeroUsage) Usage(context.Context, string, string, time.Time, time.Time) (map[string]plans.DayCount, error) {
	return map[string]plans.DayCount{}, nil
}
func (zeroUsage) QuotaRemaining(context.Context, string, string, plans.Quota) (int64, error) {
	return 0, nil
}
func (zeroUsage) SetRemaining(context.Context, string, string, plans.Quota, int64) error { return nil }

// fullServer is an admin with every optional part, so that every route is
// registered, on a fresh database.
func fullServer(t *testing.T) (*Server, *postgres.DB) {
	t.Helper()
	db := postgrestest.MustDB(t)
	s := New(Options{Store: db, CredentialStore: db, Audit: db, Config: db, Ledger: db, Usage: zeroUsage{}, Logger: testLogger(t),
		Credentials: Credentials{BearerToken: bootstrapTestToken}, Metrics: http.NotFoundHandler(),
		Web:    fstest.MapFS{"index.html": {Data: []byte("console")}},
		Portal: http.NotFoundHandler(), PortalInvites: db, PortalURL: "http://portal.test"})
	return s, db
}

// walkRoutes lists every route of s as "METHOD pattern".
func walkRoutes(t *testing.T, s *Server) []string {
	t.Helper()
	var out []string
	err := chi.Walk(s.mux, func(method, pattern string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		out = append(out, ruleKey(method, pattern))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestEveryRouteHasARule(t *testing.T) {
	t.Parallel()
	s, _ := fullServer(t)
	routes := map[string]bool{}
	for _, key := range walkRoutes(t, s) {
		routes[key] = true
		method, pattern, _ := strings.Cut(key, " ")
		if _, ok := ruleOf(method, pattern); !ok {
			t.Error(missingRuleHelp(method, pattern))
		}
		routes[ruleKey("*", pattern)] = true
	}
	for key := range routeRules {
		if !routes[key] {
			t.Errorf("routeRules (admin/roles.go) has %q, which is no route: remove it or fix its pattern", key)
		}
	}
}

// allowedFor is the role table as docs/operations.md states it, written
// apart from routeRules so that each checks the other: whether role may
// call method on pattern (arnPath: the tagged resource of a /tags route).
// A new route must be placed here too.
func allowedFor(role plans.Role, method, pattern, arnPath string) bool {
	write := method != http.MethodGet && method != http.MethodHead && !postReads[pattern]
	credentials := strings.HasPrefix(pattern, "/credentials")
	keys := strings.HasPrefix(pattern, "/apikeys") || strings.HasPrefix(arnPath, "/apikeys") || strings.HasPrefix(pattern, "/portal/") ||
		(strings.HasPrefix(pattern, "/usageplans/{usagePlanId}/keys") && !strings.HasSuffix(pattern, "/usage"))
	planRead := !write && (pattern == "/usageplans" || pattern == "/usageplans/{usagePlanId}" || strings.HasPrefix(arnPath, "/usageplans"))
	switch role {
	case plans.RoleAdmin:
		return true
	case plans.RoleOperator:
		return !credentials && !(write && pattern == "/account")
	case plans.RoleKeys:
		return keys || planRead
	case plans.RoleViewer:
		return !write && !credentials && !keyValueReads[pattern]
	}
	return false
}

// postReads are POST routes that change nothing.
var postReads = map[string]bool{"/config/plan": true}

// keyValueReads are reads that answer API key values.
var keyValueReads = map[string]bool{}

// requestFor fills pattern's parameters with ids that exist nowhere, so a
// permitted call answers 400 or 404 and changes nothing.
func requestFor(method, pattern, arnPath string) *http.Request {
	path := paramPattern.ReplaceAllString(pattern, "zzzz")
	if strings.HasSuffix(path, "/*") {
		path = strings.TrimSuffix(path, "*") + url.PathEscape("arn:aws:apigateway:us-east-1::"+arnPath)
	}
	var body []byte
	if method != http.MethodGet && method != http.MethodHead && method != http.MethodDelete {
		body = []byte(`{}`)
	}
	return httptest.NewRequest(method, path, bytes.NewReader(body))
}

func TestEveryRouteAgainstEveryRole(t *testing.T) {
	t.Parallel()
	s, _ := fullServer(t)
	tokens := map[plans.Role]string{}
	for _, role := range plans.Roles {
		tokens[role] = mustCredential(t, s, "cred-"+string(role), role, plans.CredentialToken)["token"]
	}
	for _, key := range walkRoutes(t, s) {
		method, pattern, _ := strings.Cut(key, " ")
		if ru, _ := ruleOf(method, pattern); ru.Public {
			continue
		}
		arns := []string{""}
		if strings.HasPrefix(pattern, "/tags/") {
			arns = []string{"/restapis/zzzz", "/restapis/zzzz/stages/prod", "/usageplans/zzzz", "/apikeys/zzzz", "/domainnames/api.example.com"}
		}
		for _, arn := range arns {
			for _, role := range plans.Roles {
				req := requestFor(method, pattern, arn)
				req.Header.Set("Authorization", "Bearer "+tokens[role])
				rec := httptest.NewRecorder()
				s.ServeHTTP(rec, req)
				denied := rec.Code == http.StatusForbidden && rec.Header().Get("x-amzn-ErrorType") == typeAccessDenied
				want := allowedFor(role, method, pattern, arn)
				switch {
				case want && denied:
					t.Errorf("%s %s (%s) as %s: got 403 %s, want it allowed", method, pattern, arn, role, rec.Body)
				case !want && !denied:
					t.Errorf("%s %s (%s) as %s: got %d %s, want 403 AccessDeniedException", method, pattern, arn, role, rec.Code, rec.Body)
				case denied && !strings.Contains(rec.Body.String(), "apigateway:"+operationOf(key, req)):
					t.Errorf("%s %s as %s: refusal %s does not name the operation %s", method, pattern, role, rec.Body, operationOf(key, req))
				}
			}
		}
	}
}

func operationOf(key string, r *http.Request) string {
	method, pattern, _ := strings.Cut(key, " ")
	ru, _ := ruleOf(method, pattern)
	if ru.ImportOp != "" && r.URL.Query().Get("mode") != "" {
		return ru.ImportOp
	}
	return ru.Op
}

// mustCredential creates a credential through the API with the bootstrap
// token and returns the answer's fields.
func mustCredential(t *testing.T, h http.Handler, name string, role plans.Role, kind string) map[string]string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"name": name, "role": string(role), "kind": kind})
	req := httptest.NewRequest(http.MethodPost, "/credentials", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+bootstrapTestToken)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated {
		t.Fatalf("create credential %s: got %d %s, want 201", name, rec.Code, rec.Body)
	}
	out := map[string]string{}
	var raw map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &raw)
	for k, v := range raw {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}
