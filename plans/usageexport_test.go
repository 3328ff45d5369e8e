package plans_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"tollgate/plans"
)

var exportRows = []plans.UsageDay{
	{PlanID: "p1", KeyID: "k1", Day: march1, Count: 12, Requests: 4, KeyName: "acme, inc.", CustomerID: "=HYPERLINK(\"x\")"},
	{PlanID: "p1", KeyID: "k1", Day: march1.AddDate(0, 0, 1), Count: 3, Requests: 3, KeyName: "acme, inc.", CustomerID: "c-1"},
	{PlanID: "p1", KeyID: "k2", Day: march1, Count: 0, Requests: 1, KeyName: "-dash \"quoted\"\nline"},
}

func export(t *testing.T, format string, batches ...[]plans.UsageDay) []byte {
	t.Helper()
	var buf bytes.Buffer
	e, err := plans.NewUsageExport(&buf, format, "p1", march1, march1.AddDate(0, 0, 30))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range batches {
		if err := e.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestUsageExportCSVReadsBackWithAHeaderAndNoFormulas(t *testing.T) {
	out := export(t, plans.UsageFormatCSV, exportRows[:1], exportRows[1:])
	if !bytes.HasSuffix(out, []byte("\r\n")) || !bytes.HasPrefix(out, []byte("date,usagePlanId,keyId,keyName,customerId,count,requests\r\n")) {
		t.Fatalf("got %q, want a CRLF CSV starting with the header", out)
	}
	recs, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{plans.UsageExportHeader,
		{"2026-03-01", "p1", "k1", "acme, inc.", "'=HYPERLINK(\"x\")", "12", "4"},
		{"2026-03-02", "p1", "k1", "acme, inc.", "c-1", "3", "3"},
		{"2026-03-01", "p1", "k2", "'-dash \"quoted\"\nline", "", "0", "1"},
	}
	if !reflect.DeepEqual(recs, want) {
		t.Fatalf("got records %q, want %q", recs, want)
	}
	if got := export(t, plans.UsageFormatCSV); string(got) != "date,usagePlanId,keyId,keyName,customerId,count,requests\r\n" {
		t.Fatalf("empty export: got %q, want the header alone", got)
	}
}

func TestUsageExportJSONIsOneDocument(t *testing.T) {
	type doc struct {
		UsagePlanID, StartDate, EndDate string
		Item                            []map[string]any
	}
	var got doc
	if err := json.Unmarshal(export(t, plans.UsageFormatJSON, exportRows[:2], nil, exportRows[2:]), &got); err != nil {
		t.Fatal(err)
	}
	if got.UsagePlanID != "p1" || got.StartDate != "2026-03-01" || got.EndDate != "2026-03-31" || len(got.Item) != 3 {
		t.Fatalf("got %+v, want plan p1 2026-03-01..2026-03-31 with 3 items", got)
	}
	if s := fmt.Sprint(got.Item[0]); s != `map[count:12 customerId:=HYPERLINK("x") date:2026-03-01 keyId:k1 keyName:acme, inc. requests:4 usagePlanId:p1]` {
		t.Fatalf("got item %s", s)
	}
	var empty doc
	if err := json.Unmarshal(export(t, plans.UsageFormatJSON), &empty); err != nil || empty.Item == nil || len(empty.Item) != 0 {
		t.Fatalf("empty export: got %+v (%v), want item []", empty, err)
	}
}

func TestUsageExportRefusesAnUnknownFormat(t *testing.T) {
	var pe *plans.Error
	if _, err := plans.NewUsageExport(&bytes.Buffer{}, "xlsx", "p1", march1, march1); !errors.As(err, &pe) || pe.Field != "format" {
		t.Fatalf("got %v, want an error naming format", err)
	}
}
