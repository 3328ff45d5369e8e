package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"

	"tollgate/internal/redistest"
	"tollgate/internal/waittest"
	"tollgate/ledger/ledgertest"
	"tollgate/plans"
	"tollgate/plans/postgres"
	"tollgate/plans/postgres/postgrestest"
)

const testAdminToken = "tollgate-test-admin-token-0123456789abcdef"

// ledgerAdmin is one admin node on a fresh database whose flush worker
// takes usage from a ledgertest.RedisSource every 100 ms.
type ledgerAdmin struct {
	m     *Main
	src   *ledgertest.RedisSource
	sdk   *apigateway.Client
	dbURL string
}

func startLedgerAdmin(t *testing.T) *ledgerAdmin {
	t.Helper()
	rdb, prefix := redistest.MustClient(t)
	a := &ledgerAdmin{src: ledgertest.NewRedisSource(rdb, prefix+":src"), dbURL: postgrestest.MustURL(t)}
	a.m = NewMain(Config{
		Role: "admin", DatabaseURL: a.dbURL, RedisURL: redistest.URL(), RedisPrefix: prefix,
		RedisTimeout: 5 * time.Second, AdminAddr: "127.0.0.1:0", AccountRateLimit: 10000, AccountBurstLimit: 5000,
		LimiterFailureMode: "open", LogLevel: "warn", LogFormat: "text", ShutdownTimeout: 5 * time.Second,
		UsageFlushInterval: 100 * time.Millisecond,
		Secrets:            Secrets{AdminAccessKeyID: testAccessKey, AdminSecretAccessKey: testSecretKey, AdminToken: testAdminToken},
	})
	a.m.UsageSource = a.src
	t.Cleanup(func() { _ = a.m.Close() })
	if err := a.m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.sdk = apigateway.New(apigateway.Options{
		BaseEndpoint: aws.String("http://" + a.m.AdminAddr), Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider(testAccessKey, testSecretKey, ""),
		Retryer:     aws.NopRetryer{},
	})
	return a
}

// planWithKey creates a usage plan holding one new key.
func (a *ledgerAdmin) planWithKey(t *testing.T) (planID, keyID string) {
	t.Helper()
	ctx := context.Background()
	p, err := a.sdk.CreateUsagePlan(ctx, &apigateway.CreateUsagePlanInput{Name: aws.String("billing")})
	must(t, "CreateUsagePlan", err)
	k, err := a.sdk.CreateApiKey(ctx, &apigateway.CreateApiKeyInput{Name: aws.String("partner"), Enabled: true, CustomerId: aws.String("cust-1")})
	must(t, "CreateApiKey", err)
	_, err = a.sdk.CreateUsagePlanKey(ctx, &apigateway.CreateUsagePlanKeyInput{UsagePlanId: p.Id, KeyId: k.Id, KeyType: aws.String("API_KEY")})
	must(t, "CreateUsagePlanKey", err)
	return *p.Id, *k.Id
}

// get is an authenticated GET on the admin API.
func (a *ledgerAdmin) get(t *testing.T, path string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+a.m.AdminAddr+path, nil)
	req.Header.Set("Authorization", "Bearer "+testAdminToken)
	res, err := http.DefaultClient.Do(req)
	must(t, "GET "+path, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("GET %s: got %d %s (%v), want 200", path, res.StatusCode, b, err)
	}
	return string(b)
}

func ledgerCount(t *testing.T, dbURL, planID, keyID string, day time.Time) int64 {
	t.Helper()
	db, err := postgres.Open(context.Background(), dbURL, postgres.Options{})
	must(t, "open", err)
	defer db.Close()
	rows, err := db.UsageDays(context.Background(), plans.UsageQuery{PlanID: planID, KeyIDs: []string{keyID}, From: day, To: day})
	must(t, "UsageDays", err)
	if len(rows) == 0 {
		return 0
	}
	return rows[0].Count
}

