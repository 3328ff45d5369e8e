package plans

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Usage export formats (the admin API's ?format= and `tollgate usage
// export --format`).
const (
	UsageFormatCSV  = "csv"
	UsageFormatJSON = "json"
)

// UsageExportHeader is the CSV export's header row. Rows follow in (day,
// key) order, one per key and UTC day with requests: count is their cost
// units (docs/cost.md), requests how many they were.
var UsageExportHeader = []string{"date", "usagePlanId", "keyId", "keyName", "customerId", "count", "requests"}

// UsageExport writes the billing export of one plan's usage (docs/usage.md)
// as CSV (RFC 4180, CRLF line ends, the header row UsageExportHeader) or
// JSON ({"usagePlanId", "startDate", "endDate", "item": [{"date",
// "usagePlanId", "keyId", "keyName", "customerId", "count", "requests"},
// ...]}), row
// by row, so an export of any size streams. Close ends it.
//
// In CSV, a keyName or customerId that a spreadsheet would read as a
// formula (it begins with =, +, -, @, tab or carriage return) is written
// with a leading apostrophe, as OWASP's "CSV Injection" advice says; the
// JSON export writes them unchanged.
type UsageExport struct {
	w      io.Writer
	csv    *csv.Writer // nil for JSON
	header string      // JSON: everything before the first item
	rows   int
	err    error
}

// usageItem is one JSON export row.
type usageItem struct {
	Date        string `json:"date"`
	UsagePlanID string `json:"usagePlanId"`
	KeyID       string `json:"keyId"`
	KeyName     string `json:"keyName"`
	CustomerID  string `json:"customerId"`
	Count       int64  `json:"count"`
	Requests    int64  `json:"requests"`
}

// NewUsageExport starts an export of plan planID from from to to (UTC
// dates) in format (UsageFormatCSV or UsageFormatJSON) on w. Nothing is
// written before the first Write or Close. Errors: KindInvalid naming
// "format".
func NewUsageExport(w io.Writer, format, planID string, from, to time.Time) (*UsageExport, error) {
	switch format {
	case UsageFormatCSV:
		c := csv.NewWriter(w)
		c.UseCRLF = true
		return &UsageExport{w: w, csv: c}, nil
	case UsageFormatJSON:
		head, _ := json.Marshal(struct {
			UsagePlanID string `json:"usagePlanId"`
			StartDate   string `json:"startDate"`
			EndDate     string `json:"endDate"`
		}{planID, from.Format(UsageDateLayout), to.Format(UsageDateLayout)})
		return &UsageExport{w: w, header: strings.TrimSuffix(string(head), "}") + `,"item":[`}, nil
	}
	return nil, Invalid("format", "format %q must be %s or %s", format, UsageFormatCSV, UsageFormatJSON)
}

// UsageContentType is the Content-Type of an export in format.
func UsageContentType(format string) string {
	if format == UsageFormatCSV {
		return "text/csv; charset=utf-8"
	}
	return "application/json"
}

// Write appends rows to the export. The first error is kept and returned
// by every later call.
func (e *UsageExport) Write(rows []UsageDay) error {
	for _, r := range rows {
		if e.err != nil {
			break
		}
		if e.csv != nil {
			e.writeCSV(r)
		} else {
			e.writeJSON(r)
		}
		e.rows++
	}
	return e.err
}

func (e *UsageExport) writeCSV(r UsageDay) {
	if e.rows == 0 {
		e.err = e.csv.Write(UsageExportHeader)
	}
	if e.err == nil {
		e.err = e.csv.Write([]string{r.Day.Format(UsageDateLayout), r.PlanID, r.KeyID,
			spreadsheetText(r.KeyName), spreadsheetText(r.CustomerID), strconv.FormatInt(r.Count, 10), strconv.FormatInt(r.Requests, 10)})
	}
}

func (e *UsageExport) writeJSON(r UsageDay) {
	b, err := json.Marshal(usageItem{r.Day.Format(UsageDateLayout), r.PlanID, r.KeyID, r.KeyName, r.CustomerID, r.Count, r.Requests})
	if err != nil {
		e.err = err
		return
	}
	sep := ","
	if e.rows == 0 {
		sep = e.header
	}
	_, e.err = fmt.Fprintf(e.w, "%s\n%s", sep, b)
}

// Close ends the export (an export without rows is the CSV header alone,
// or JSON with "item": []) and flushes it.
func (e *UsageExport) Close() error {
	if e.err != nil {
		return e.err
	}
	if e.csv != nil {
		if e.rows == 0 {
			e.err = e.csv.Write(UsageExportHeader)
		}
		e.csv.Flush()
		if e.err == nil {
			e.err = e.csv.Error()
		}
		return e.err
	}
	end := "\n]}\n"
	if e.rows == 0 {
		end = e.header + "]}\n"
	}
	_, e.err = io.WriteString(e.w, end)
	return e.err
}

// spreadsheetText keeps s from being read as a formula by a spreadsheet.
func spreadsheetText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// UsageDayReader reads ledger rows (plans/postgres.DB.UsageDays): those q
// selects, in (day, plan, key) order, at most q.Limit.
type UsageDayReader interface {
	UsageDays(ctx context.Context, q UsageQuery) ([]UsageDay, error)
}

// EachUsageDay calls fn with every page (up to MaxUsagePage rows) of the
// ledger rows q selects, in order, until fn or a read fails.
func EachUsageDay(ctx context.Context, r UsageDayReader, q UsageQuery, fn func([]UsageDay) error) error {
	q.Limit = MaxUsagePage
	for {
		rows, err := r.UsageDays(ctx, q)
		if err != nil {
			return err
		}
		if len(rows) > 0 {
			if err := fn(rows); err != nil {
				return err
			}
		}
		if len(rows) < q.Limit {
			return nil
		}
		last := rows[len(rows)-1]
		q.After = &UsageCursor{PlanID: last.PlanID, KeyID: last.KeyID, Day: last.Day}
	}
}

// ExportUsage writes the export (see UsageExport) of the ledger rows q
// selects to w in format; q.PlanID, q.From and q.To also head a JSON
// export. It reads page by page, so exports of any size stream. Errors:
// KindInvalid naming "format" before anything is written; a failed read or
// write (after part of the export may have been written).
func ExportUsage(ctx context.Context, r UsageDayReader, w io.Writer, format string, q UsageQuery) error {
	exp, err := NewUsageExport(w, format, q.PlanID, q.From, q.To)
	if err != nil {
		return err
	}
	if err := EachUsageDay(ctx, r, q, exp.Write); err != nil {
		return err
	}
	return exp.Close()
}
