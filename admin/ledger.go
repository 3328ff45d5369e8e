package admin

import (
	"context"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"tollgate/plans"
)

// UsageLedger reads the usage ledger in PostgreSQL (implemented by
// plans/postgres.DB; docs/usage.md).
type UsageLedger interface {
	// UsageDays returns the ledger rows q selects in (day, plan, key)
	// order, at most q.Limit (plans.MaxUsagePage when 0).
	UsageDays(ctx context.Context, q plans.UsageQuery) ([]plans.UsageDay, error)
	// UsageRecords returns up to limit rows with a version above after,
	// in version order.
	UsageRecords(ctx context.Context, after int64, limit int) ([]plans.UsageDay, error)
}

// liveUsageDays is how many UTC days, today included, the limiter keeps
// daily usage in Redis: older days come from the ledger alone.
const liveUsageDays = 100

func (s *Server) ledgerRoutes(r chi.Router) {
	if s.ledger == nil {
		return // the operations stay unsupported (400)
	}
	r.Get("/usageplans/{usagePlanId}/usage/export", s.handle(s.exportUsage))
	r.Get("/usage/records", s.handle(s.usageRecords))
}

// usageCounts returns, per key of keyIDs, the cost units and the requests
// of each UTC day from from to to ("YYYY-MM-DD" → count; days without
// requests absent): the greater of the ledger's and the limiter's live
// count (its
// last days up to today, the limiter's date), so
// usage not yet flushed is included and days older than the limiter keeps
// come from the ledger. Without a ledger it is the live count alone.
// Errors: KindUnavailable when the ledger or the limiter does not answer.
func (s *Server) usageCounts(ctx context.Context, planID string, keyIDs []string, from, to, today time.Time) (units, requests map[string]map[string]int64, err error) {
	units = make(map[string]map[string]int64, len(keyIDs))
	requests = make(map[string]map[string]int64, len(keyIDs))
	for _, k := range keyIDs {
		units[k], requests[k] = map[string]int64{}, map[string]int64{}
	}
	if s.ledger != nil && len(keyIDs) > 0 {
		err := plans.EachUsageDay(ctx, s.ledger, plans.UsageQuery{PlanID: planID, KeyIDs: keyIDs, From: from, To: to}, func(rows []plans.UsageDay) error {
			for _, r := range rows {
				d := r.Day.Format(plans.UsageDateLayout)
				units[r.KeyID][d], requests[r.KeyID][d] = r.Count, r.Requests
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	liveFrom, liveTo := later(from, today.AddDate(0, 0, 1-liveUsageDays)), earlier(to, today)
	if s.usage == nil || liveTo.Before(liveFrom) {
		return units, requests, nil
	}
	for _, k := range keyIDs {
		live, err := s.usage.Usage(ctx, k, planID, liveFrom, liveTo)
		if err != nil {
			return nil, nil, plans.Unavailable(err, "usage of key %s is unavailable", k)
		}
		for d, n := range live {
			units[k][d] = max(units[k][d], n.Count)
			requests[k][d] = max(requests[k][d], n.Requests)
		}
	}
	return units, requests, nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// exportUsage: GET /usageplans/{id}/usage/export?startDate&endDate
// [&format=csv|json][&keyId] → 200, the plan's usage per key per UTC day
// from the ledger, as CSV or JSON (plans.UsageExport; format defaults to
// csv when Accept names text/csv, else json), at most
// plans.MaxUsageExportDays days. The body streams; a failure after the
// first page cuts the response off (the client sees an incomplete body,
// never a short file that looks whole).
func (s *Server) exportUsage(w http.ResponseWriter, r *http.Request) error {
	from, to, err := usageRange(r, plans.MaxUsageExportDays)
	if err != nil {
		return err
	}
	format := exportFormat(r)
	planID := param(r, "usagePlanId")
	if _, err := s.store.GetUsagePlan(r.Context(), planID); err != nil {
		return err
	}
	q := plans.UsageQuery{PlanID: planID, From: from, To: to}
	if k := r.URL.Query().Get("keyId"); k != "" {
		q.KeyIDs = []string{k}
	}
	ew := &exportWriter{w: w, format: format, planID: planID, from: from, to: to}
	err = plans.ExportUsage(r.Context(), s.ledger, ew, format, q)
	if err != nil && ew.started {
		s.log.Warn("admin: usage export cut off", "plan", planID, "err", err)
		panic(http.ErrAbortHandler) // the status is sent: only an incomplete body can say it failed
	}
	return err
}

// exportWriter writes an export's headers (startExport) before its first
// byte, so that an export that fails before writing anything still gets
// an error status.
type exportWriter struct {
	w              http.ResponseWriter
	format, planID string
	from, to       time.Time
	started        bool
}

func (e *exportWriter) Write(b []byte) (int, error) {
	if !e.started {
		e.started = true
		startExport(e.w, e.format, e.planID, e.from, e.to)
	}
	return e.w.Write(b)
}

// exportFormat is the format query parameter, or csv when it is absent and
// Accept asks for text/csv, else json.
func exportFormat(r *http.Request) string {
	if f := r.URL.Query().Get("format"); f != "" {
		return f
	}
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if t, _, err := mime.ParseMediaType(part); err == nil && t == "text/csv" {
			return plans.UsageFormatCSV
		}
	}
	return plans.UsageFormatJSON
}

// startExport writes the headers of an export: its type and, so browsers
// save it as a file, a name like usage-<plan>-<start>-<end>.csv.
func startExport(w http.ResponseWriter, format, planID string, from, to time.Time) {
	w.Header().Set("Content-Type", plans.UsageContentType(format))
	w.Header().Set("Content-Disposition", `attachment; filename="usage-`+planID+"-"+
		from.Format(plans.UsageDateLayout)+"-"+to.Format(plans.UsageDateLayout)+"."+format+`"`)
	w.WriteHeader(http.StatusOK)
}

// Record feed page sizes (query "limit").
const (
	defaultRecordLimit = 1000
	maxRecordLimit     = 5000
)

// usageRecord is one record of the feed.
type usageRecord struct {
	KeyID       string `json:"keyId"`
	UsagePlanID string `json:"usagePlanId"`
	Date        string `json:"date"`
	Count       int64  `json:"count"`
	Requests    int64  `json:"requests"`
	Version     int64  `json:"version"`
	UpdatedDate int64  `json:"updatedDate"` // epoch seconds
	KeyName     string `json:"keyName"`
	CustomerID  string `json:"customerId"`
}

// usageRecordsOutput is the feed's page: the records, the cursor to pass
// as after next time (the last record's version, or after itself when
// there is none) and whether more records were waiting.
type usageRecordsOutput struct {
	Item      []usageRecord `json:"item"`
	NextAfter int64         `json:"nextAfter"`
	HasMore   bool          `json:"hasMore"`
}

// usageRecords: GET /usage/records?after=<version>&limit=<n> → 200, the
// ledger rows whose version is above after (default 0), in version order,
// at most limit (default 1000, 1..5000). A row that changes again comes
// back later with a higher version and count; consumers upsert by (keyId,
// usagePlanId, date) (docs/billing.md).
func (s *Server) usageRecords(w http.ResponseWriter, r *http.Request) error {
	after, err := queryInt(r, "after", 0, 0, 1<<62)
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", defaultRecordLimit, 1, maxRecordLimit)
	if err != nil {
		return err
	}
	rows, err := s.ledger.UsageRecords(r.Context(), after, int(limit)+1)
	if err != nil {
		return err
	}
	out := usageRecordsOutput{Item: []usageRecord{}, NextAfter: after, HasMore: len(rows) > int(limit)}
	rows = rows[:min(len(rows), int(limit))]
	for _, d := range rows {
		out.Item = append(out.Item, usageRecord{KeyID: d.KeyID, UsagePlanID: d.PlanID, Date: d.Day.Format(plans.UsageDateLayout),
			Count: d.Count, Requests: d.Requests, Version: d.Version, UpdatedDate: d.UpdatedAt.Unix(), KeyName: d.KeyName, CustomerID: d.CustomerID})
		out.NextAfter = d.Version
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// queryInt reads the integer query parameter name (def when absent),
// which must lie in lo..hi. Errors: KindInvalid naming it.
func queryInt(r *http.Request, name string, def, lo, hi int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, plans.Invalid(name, "%s %q must be an integer between %d and %d", name, v, lo, hi)
	}
	return n, nil
}
