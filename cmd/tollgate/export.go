package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"tollgate/plans"
	"tollgate/plans/postgres"
)

// usageCmd groups the usage ledger's commands.
type usageCmd struct {
	Export usageExportCmd `cmd:"" help:"Write a usage plan's usage per key per UTC day from the PostgreSQL ledger, as CSV or JSON (the admin API's export)."`
}

// usageExportCmd is `tollgate usage export`: the admin API's
// GET /usageplans/{id}/usage/export, read straight from PostgreSQL. Unlike
// the API it also exports plans that were deleted (the ledger keeps their
// usage).
type usageExportCmd struct {
	Plan        string `required:"" help:"Usage plan id."`
	Start       string `required:"" help:"First UTC day, YYYY-MM-DD."`
	End         string `required:"" help:"Last UTC day, YYYY-MM-DD (the range spans at most 366 days)."`
	Key         string `help:"Only this API key id."`
	Format      string `enum:"csv,json" default:"csv" help:"csv (a header row, opens in a spreadsheet) or json."`
	Output      string `short:"o" type:"path" help:"File to write (written whole or not at all); - or none: standard output."`
	DatabaseURL string `help:"PostgreSQL URL." default:"postgres://postgres@127.0.0.1:5432/tollgate" env:"TOLLGATE_DATABASE_URL"`

	stdout io.Writer // os.Stdout when nil; tests set their own
}

// Run writes the export to Output, or to standard output when Output is
// empty or "-" (the usual spelling of standard output on a command line).
func (c *usageExportCmd) Run(ctx context.Context) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	db, err := postgres.Open(ctx, c.DatabaseURL, postgres.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	if err := c.checkPlan(ctx, db); err != nil {
		return err
	}
	if c.Output == "" || c.Output == "-" {
		out := c.stdout
		if out == nil {
			out = os.Stdout
		}
		w := bufio.NewWriter(out)
		if err := plans.ExportUsage(ctx, db, w, c.Format, q); err != nil {
			return err
		}
		return w.Flush()
	}
	return writeFileWhole(c.Output, func(w io.Writer) error {
		return plans.ExportUsage(ctx, db, w, c.Format, q)
	})
}

// checkPlan refuses a --plan that names no usage plan and has no usage in
// the ledger (a typo), which would otherwise export an empty file that
// looks like a plan nobody used. A deleted plan whose usage the ledger
// keeps is exported.
func (c *usageExportCmd) checkPlan(ctx context.Context, db *postgres.DB) error {
	_, err := db.GetUsagePlan(ctx, c.Plan)
	if plans.ErrorKind(err) != plans.KindNotFound {
		return err
	}
	has, err := db.HasPlanUsage(ctx, c.Plan)
	if err != nil || has {
		return err
	}
	return fmt.Errorf("--plan: no usage plan %q, and the ledger holds no usage of a plan by that id", c.Plan)
}

// query is the ledger query the flags name.
func (c *usageExportCmd) query() (plans.UsageQuery, error) {
	from, err := plans.ParseUsageDate("--start", c.Start)
	if err != nil {
		return plans.UsageQuery{}, err
	}
	to, err := plans.ParseUsageDate("--end", c.End)
	if err != nil {
		return plans.UsageQuery{}, err
	}
	if err := plans.ValidateUsageRange(from, to, plans.MaxUsageExportDays); err != nil {
		return plans.UsageQuery{}, fmt.Errorf("--start..--end: %s", plans.ErrorMessage(err))
	}
	q := plans.UsageQuery{PlanID: c.Plan, From: from, To: to}
	if c.Key != "" {
		q.KeyIDs = []string{c.Key}
	}
	return q, nil
}

// writeFileWhole writes path through a temporary file in the same
// directory, renamed over path only when write succeeded, so a failed
// export never leaves a short file that looks whole.
func writeFileWhole(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after a successful rename there is nothing left to remove
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
