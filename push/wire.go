package push

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"tollgate/plans"
)

// TombstoneTTL is how long the tombstone of a deleted API key stays in
// Redis. It only has to outlive any publisher still holding an older
// record of that key; after it expires the key is simply unknown.
const TombstoneTTL = 24 * time.Hour

// Stream entry field names (see the package documentation).
const (
	fieldVersion  = "version"
	fieldSnapshot = "snapshot"
	fieldKeys     = "keys"
	fieldPlans    = "plans"
	fieldStages   = "stages"
	fieldUsage    = "usage"
	fieldReload   = "reload"
)

// entry is one decoded stream entry: a config change, a usage update of one
// key in one plan ("planId:keyId" in usage) or a reload order.
type entry struct {
	change plans.Change
	usage  string
	reload bool
}

// isChange reports whether e announces a config version.
func (e entry) isChange() bool { return e.usage == "" && e.change.Version > 0 }

// changeValues returns the XADD field/value list of a change entry.
func changeValues(c plans.Change) []any {
	return []any{
		fieldVersion, strconv.FormatInt(c.Version, 10),
		fieldSnapshot, boolField(c.Snapshot),
		fieldKeys, strings.Join(c.KeyHashes, ","),
		fieldPlans, strings.Join(c.Plans, ","),
		fieldStages, strings.Join(c.Stages, ","),
	}
}

// reloadValues returns the XADD field/value list of a reload entry for
// config version v.
func reloadValues(v int64) []any {
	return []any{fieldVersion, strconv.FormatInt(v, 10), fieldSnapshot, "1", fieldReload, "1"}
}

// usageValues returns the XADD field/value list of a usage update entry.
func usageValues(planID, keyID string) []any {
	return []any{fieldUsage, planID + ":" + keyID}
}