// TestAdminNodeFlushesUsageIntoTheLedger: the admin's flush worker moves
// what the usage source counted into PostgreSQL, GetUsage then serves a day
// the limiter no longer keeps, and a clean stop flushes what is pending.
func TestAdminNodeFlushesUsageIntoTheLedger(t *testing.T) {
	t.Parallel()
	a := startLedgerAdmin(t)
	ctx := context.Background()
	plan, key := a.planWithKey(t)
	old := plans.UTCDate(time.Now()).AddDate(0, 0, -150)
	must(t, "count", a.src.Count(ctx, key, plan, old, 6))
	day := old.Format(plans.UsageDateLayout)
	var items map[string][][]int64
	flushed := func() bool {
		out, err := a.sdk.GetUsage(ctx, &apigateway.GetUsageInput{UsagePlanId: &plan, StartDate: &day, EndDate: &day})
		must(t, "GetUsage", err)
		items = out.Items
		return reflect.DeepEqual(items, map[string][][]int64{key: {{6, -1}}})
	}
	if _, ok := waittest.Poll(30*time.Second, flushed); !ok {
		t.Fatalf("GetUsage of %s: got %v 30 s after counting, want the flushed 6", day, items)
	}
	if m := a.get(t, "/metrics"); !strings.Contains(m, "tollgate_ledger_lag_seconds ") || !strings.Contains(m, `tollgate_ledger_flush_errors_total{step="write"} 0`) {
		t.Fatalf("/metrics lacks the ledger's metrics:\n%s", m)
	}
	must(t, "count", a.src.Count(ctx, key, plan, old, 1))
	must(t, "close", a.m.Close())
	if got := ledgerCount(t, a.dbURL, plan, key, old); got != 7 {
		t.Fatalf("after a clean stop: got %d in the ledger, want 7", got)
	}
}

// TestUsageExportCommandWritesWhatTheAdminAPIExports compares `tollgate
// usage export` with GET /usageplans/{id}/usage/export, byte for byte.
func TestUsageExportCommandWritesWhatTheAdminAPIExports(t *testing.T) {
	t.Parallel()
	a := startLedgerAdmin(t)
	ctx := context.Background()
	plan, key := a.planWithKey(t)
	today := plans.UTCDate(time.Now())
	must(t, "count", a.src.Count(ctx, key, plan, today.AddDate(0, 0, -1), 3))
	must(t, "count", a.src.Count(ctx, key, plan, today, 2))
	waittest.Until(t, "the flush worker writing today's count", 30*time.Second, func() bool { return ledgerCount(t, a.dbURL, plan, key, today) == 2 })
	start, end := today.AddDate(0, 0, -7).Format(plans.UsageDateLayout), today.Format(plans.UsageDateLayout)
	for _, format := range []string{"csv", "json"} {
		api := a.get(t, "/usageplans/"+plan+"/usage/export?format="+format+"&startDate="+start+"&endDate="+end)
		out := filepath.Join(t.TempDir(), "usage."+format)
		cmd := usageExportCmd{Plan: plan, Start: start, End: end, Format: format, Output: out, DatabaseURL: a.dbURL}
		must(t, "usage export", cmd.Run(ctx))
		b, err := os.ReadFile(out)
		must(t, "read", err)
		if string(b) != api || !strings.Contains(api, "cust-1") {
			t.Fatalf("%s: the command wrote\n%q\nthe admin API exported\n%q\nwant the same, with the key's customer id", format, b, api)
		}
		// -o - is standard output, not a file named "-".
		var stdout strings.Builder
		cmd.Output, cmd.stdout = "-", &stdout
		must(t, "usage export -o -", cmd.Run(ctx))
		if stdout.String() != api {
			t.Fatalf("%s, -o -: the command wrote\n%q\nto standard output, want\n%q", format, stdout.String(), api)
		}
		if _, err := os.Stat("-"); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s, -o -: a file named - exists (%v), want none", format, err)
		}
	}
}

// A --plan that names no plan and has no usage in the ledger is an error
// naming --plan, and no file is written; a plan without usage exports the
// header row.
func TestUsageExportCommandRefusesAnUnknownPlan(t *testing.T) {
	t.Parallel()
	a := startLedgerAdmin(t)
	plan, _ := a.planWithKey(t)
	day := plans.UTCDate(time.Now()).Format(plans.UsageDateLayout)
	out := filepath.Join(t.TempDir(), "usage.csv")
	typo := usageExportCmd{Plan: plan + "x", Start: day, End: day, Format: "csv", Output: out, DatabaseURL: a.dbURL}
	if err := typo.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "--plan") {
		t.Errorf("unknown plan: got %v, want an error naming --plan", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unknown plan: the output file exists (%v), want none", err)
	}
	unused := typo
	unused.Plan = plan
	must(t, "export of a plan without usage", unused.Run(context.Background()))
	if b, err := os.ReadFile(out); err != nil || !strings.HasPrefix(string(b), "date,") || strings.Count(string(b), "\n") != 1 {
		t.Errorf("plan without usage: got %q (%v), want the header row only", b, err)
	}
}

func TestUsageExportCommandRefusesBadDates(t *testing.T) {
	for _, c := range []struct {
		cmd  usageExportCmd
		want string
	}{
		{usageExportCmd{Plan: "p", Start: "2026-02-30", End: "2026-03-01"}, "--start"},
		{usageExportCmd{Plan: "p", Start: "2026-03-01", End: "tomorrow"}, "--end"},
		{usageExportCmd{Plan: "p", Start: "2025-01-01", End: "2026-03-01"}, "366"},
	} {
		if _, err := c.cmd.query(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error naming %s", c.cmd, err, c.want)
		}
	}
}

