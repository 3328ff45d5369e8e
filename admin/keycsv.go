package admin

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"tollgate/plans"
)

// KeyImporter is the store's bulk key import (plans/postgres.DB): one
// transaction, rows refused by the store become warnings, or fail it all
// with failOnWarnings.
type KeyImporter interface {
	ImportApiKeys(ctx context.Context, keys []plans.KeyImport, failOnWarnings bool) (*plans.KeyImportResult, error)
}

// MaxImportedKeys bounds the rows of one ImportApiKeys file.
const MaxImportedKeys = 50000

// keyColumns are the columns of AWS's API key file format that tollgate
// reads (header names are case-insensitive; other columns are ignored).
var keyColumns = []string{"key", "name", "description", "enabled", "usageplanids"}

// importApiKeys: POST /apikeys?mode=import&format=csv[&failonwarnings=true]
// → 201 {"ids": [...], "warnings": [...]}. The body is AWS's API key file
// (see parseKeyCSV); each value is stored hashed, as CreateApiKey's. A
// row that cannot be imported (bad value, no name, unknown plan) is a
// warning naming its line and is skipped; with failonwarnings=true any
// warning fails the import and nothing is stored.
func (s *Server) importApiKeys(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	if q.Get("mode") != "import" || !strings.EqualFold(q.Get("format"), "csv") {
		return plans.Invalid("format", "ImportApiKeys needs mode=import and format=csv")
	}
	failOnWarnings, err := boolQuery(r, "failonwarnings")
	if err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	keys, warnings, err := parseKeyCSV(body, s.pepper, s.keyFmt)
	if err != nil {
		return err
	}
	if failOnWarnings && len(warnings) > 0 {
		return plans.Invalid("body", "%s (failonwarnings: nothing was imported)", warnings[0])
	}
	res, err := s.store.ImportApiKeys(r.Context(), keys, failOnWarnings)
	if err != nil {
		return err
	}
	res.Warnings = append(warnings, res.Warnings...)
	s.published(r.Context(), "ImportApiKeys")
	writeJSON(w, http.StatusCreated, res)
	return nil
}

// parseKeyCSV reads AWS's API key file format: a header naming at least
// the Key and Name columns (any case, any order; Description, Enabled and
// UsagePlanIds optional, others ignored), then one key per row. Enabled is
// true unless it says false; UsagePlanIds is a comma-separated list
// (quoted with " or ', as AWS allows). Rows with a bad value (20..128
// letters and digits, and the checksum of f when of its shape), no name or a bad Enabled are warnings naming their
// line; the file itself being malformed (no header, no Key or Name column,
// broken quoting, more than MaxImportedKeys rows) is an error. Source: AWS
// API Gateway developer guide, "API Gateway API key file format".
func parseKeyCSV(body []byte, pepper []byte, f plans.KeyFormat) ([]plans.KeyImport, []string, error) {
	cr := csv.NewReader(bytes.NewReader(body))
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	header, err := cr.Read()
	if err != nil {
		return nil, nil, csvError(err)
	}
	col, err := keyHeader(header)
	if err != nil {
		return nil, nil, err
	}
	var keys []plans.KeyImport
	var warnings []string
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return keys, warnings, nil
		}
		if err != nil {
			return nil, nil, csvError(err)
		}
		line, _ := cr.FieldPos(0)
		if len(keys)+len(warnings) >= MaxImportedKeys {
			return nil, nil, plans.Invalid("body", "at most %d keys can be imported at once", MaxImportedKeys)
		}
		k, err := keyRow(mergeSingleQuoted(rec, col["usageplanids"]), col, pepper, f)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("line %d: %s", line, plans.ErrorMessage(err)))
			continue
		}
		k.Line = line
		keys = append(keys, k)
	}
}

// keyHeader maps the columns tollgate reads to their index (-1 when
// absent); Key and Name are required.
func keyHeader(header []string) (map[string]int, error) {
	col := map[string]int{}
	for _, c := range keyColumns {
		col[c] = -1
	}
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))
		if _, ok := col[h]; ok && col[h] < 0 {
			col[h] = i
		}
	}
	if col["key"] < 0 || col["name"] < 0 {
		return nil, plans.Invalid("body", "the header must name the Key and Name columns (case-insensitive), got %q", strings.Join(header, ","))
	}
	return col, nil
}

// keyRow turns one record into a KeyImport (Line unset).
func keyRow(rec []string, col map[string]int, pepper []byte, f plans.KeyFormat) (plans.KeyImport, error) {
	field := func(name string) string {
		if i := col[name]; i >= 0 && i < len(rec) {
			return strings.TrimSpace(rec[i])
		}
		return ""
	}
	value := field("key")
	if !plans.ValidKeyValue(value) {
		return plans.KeyImport{}, plans.Invalid("key", "Key must be 20 to 128 letters and digits")
	}
	if err := checkChecksum(f, "Key", value); err != nil {
		return plans.KeyImport{}, err
	}
	k := plans.KeyImport{Name: field("name"), Description: field("description"), Enabled: true, Hash: plans.HashKey(value, pepper)}
	if err := plans.ValidateName("name", k.Name); err != nil {
		return k, err
	}
	if err := plans.ValidateDescription("description", k.Description); err != nil {
		return k, err
	}
	switch e := strings.ToLower(field("enabled")); e {
	case "", "true":
	case "false":
		k.Enabled = false
	default:
		return k, plans.Invalid("enabled", "Enabled %q must be true or false", e)
	}
	for id := range strings.SplitSeq(strings.Trim(field("usageplanids"), `'"`), ",") {
		if id = strings.TrimSpace(id); id != "" {
			k.PlanIDs = append(k.PlanIDs, id)
		}
	}
	return k, nil
}

// mergeSingleQuoted joins the fields of a '-quoted UsagePlanIds value
// (column at) that encoding/csv split at its commas ('c7y23b,glvrsr'
// arrives as "'c7y23b" and "glvrsr'").
func mergeSingleQuoted(rec []string, at int) []string {
	if at < 0 || at >= len(rec) || !strings.HasPrefix(rec[at], "'") {
		return rec
	}
	end := at
	for f := rec[at]; (len(f) < 2 || !strings.HasSuffix(f, "'")) && end+1 < len(rec); f = rec[end] {
		end++
	}
	merged := strings.Join(rec[at:end+1], ",")
	return append(append(slices.Clip(rec[:at]), merged), rec[end+1:]...)
}

// csvError turns an encoding/csv error into a 400 naming the line.
func csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return plans.Invalid("body", "CSV line %d, column %d: %v", pe.Line, pe.Column, pe.Err)
	}
	if errors.Is(err, io.EOF) {
		return plans.Invalid("body", "the CSV file is empty: it needs a header naming the Key and Name columns")
	}
	return plans.Invalid("body", "reading the CSV file: %v", err)
}
