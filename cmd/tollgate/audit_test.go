package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/jackc/pgx/v5"

	"tollgate/plans/postgres/postgrestest"
)

// TestKeyValuesAppearNowhere creates API keys every way there is (a chosen
// value, a generated one, a CSV import), admin credentials of both kinds,
// and sends traffic with the keys; then it searches every row of every
// table of the database (the audit log included), every log line of every
// node, and the metrics, for every value and secret: none may appear.
func TestKeyValuesAppearNowhere(t *testing.T) {
	logs := &logBuffer{}
	dbURL := postgrestest.MustURL(t)
	s := mustStackWith(t, stackOptions{logs: logs, databaseURL: dbURL, adminToken: consoleToken,
		secretsKey: "tollgate-test-secrets-key-0123456789abcdef"})
	ctx := context.Background()
	w := s.setupWalk(t, ctx)
	chosen := "ChosenKeyValueForTheSearch0123456789"
	k, err := s.sdk.CreateApiKey(ctx, &apigateway.CreateApiKeyInput{Name: aws.String("chosen"), Enabled: true, Value: aws.String(chosen)})
	must(t, "CreateApiKey", err)
	imported := "ImportedKeyValueForTheSearch0123456789"
	_, err = s.sdk.ImportApiKeys(ctx, &apigateway.ImportApiKeysInput{Body: []byte("name,key,enabled\nimp," + imported + ",true\n"), Format: "csv"})
	must(t, "ImportApiKeys", err)
	tok := adminCall(t, s, http.MethodPost, "/credentials", `{"name":"bot","role":"keys","kind":"token"}`)
	sig := adminCall(t, s, http.MethodPost, "/credentials", `{"name":"sig","role":"viewer","kind":"sigv4"}`)
	for _, v := range []string{w.keyValue, chosen, imported} {
		s.call(t, 0, w.apiID, "/prod/items/1", v).Body.Close()
	}
	secrets := map[string]string{"generated key": w.keyValue, "chosen key": chosen, "imported key": imported,
		"token": field(tok, "token"), "sigv4 secret": field(sig, "secretAccessKey")}

	places := map[string]string{"logs": logs.String(), "admin metrics": get(t, "http://"+s.admin.AdminAddr+"/metrics")}
	for i, g := range s.gateways {
		places["gateway metrics "+string(rune('0'+i))] = get(t, "http://"+g.MetricsAddr+"/metrics")
	}
	tables := dumpTables(t, dbURL)
	if !strings.Contains(tables["audit_log"], "CreateApiKey") || !strings.Contains(tables["audit_log"], *k.Id) {
		t.Fatalf("the audit log lacks the key's creation: %s", tables["audit_log"])
	}
	for name, rows := range tables {
		places["table "+name] = rows
	}
	for what, secret := range secrets {
		if secret == "" {
			t.Fatalf("%s: empty", what)
		}
		for place, text := range places {
			if strings.Contains(text, secret) {
				t.Errorf("the %s appears in %s", what, place)
			}
		}
	}
}

// adminCall sends one call with the stack's admin token and returns the
// body; a non-2xx answer fails the test.
func adminCall(t *testing.T, s *stack, method, path, body string) string {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+s.admin.AdminAddr+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+consoleToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 != 2 {
		t.Fatalf("%s %s: got %d %s", method, path, res.StatusCode, b)
	}
	return string(b)
}

// field returns a top-level string field of a JSON object (test use).
func field(body, name string) string {
	_, after, ok := strings.Cut(body, `"`+name+`":"`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(after, `"`)
	return v
}

func get(t *testing.T, url string) string {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

// dumpTables returns every row of every table of the public schema, as
// JSON text, by table.
func dumpTables(t *testing.T, dbURL string) map[string]string {
	t.Helper()
	ctx := context.Background()
	conn := postgrestest.MustConn(t, dbURL)
	rows, _ := conn.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(names) < 10 {
		t.Fatalf("tables: %v %v", names, err)
	}
	out := map[string]string{}
	for _, n := range names {
		rows, _ := conn.Query(ctx, `SELECT to_jsonb(t)::text FROM `+pgx.Identifier{n}.Sanitize()+` t`)
		texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("dump %s: %v", n, err)
		}
		out[n] = strings.Join(texts, "\n")
	}
	return out
}