func TestWriteFileWholeLeavesNothingWhenWritingFails(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "usage.csv")
	err := writeFileWhole(path, func(w io.Writer) error {
		_, _ = io.WriteString(w, "date,usagePlanId\r\n")
		return errors.New("database unavailable")
	})
	if err == nil {
		t.Fatal("got no error, want the write's")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("got %v in the directory after a failed export, want nothing", entries)
	}
	must(t, "write", writeFileWhole(path, func(w io.Writer) error { _, err := io.WriteString(w, "ok"); return err }))
	if b, _ := os.ReadFile(path); string(b) != "ok" {
		t.Fatalf("got %q, want ok", b)
	}
}

func TestRunRefusesAFlushIntervalOutOfRange(t *testing.T) {
	for _, d := range []time.Duration{time.Millisecond, 2 * time.Minute} {
		m := NewMain(Config{Role: "admin", InsecureAdmin: true, UsageFlushInterval: d})
		err := m.Run(context.Background())
		_ = m.Close()
		if err == nil || !strings.Contains(err.Error(), "TOLLGATE_USAGE_FLUSH_INTERVAL") {
			t.Errorf("%v: got %v, want an error naming TOLLGATE_USAGE_FLUSH_INTERVAL", d, err)
		}
	}
}

// TestGatewayTrafficLandsInTheLedger: with no usage source set, the admin
// node's flush worker takes what the gateways counted from the limiter
// Redis (one primary and Redis Cluster): each key's day count and quota
// state reach PostgreSQL within a few flush intervals of the last request.
func TestGatewayTrafficLandsInTheLedger(t *testing.T) {
	t.Parallel()
	for _, cluster := range []bool{false, true} {
		t.Run(map[bool]string{false: "primary", true: "cluster"}[cluster], func(t *testing.T) {
			t.Parallel()
			const interval = 200 * time.Millisecond
			s := mustStackWith(t, stackOptions{cluster: cluster, flushInterval: interval})
			if s.admin.UsageSource == nil {
				t.Fatal("the admin node runs no usage source")
			}
			api := s.mustCaseAPI(t)
			p := s.mustPlan(t, api.id, planSpec{Throttle: throttle(10000, 10000), Quota: quota(1000, types.QuotaPeriodTypeDay, 0)})
			want := map[string]int64{}
			keys := map[string]string{}
			for i := range 3 {
				id, key := s.mustKey(t, p)
				keys[id], want[id] = key, int64(2+3*i)
			}
			s.sync(t)
			for id, key := range keys {
				for i := range want[id] {
					// A 503 charges nothing (a cold key lookup past its
					// deadline, or a slot of the shared cluster that another
					// test's reshard left unmarked for a second): send again,
					// so that exactly want[id] requests are admitted.
					for tries := 0; ; tries++ {
						res := s.call(t, int(i%2), api.id, "/prod/items", key)
						if res.StatusCode == 200 {
							break
						}
						if res.StatusCode != 503 || tries == 50 {
							t.Fatalf("request %d of %s: %d %s (try %d)", i, id, res.StatusCode, res.Header.Get("x-amzn-ErrorType"), tries+1)
						}
						t.Logf("request %d of %s: 503 %s, sent again", i, id, res.Header.Get("x-amzn-ErrorType"))
						time.Sleep(100 * time.Millisecond)
					}
				}
			}
			last := time.Now()
			today := plans.UTCDate(time.Now())
			dbURL := s.admin.Config.DatabaseURL
			for id, n := range want {
				if _, ok := waittest.Poll(30*time.Second-time.Since(last), func() bool { return ledgerCount(t, dbURL, p, id, today) == n }); !ok {
					t.Fatalf("key %s: the ledger has %d 30 s after the last request, want %d", id, ledgerCount(t, dbURL, p, id, today), n)
				}
			}
			t.Logf("every count was in the ledger %v after the last request (flush interval %v)", time.Since(last).Round(time.Millisecond), interval)
			db, err := postgres.Open(context.Background(), dbURL, postgres.Options{})
			must(t, "open", err)
			defer db.Close()
			quotas, err := db.QuotaUsages(context.Background(), "", "", 100)
			must(t, "QuotaUsages", err)
			got := map[string]int64{}
			for _, q := range quotas {
				if q.PlanID == p && q.PeriodStart.Equal(today) {
					got[q.KeyID] = q.Count
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("quota states in the ledger: got %v, want %v", got, want)
			}
		})
	}
}
