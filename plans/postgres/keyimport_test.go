package postgres_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"tollgate/plans"
)

// importRow is a KeyImport of the key value v on line l.
func importRow(l int, name, v string, planIDs ...string) plans.KeyImport {
	return plans.KeyImport{Line: l, Name: name, Enabled: true, Hash: plans.HashKey(v, nil), PlanIDs: planIDs}
}

// keyValue is the l-th distinct key value of a test file.
func keyValue(l int) string { return fmt.Sprintf("importedKey%020d", l) }

func TestImportApiKeysTakesFiftyThousandKeysInOneCall(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	plan := newPlan(t, db, "gold", plans.ApiStage{ApiID: f.api.ID, Stage: "prod"})
	const n = 50000 // admin.MaxImportedKeys
	rows := make([]plans.KeyImport, n)
	for i := range rows {
		rows[i] = importRow(i+2, fmt.Sprintf("partner-%d", i), keyValue(i), plan.ID)
	}
	start := time.Now()
	res, err := db.ImportApiKeys(ctx, rows, true)
	must(t, err)
	t.Logf("ImportApiKeys of %d keys into one plan: %v", n, time.Since(start))
	if len(res.IDs) != n || len(res.Warnings) != 0 {
		t.Fatalf("got %d ids and warnings %v, want %d ids and none", len(res.IDs), res.Warnings, n)
	}
	if c := lastChange(t, db); len(c.KeyHashes) != n {
		t.Errorf("the change names %d key hashes, want %d", len(c.KeyHashes), n)
	}
	recs, err := db.KeyRecords(ctx, []string{rows[0].Hash, rows[n-1].Hash})
	must(t, err)
	for _, h := range []string{rows[0].Hash, rows[n-1].Hash} {
		if r := recs[h]; r == nil || !slices.Equal(r.PlanIDs, []string{plan.ID}) {
			t.Errorf("key %s: got record %+v, want one in plan %s", h, r, plan.ID)
		}
	}
}

func TestImportApiKeysRefusesRowsAloneAndKeepsTheRest(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	f.addStage(t, db, "beta")
	prod := plans.ApiStage{ApiID: f.api.ID, Stage: "prod"}
	gold, silver := newPlan(t, db, "gold", prod), newPlan(t, db, "silver", prod)
	beta := newPlan(t, db, "beta", plans.ApiStage{ApiID: f.api.ID, Stage: "beta"})
	existing, existingHash := newKey(t, db, "existing")
	_, err := db.CreateUsagePlanKey(ctx, gold.ID, existing.ID)
	must(t, err)
	rows := []plans.KeyImport{
		importRow(2, "a", keyValue(2), gold.ID, beta.ID),
		importRow(3, "b", keyValue(3), "nope00"),
		importRow(4, "c", keyValue(4), gold.ID, silver.ID),
		{Line: 5, Name: "existing2", Hash: existingHash, PlanIDs: []string{silver.ID}},
		importRow(6, "a2", keyValue(2), silver.ID),
		importRow(7, "a3", keyValue(2), beta.ID),
		importRow(8, unindexableName(), keyValue(8)),
		{Line: 9, Name: "existing3", Hash: existingHash, PlanIDs: []string{beta.ID}},
	}
	before := version(t, db)
	_, err = db.ImportApiKeys(ctx, rows, true)
	wantErr(t, err, plans.KindInvalid, "body")
	if msg := plans.ErrorMessage(err); !strings.HasPrefix(msg, "line 3: Invalid Usage Plan ID specified: nope00") {
		t.Fatalf("failonwarnings: got %q, want the first refused row, line 3", msg)
	}
	if v := version(t, db); v != before {
		t.Fatalf("failonwarnings: config version %d, want %d (nothing stored)", v, before)
	}
	res, err := db.ImportApiKeys(ctx, rows, false)
	must(t, err)
	wantWarnings := []string{
		"line 3: Invalid Usage Plan ID specified: nope00",
		"line 4: An API key can be in only one usage plan per API stage: stage " + f.api.ID + ":prod, usage plans " + gold.ID + " and " + silver.ID,
		"line 5: An API key can be in only one usage plan per API stage: stage " + f.api.ID + ":prod, usage plans " + gold.ID + " and " + silver.ID,
		"line 6: An API key can be in only one usage plan per API stage: stage " + f.api.ID + ":prod, usage plans " + gold.ID + " and " + silver.ID,
		"line 8: name is too long to index: use fewer or shorter (ASCII) characters",
	}
	if !slices.Equal(res.Warnings, wantWarnings) {
		t.Fatalf("got warnings\n%s\nwant\n%s", strings.Join(res.Warnings, "\n"), strings.Join(wantWarnings, "\n"))
	}
	if len(res.IDs) != 2 || res.IDs[1] != existing.ID {
		t.Fatalf("got ids %v, want the key of lines 2 and 7 once, then %s (lines 9)", res.IDs, existing.ID)
	}
	recs, err := db.KeyRecords(ctx, []string{rows[0].Hash, existingHash})
	must(t, err)
	if r := recs[rows[0].Hash]; r == nil || !slices.Equal(r.PlanIDs, sorted(gold.ID, beta.ID)) {
		t.Errorf("line 2's key: got %+v, want plans gold and beta", r)
	}
	if r := recs[existingHash]; r == nil || !slices.Equal(r.PlanIDs, sorted(gold.ID, beta.ID)) {
		t.Errorf("existing key: got %+v, want plans gold (kept) and beta (line 9)", r)
	}
	if k, err := db.GetApiKey(ctx, res.IDs[0]); err != nil || k.Name != "a3" {
		t.Errorf("line 2's key: got %+v (%v), want the name of its last imported row, a3", k, err)
	}
	if k, err := db.GetApiKey(ctx, existing.ID); err != nil || k.Name != "existing3" || k.Enabled {
		t.Errorf("existing key: got %+v (%v), want existing3, disabled (line 9)", k, err)
	}
}

// unindexableName is a valid name (700 characters) whose 2,800 bytes of
// UTF-8 do not compress below a btree index row's 2,704 bytes.
func unindexableName() string {
	var b strings.Builder
	for i := range 700 {
		b.WriteRune(rune(0x10000 + i*37))
	}
	return b.String()
}

func sorted(s ...string) []string {
	slices.Sort(s)
	return s
}