func boolField(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// decodeEntry parses the fields of one stream entry. Unknown fields are
// ignored, so newer publishers may add some.
func decodeEntry(values map[string]any) (entry, error) {
	str := func(name string) string { s, _ := values[name].(string); return s }
	var e entry
	if u := str(fieldUsage); u != "" {
		if !isPair(u) {
			return e, fmt.Errorf("push: usage entry %q is not planId:keyId", u)
		}
		e.usage = u
		return e, nil
	}
	v, err := strconv.ParseInt(str(fieldVersion), 10, 64)
	if err != nil || v < 0 {
		return e, fmt.Errorf("push: stream entry version %q is not a version", str(fieldVersion))
	}
	e.change = plans.Change{
		Version:   v,
		Snapshot:  str(fieldSnapshot) == "1",
		KeyHashes: splitList(str(fieldKeys)),
		Plans:     splitList(str(fieldPlans)),
		Stages:    splitList(str(fieldStages)),
	}
	e.reload = str(fieldReload) == "1"
	return e, nil
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// isPair reports whether s is "a:b" with a and b not empty.
func isPair(s string) bool {
	i := strings.IndexByte(s, ':')
	return i > 0 && i < len(s)-1
}

// splitPair splits "a:b" at its first colon (a usage update's
// "planId:keyId").
func splitPair(s string) (a, b string) {
	i := strings.IndexByte(s, ':')
	return s[:i], s[i+1:]
}

// wireRecord is a key record as stored in Redis: plans.KeyRecord with the
// version first (cas.lua reads it from the text's start) and the tombstone
// flag.
type wireRecord struct {
	Version         int64    `json:"version"`
	Deleted         bool     `json:"deleted,omitempty"`
	KeyID           string   `json:"keyId,omitempty"`
	Enabled         bool     `json:"enabled,omitempty"`
	PlanIDs         []string `json:"planIds,omitempty"`
	InvalidateCache bool     `json:"invalidateCache,omitempty"`
	CustomerID      string   `json:"customerId,omitempty"`
	ExpiresAt       int64    `json:"expiresAt,omitempty"`      // Unix milliseconds; 0: never
	ValueExpiresAt  int64    `json:"valueExpiresAt,omitempty"` // a previous value's end, Unix ms
	QuotaAnchor     string   `json:"quotaAnchor,omitempty"`    // the key's own quota calendar
	QuotaTimeZone   string   `json:"quotaTimeZone,omitempty"`
}

// versionPrefix is how every versioned document published starts.
var versionPrefix = []byte(`{"version":`)

// encodeRecord returns the stored JSON of rec, or of a tombstone at version
// when rec is nil.
func encodeRecord(rec *plans.KeyRecord, version int64) ([]byte, int64) {
	w := wireRecord{Version: version, Deleted: true}
	if rec != nil {
		w = wireRecord{Version: rec.Version, KeyID: rec.KeyID, Enabled: rec.Enabled,
			PlanIDs: rec.PlanIDs, InvalidateCache: rec.InvalidateCache, CustomerID: rec.CustomerID, ExpiresAt: unixMilli(rec.ExpiresAt),
			ValueExpiresAt: unixMilli(rec.ValueExpiresAt), QuotaAnchor: rec.Calendar.Anchor, QuotaTimeZone: rec.Calendar.TimeZone}
	}
	b, _ := json.Marshal(w) // cannot fail: strings, bools and integers only
	return b, w.Version
}

// decodeRecord parses a stored key record; it returns nil for a tombstone.
func decodeRecord(b []byte) (*plans.KeyRecord, error) {
	var w wireRecord
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("push: key record: %w", err)
	}
	if w.Deleted {
		return nil, nil
	}
	planIDs := w.PlanIDs
	if planIDs == nil {
		planIDs = []string{}
	}
	return &plans.KeyRecord{KeyID: w.KeyID, Enabled: w.Enabled, PlanIDs: planIDs,
		InvalidateCache: w.InvalidateCache, CustomerID: w.CustomerID, ExpiresAt: fromUnixMilli(w.ExpiresAt),
		ValueExpiresAt: fromUnixMilli(w.ValueExpiresAt), Version: w.Version,
		Calendar: plans.KeyCalendar{Anchor: w.QuotaAnchor, TimeZone: w.QuotaTimeZone}}, nil
}

// unixMilli returns t in Unix milliseconds, rounded down so that a record
// never outlives its time; 0 for the zero time.
func unixMilli(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// fromUnixMilli is unixMilli's inverse (UTC; 0 is the zero time).
func fromUnixMilli(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// encodeSnapshot returns the stored JSON of s. It fails if the encoding
// does not start with the version (cas.lua relies on it), which would mean
// plans.Snapshot's fields were reordered.
func encodeSnapshot(s *plans.Snapshot) ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("push: encode snapshot: %w", err)
	}
	if !bytes.HasPrefix(b, versionPrefix) {
		return nil, fmt.Errorf("push: snapshot JSON must start with %s, got %.20s", versionPrefix, b)
	}
	return b, nil
}

// leadingVersion reads N from a document starting with {"version":N,
// without decoding the rest; ok is false when b does not start so.
func leadingVersion(b []byte) (v int64, ok bool) {
	if !bytes.HasPrefix(b, versionPrefix) {
		return 0, false
	}
	rest := b[len(versionPrefix):]
	end := bytes.IndexAny(rest, ",}")
	if end < 0 {
		return 0, false
	}
	v, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	return v, err == nil
}

// streamIDLess reports whether stream entry id a ("<ms>-<seq>") sorts
// before b. Unparsable parts count as 0.
func streamIDLess(a, b string) bool {
	am, as := splitStreamID(a)
	bm, bs := splitStreamID(b)
	return am < bm || (am == bm && as < bs)
}

func splitStreamID(id string) (ms, seq uint64) {
	m, s, _ := strings.Cut(id, "-")
	ms, _ = strconv.ParseUint(m, 10, 64)
	seq, _ = strconv.ParseUint(s, 10, 64)
	return ms, seq
}
