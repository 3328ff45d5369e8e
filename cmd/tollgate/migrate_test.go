package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"tollgate/migrations"
	"tollgate/plans/postgres/postgrestest"
)

func TestMigrateDownNeedsAStepCountOrAll(t *testing.T) {
	u := postgrestest.MustURL(t)
	for _, c := range []migrateCmd{
		{Direction: "down", DatabaseURL: u, Yes: true},
		{Direction: "down", DatabaseURL: u, Yes: true, Steps: 1, All: true},
		{Direction: "down", DatabaseURL: u, Yes: true, Steps: -1},
	} {
		c.out = &bytes.Buffer{}
		if err := c.Run(); err == nil {
			t.Errorf("migrate down steps %d all %v: no error", c.Steps, c.All)
		}
	}
	wantMigrated(t, u, migrations.Latest())
}

// migrate down says what each step drops and reverts nothing until it is
// told yes: typed, or --yes where standard input is not a terminal.
func TestMigrateDownSaysWhatItDropsAndAsksFirst(t *testing.T) {
	u := postgrestest.MustURL(t)
	all := migrations.All()
	newest := all[len(all)-1]

	var out bytes.Buffer
	c := migrateCmd{Direction: "down", Steps: 1, DatabaseURL: u, in: strings.NewReader("no\n"), out: &out}
	if err := c.Run(); err != errMigrateAborted {
		t.Fatalf("answered no: %v, want errMigrateAborted", err)
	}
	for _, d := range newest.Drops {
		if !strings.Contains(out.String(), d) {
			t.Errorf("the confirmation does not name %s:\n%s", d, out.String())
		}
	}
	wantMigrated(t, u, newest.Version)

	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	c = migrateCmd{Direction: "down", Steps: 1, DatabaseURL: u, in: devNull, out: &bytes.Buffer{}}
	if err := c.Run(); err == nil || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("without a terminal or --yes: %v, want a refusal naming --yes", err)
	}
	wantMigrated(t, u, newest.Version)

	c = migrateCmd{Direction: "down", Steps: 1, DatabaseURL: u, in: strings.NewReader("yes\n"), out: &bytes.Buffer{}}
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	wantMigrated(t, u, all[len(all)-2].Version)

	out.Reset()
	c = migrateCmd{Direction: "down", All: true, Yes: true, DatabaseURL: u, in: devNull, out: &out}
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "usage_days") || !strings.Contains(out.String(), "audit_log") {
		t.Errorf("--all does not name the usage ledger and the audit log:\n%s", out.String())
	}
	wantMigrated(t, u, 0)
}

func wantMigrated(t *testing.T, u string, want uint) {
	t.Helper()
	v, dirty, err := migrations.Version(u)
	if err != nil || dirty || v != want {
		t.Fatalf("version %d dirty %v err %v, want %d", v, dirty, err, want)
	}
}
