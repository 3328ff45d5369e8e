package main

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"tollgate/internal/waittest"
	"tollgate/plans"
	"tollgate/plans/postgres/postgrestest"
)

// psql runs psql on dbURL with args and returns its unaligned output.
func psql(t *testing.T, dbURL string, args ...string) string {
	t.Helper()
	out, err := exec.Command("psql", append([]string{dbURL, "-XqtA", "-v", "ON_ERROR_STOP=1"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("psql %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestBillingExampleSyncsTheFeedAndInvoices runs docs/billing's worked
// example as a user would: the schema, sync.sh against a running admin
// node (twice, the second time after usage grew), then invoice.sql.
func TestBillingExampleSyncsTheFeedAndInvoices(t *testing.T) {
	t.Parallel()
	a := startLedgerAdmin(t)
	ctx := context.Background()
	plan, key := a.planWithKey(t)
	month := time.Date(time.Now().Year(), time.Now().Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, -1, 0) // last month: closed days
	must(t, "count", a.src.Count(ctx, key, plan, month, 1500))
	must(t, "count", a.src.Count(ctx, key, plan, month.AddDate(0, 0, 9), 700))
	must(t, "count", a.src.Count(ctx, "gone-key", plan, month.AddDate(0, 0, 3), 10))
	billing := postgrestest.MustURL(t) // a database of its own, as a billing system has
	psql(t, billing, "-f", "../../docs/billing/schema.sql")
	psql(t, billing, "-c", "INSERT INTO billing_prices VALUES ('"+plan+"', 5000, 2000, 30)")

	sync := func() {
		t.Helper()
		cmd := exec.Command("../../docs/billing/sync.sh")
		cmd.Env = append(os.Environ(), "TOLLGATE_ADMIN_URL=http://"+a.m.AdminAddr,
			"TOLLGATE_ADMIN_TOKEN="+testAdminToken, "BILLING_DATABASE_URL="+billing, "BILLING_PAGE_SIZE=2") // several pages
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("sync.sh: %v\n%s", err, out)
		}
	}
	waitLedger := func(keyID string, day time.Time, want int64) {
		t.Helper()
		if _, ok := waittest.Poll(30*time.Second, func() bool { return ledgerCount(t, a.dbURL, plan, keyID, day) == want }); !ok {
			t.Fatalf("the ledger did not reach %d for %s on %v within 30 s", want, keyID, day)
		}
	}
	waitLedger(key, month.AddDate(0, 0, 9), 700)
	waitLedger("gone-key", month.AddDate(0, 0, 3), 10)
	sync()
	must(t, "count", a.src.Count(ctx, key, plan, month.AddDate(0, 0, 9), 301)) // a late flush raises a day
	waitLedger(key, month.AddDate(0, 0, 9), 1001)
	sync()

	rows := psql(t, billing, "-c", `SELECT key_id, customer_id, day, count FROM billing_usage ORDER BY key_id COLLATE "C", day`)
	lines := []string{
		"gone-key||" + month.AddDate(0, 0, 3).Format(plans.UsageDateLayout) + "|10",
		key + "|cust-1|" + month.Format(plans.UsageDateLayout) + "|1500",
		key + "|cust-1|" + month.AddDate(0, 0, 9).Format(plans.UsageDateLayout) + "|1001",
	}
	slices.Sort(lines) // byte order, as COLLATE "C"
	want := strings.Join(lines, "\n")
	if rows != want {
		t.Fatalf("billing_usage after two syncs:\n%s\nwant\n%s", rows, want)
	}
	// 2501 requests for cust-1: 2000 included, 501 beyond: one started 1000.
	invoice := psql(t, billing, "-v", "month="+month.Format(plans.UsageDateLayout), "-f", "../../docs/billing/invoice.sql")
	if want := "|" + plan + "|10|5000\ncust-1|" + plan + "|2501|5030"; invoice != want {
		t.Fatalf("invoice:\n%s\nwant\n%s", invoice, want)
	}
}
