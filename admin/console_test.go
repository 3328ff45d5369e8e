package admin_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"tollgate/admin"
	"tollgate/plans/postgres/postgrestest"
	"tollgate/web"
)

// TestConsoleIsServedUnderAStrictCSP checks that every console response,
// without credentials, carries the Content-Security-Policy (no inline
// script or style, no eval, this origin only) and the other protections,
// and that modules are served as JavaScript (browsers refuse ES modules of
// another type).
func TestConsoleIsServedUnderAStrictCSP(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(admin.New(admin.Options{
		Store:       postgrestest.MustDB(t),
		Credentials: admin.Credentials{BearerToken: token},
		Web:         web.FS(),
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct{ path, wantType string }{
		{"/console/", "text/html"},
		{"/console/js/main.js", "text/javascript"},
		{"/console/console.css", "text/css"},
		{"/console/vendor/uplot/uPlot.esm.js", "text/javascript"},
	} {
		resp, err := http.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		_ = readAll(resp)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.wantType) {
			t.Errorf("%s: got %d %q, want 200 %s", tc.path, resp.StatusCode, resp.Header.Get("Content-Type"), tc.wantType)
		}
		csp := resp.Header.Get("Content-Security-Policy")
		if csp != admin.ConsoleCSP || strings.Contains(csp, "unsafe") || !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("%s: Content-Security-Policy %q, want %q", tc.path, csp, admin.ConsoleCSP)
		}
		for h, want := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"} {
			if got := resp.Header.Get(h); got != want {
				t.Errorf("%s: %s %q, want %q", tc.path, h, got, want)
			}
		}
	}
	resp, err := http.Get(srv.URL + "/restapis")
	if err != nil {
		t.Fatal(err)
	}
	if _ = readAll(resp); resp.StatusCode != http.StatusForbidden || resp.Header.Get("Content-Security-Policy") != "" {
		t.Errorf("/restapis without a token: got %d with CSP %q, want 403 and no console headers", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
	}
}
