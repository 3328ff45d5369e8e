package push

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"tollgate/plans"
)

// asStored converts XADD values to what XREAD hands back: a map of strings.
func asStored(values []any) map[string]any {
	m := map[string]any{}
	for i := 0; i < len(values); i += 2 {
		m[values[i].(string)] = values[i+1]
	}
	return m
}

func TestEntryRoundTrip(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		values []any
		want   entry
	}{
		{"full change", changeValues(plans.Change{Version: 7, Snapshot: true, KeyHashes: []string{"a", "b"},
			Plans: []string{"p1"}, Stages: []string{"api:prod", "api:dev"}}),
			entry{change: plans.Change{Version: 7, Snapshot: true, KeyHashes: []string{"a", "b"},
				Plans: []string{"p1"}, Stages: []string{"api:prod", "api:dev"}}}},
		{"key-only change", changeValues(plans.Change{Version: 8, KeyHashes: []string{"c"}}),
			entry{change: plans.Change{Version: 8, KeyHashes: []string{"c"}}}},
		{"usage", usageValues("plan01", "k123456789"), entry{usage: "plan01:k123456789"}},
		{"reload", reloadValues(12), entry{change: plans.Change{Version: 12, Snapshot: true}, reload: true}},
	}
	for _, c := range cases {
		got, err := decodeEntry(asStored(c.values))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestDecodeEntryRefusesMalformed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		values map[string]any
	}{
		{"no version", map[string]any{"snapshot": "1"}},
		{"version not a number", map[string]any{"version": "x"}},
		{"negative version", map[string]any{"version": "-3"}},
		{"usage without key", map[string]any{"usage": "plan01"}},
	}
	for _, c := range cases {
		if got, err := decodeEntry(c.values); err == nil {
			t.Errorf("%s: got %+v and no error, want an error", c.name, got)
		}
	}
}

func TestRecordEncoding(t *testing.T) {
	t.Parallel()
	rec := &plans.KeyRecord{KeyID: "k123456789", Enabled: true, PlanIDs: []string{"p1", "p2"}, InvalidateCache: true, Version: 42}
	cases := []struct {
		name     string
		rec      *plans.KeyRecord
		version  int64
		wantJSON string
		want     *plans.KeyRecord
	}{
		{"record", rec, 0, `{"version":42,"keyId":"k123456789","enabled":true,"planIds":["p1","p2"],"invalidateCache":true}`, rec},
		{"disabled without plans", &plans.KeyRecord{KeyID: "k1", Version: 3}, 0, `{"version":3,"keyId":"k1"}`,
			&plans.KeyRecord{KeyID: "k1", PlanIDs: []string{}, Version: 3}},
		{"expiring", &plans.KeyRecord{KeyID: "k2", Enabled: true, PlanIDs: []string{"p1"}, Version: 4, ExpiresAt: time.UnixMilli(1801234567890).UTC()}, 0,
			`{"version":4,"keyId":"k2","enabled":true,"planIds":["p1"],"expiresAt":1801234567890}`,
			&plans.KeyRecord{KeyID: "k2", Enabled: true, PlanIDs: []string{"p1"}, Version: 4, ExpiresAt: time.UnixMilli(1801234567890).UTC()}},
		{"an own quota calendar", &plans.KeyRecord{KeyID: "k5", Enabled: true, PlanIDs: []string{"p1"}, Version: 7,
			Calendar: plans.KeyCalendar{Anchor: "15", TimeZone: "Asia/Tokyo"}}, 0,
			`{"version":7,"keyId":"k5","enabled":true,"planIds":["p1"],"quotaAnchor":"15","quotaTimeZone":"Asia/Tokyo"}`,
			&plans.KeyRecord{KeyID: "k5", Enabled: true, PlanIDs: []string{"p1"}, Version: 7,
				Calendar: plans.KeyCalendar{Anchor: "15", TimeZone: "Asia/Tokyo"}}},
		{"a previous value", &plans.KeyRecord{KeyID: "k4", Enabled: true, PlanIDs: []string{"p1"}, Version: 6, ValueExpiresAt: time.UnixMilli(1801234567000).UTC()}, 0,
			`{"version":6,"keyId":"k4","enabled":true,"planIds":["p1"],"valueExpiresAt":1801234567000}`,
			&plans.KeyRecord{KeyID: "k4", Enabled: true, PlanIDs: []string{"p1"}, Version: 6, ValueExpiresAt: time.UnixMilli(1801234567000).UTC()}},
		{"an expiry within a millisecond rounds down", &plans.KeyRecord{KeyID: "k3", Version: 5, ExpiresAt: time.UnixMilli(1801234567890).Add(999 * time.Microsecond)}, 0,
			`{"version":5,"keyId":"k3","expiresAt":1801234567890}`,
			&plans.KeyRecord{KeyID: "k3", PlanIDs: []string{}, Version: 5, ExpiresAt: time.UnixMilli(1801234567890).UTC()}},
		{"tombstone", nil, 9, `{"version":9,"deleted":true}`, nil},
	}
	for _, c := range cases {
		b, v := encodeRecord(c.rec, c.version)
		if string(b) != c.wantJSON {
			t.Errorf("%s: encoded got %s, want %s", c.name, b, c.wantJSON)
		}
		if lv, ok := leadingVersion(b); !ok || lv != v {
			t.Errorf("%s: leading version got (%d, %v), want (%d, true)", c.name, lv, ok, v)
		}
		got, err := decodeRecord(b)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: decoded got (%+v, %v), want %+v", c.name, got, err, c.want)
		}
	}
}

