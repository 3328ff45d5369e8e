package admin

import "testing"

func TestOperationName(t *testing.T) {
	t.Parallel()
	cases := []struct{ method, path, want string }{
		{"GET", "/restapis/abc/models", "GetModels"},
		{"GET", "/usageplans/p1/usage", "GetUsage"},
		{"PATCH", "/usageplans/p1/keys/k1/usage", "UpdateUsage"},
		{"PUT", "/restapis/abc", "PutRestApi"},
		{"PUT", "/tags/arn%3Aaws%3Aapigateway%3A%3A%2Frestapis%2Fabc", "TagResource"},
		{"GET", "/restapis/abc/stages/prod/exports/oas30", "GetExport"},
		{"GET", "/restapis/abc/stages", "GetStages"},
		{"GET", "/nothing/here", ""},
		{"BREW", "/restapis", ""},
	}
	for _, tc := range cases {
		if got := operationName(tc.method, tc.path); got != tc.want {
			t.Errorf("%s %s: got %q, want %q", tc.method, tc.path, got, tc.want)
		}
	}
}