func TestSnapshotEncodingStartsWithVersion(t *testing.T) {
	t.Parallel()
	s := validSnapshot()
	s.Version = 1234567890123
	b, err := encodeSnapshot(s)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := leadingVersion(b); !ok || v != s.Version {
		t.Errorf("leading version: got (%d, %v), want (%d, true) in %.40s", v, ok, s.Version, b)
	}
}

func TestLeadingVersion(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in     string
		want   int64
		wantOK bool
	}{
		{`{"version":5,"x":1}`, 5, true},
		{`{"version":5}`, 5, true},
		{`{"version":0,"apis":{}}`, 0, true},
		{`{"x":1,"version":5}`, 0, false},
		{`{"version":"5"}`, 0, false},
		{`{"version":5`, 0, false},
		{``, 0, false},
	}
	for _, c := range cases {
		got, ok := leadingVersion([]byte(c.in))
		if got != c.want || ok != c.wantOK {
			t.Errorf("leadingVersion(%s): got (%d, %v), want (%d, %v)", c.in, got, ok, c.want, c.wantOK)
		}
	}
}

// FuzzDecodeEntry feeds arbitrary field values: decoding never panics, and
// a decoded change re-encodes to the same entry.
func FuzzDecodeEntry(f *testing.F) {
	f.Add("7", "1", "a,b", "p1", "api:prod", "")
	f.Add("", "", "", "", "", "")
	f.Add("3", "1", "", "", "", "1")
	f.Fuzz(func(t *testing.T, version, snapshot, keys, plansF, stages, reload string) {
		e, err := decodeEntry(map[string]any{fieldVersion: version, fieldSnapshot: snapshot, fieldKeys: keys,
			fieldPlans: plansF, fieldStages: stages, fieldReload: reload})
		if err != nil || e.reload {
			return
		}
		if strings.Contains(keys+plansF+stages, ",,") || strings.HasSuffix(keys, ",") || strings.HasPrefix(keys, ",") {
			return // empty list items do not survive a round trip
		}
		again, err := decodeEntry(asStored(changeValues(e.change)))
		if err != nil || !reflect.DeepEqual(again, e) {
			t.Errorf("round trip: got (%+v, %v), want %+v", again, err, e)
		}
	})
}

func TestStreamIDLess(t *testing.T) {
	t.Parallel()
	cases := []struct {
		a, b string
		want bool
	}{
		{"1-0", "2-0", true},
		{"2-0", "1-0", false},
		{"5-1", "5-2", true},
		{"5-2", "5-2", false},
		{"9-0", "10-0", true}, // numeric, not lexical
		{"1700000000000-0", "999-5", false},
		{"0-0", "1-0", true},
	}
	for _, c := range cases {
		if got := streamIDLess(c.a, c.b); got != c.want {
			t.Errorf("streamIDLess(%s, %s): got %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
