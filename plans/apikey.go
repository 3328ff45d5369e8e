package plans

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"strings"
	"sync"
	"time"
)

// ApiKey identifies a partner. Value is set only in the CreateApiKey
// response; tollgate stores only its hash (see HashKey). JSON shape of AWS's
// ApiKey.
type ApiKey struct {
	ID              string            `json:"id"`
	Value           string            `json:"value,omitempty"`
	Name            string            `json:"name"`
	Description     string            `json:"description,omitempty"`
	Enabled         bool              `json:"enabled"`
	CustomerID      string            `json:"customerId,omitempty"`
	StageKeys       []string          `json:"stageKeys"`
	Tags            map[string]string `json:"tags,omitempty"`
	CreatedDate     Epoch             `json:"createdDate"`
	LastUpdatedDate Epoch             `json:"lastUpdatedDate"`
	// ExpiresAt is when the key stops working (RFC 3339, UTC), read from
	// its ExpiresAtTag; nil when it never expires. Set by the store.
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// QuotaAnchor and QuotaTimeZone are the key's own quota calendar
	// (tollgate's fields; the key tags QuotaAnchorTag and QuotaTimeZoneTag
	// say the same, a field that is set wins): they replace the anchor and
	// zone of its plans' quotas for this key (KeyCalendar).
	QuotaAnchor   string `json:"quotaAnchor,omitempty"`
	QuotaTimeZone string `json:"quotaTimeZone,omitempty"`
}

// InvalidateCacheTag, set to "true" on an API key, lets that key's
// "Cache-Control: max-age=0" requests refresh cache entries (docs/behaviour.md, "Response cache").
const InvalidateCacheTag = "tollgate:invalidate-cache"

// ValidKeyValue reports whether v is 20..128 ASCII letters and digits (the
// regular expression ^[A-Za-z0-9]{20,128}$, checked byte by byte: the
// gateway runs it on every keyed request).
func ValidKeyValue(v string) bool {
	return len(v) >= 20 && len(v) <= 128 && alnum(v)
}

// Validate checks name, description, tags (the expiry and quota calendar
// tags among them), the quota calendar fields and, when set, the value.
func (k *ApiKey) Validate() error {
	if err := ValidateName("name", k.Name); err != nil {
		return err
	}
	if err := ValidateDescription("description", k.Description); err != nil {
		return err
	}
	if k.Value != "" && !ValidKeyValue(k.Value) {
		return Invalid("value", "value must be 20 to 128 letters and digits")
	}
	if len(k.CustomerID) > MaxNameLen {
		return Invalid("customerId", "customerId must be at most %d characters", MaxNameLen)
	}
	if err := ValidateTags(k.Tags); err != nil {
		return err
	}
	if err := k.validateCalendar(); err != nil {
		return err
	}
	_, _, err := KeyExpiry(k.Tags)
	return err
}

// ExpiresAtTag, set on an API key to an RFC 3339 time, makes every
// gateway refuse the key from that moment on (403, reason expired;
// docs/behaviour.md, "Key lifecycle"). It may be set, changed or removed
// at any time; the key's expiresAt field reads and writes it.
const ExpiresAtTag = "tollgate:expires-at"

// KeyExpiry returns the time ExpiresAtTag sets in tags (UTC); ok is false
// when the tag is absent. Errors: KindInvalid naming the tag when its
// value is not an RFC 3339 time.
func KeyExpiry(tags map[string]string) (t time.Time, ok bool, err error) {
	v, set := tags[ExpiresAtTag]
	if !set {
		return time.Time{}, false, nil
	}
	t, err = ParseTime(v)
	if err != nil {
		return time.Time{}, false, Invalid("tags."+ExpiresAtTag, "tag %s %q must be an RFC 3339 time such as 2027-01-31T00:00:00Z", ExpiresAtTag, v)
	}
	return t, true, nil
}

// ParseTime reads an RFC 3339 time (fractional seconds allowed) as UTC.
func ParseTime(v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(v))
	return t.UTC(), err
}

// HashKey returns the lowercase hex SHA-256 of an API key value, or its
// HMAC-SHA-256 under pepper when pepper is not empty. It is the only form
// in which tollgate stores or looks up keys.
func HashKey(value string, pepper []byte) string {
	var h [2 * sha256.Size]byte
	if len(pepper) == 0 {
		var buf [128]byte // a key value's longest: no allocation for it
		sum := sha256.Sum256(append(buf[:0], value...))
		hex.Encode(h[:], sum[:])
	} else {
		m := hmac.New(sha256.New, pepper)
		m.Write([]byte(value))
		hex.Encode(h[:], m.Sum(nil))
	}
	return string(h[:])
}

// KeyHasher computes HashKey under one pepper for a process that hashes a
// value per request (the gateway): its HMACs are keyed once and reused
// (reset, pooled), so a value costs neither the key's setup nor any
// allocation but the hash's text. Safe for concurrent use.
type KeyHasher struct {
	pepper []byte
	macs   sync.Pool // *keyMAC
}

// keyMAC is an HMAC-SHA-256 keyed with the pepper and the buffers of one
// value's hashing.
type keyMAC struct {
	mac   hash.Hash
	value []byte
	sum   [sha256.Size]byte
}

// NewKeyHasher returns a KeyHasher for pepper (empty: plain SHA-256).
func NewKeyHasher(pepper []byte) *KeyHasher {
	k := &KeyHasher{pepper: pepper}
	k.macs.New = func() any { return &keyMAC{mac: hmac.New(sha256.New, pepper)} }
	return k
}

// Hash returns HashKey(value, pepper).
func (k *KeyHasher) Hash(value string) string {
	if len(k.pepper) == 0 {
		return HashKey(value, nil)
	}
	m := k.macs.Get().(*keyMAC)
	m.mac.Reset()
	m.value = append(m.value[:0], value...)
	m.mac.Write(m.value)
	var h [2 * sha256.Size]byte
	hex.Encode(h[:], m.mac.Sum(m.sum[:0]))
	// the pooled buffer keeps no key value
	clear(m.value)
	if cap(m.value) <= 1<<10 { // key values are at most 128 bytes; keep no large buffer
		k.macs.Put(m)
	}
	return string(h[:])
}

// KeyRecord is what the gateway knows of an API key, pushed to Redis under
// the key's hash: its id, whether it is enabled, the usage plans it belongs
// to, whether it may invalidate cache entries, when it expires, and the
// config version that wrote it (records are written only if newer).
type KeyRecord struct {
	KeyID           string   `json:"keyId"`
	Enabled         bool     `json:"enabled"`
	PlanIDs         []string `json:"planIds"`
	InvalidateCache bool     `json:"invalidateCache,omitempty"`
	// CustomerID is the key's customerId: the keys of one customer share
	// a plan's customer quota (CustomerQuotaTag); "" for none.
	CustomerID string `json:"customerId,omitempty"`
	// ExpiresAt is the key's expiry (ExpiresAtTag); zero: never. The
	// record carries it so that every node refuses the key from then on
	// without any further push.
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	// ValueExpiresAt is set on the record of a previous value of a
	// rotated key: when its overlap ends. Zero on a key's current value.
	ValueExpiresAt time.Time `json:"valueExpiresAt,omitzero"`
	// Calendar is the key's own quota calendar (ApiKey.QuotaCalendar):
	// the gateway runs the key's quota on every plan by it.
	Calendar KeyCalendar `json:"quotaCalendar,omitzero"`
	Version  int64       `json:"version"`
}

// Expired reports whether the key has expired at now.
func (r *KeyRecord) Expired(now time.Time) bool {
	return !r.ExpiresAt.IsZero() && !now.Before(r.ExpiresAt)
}

// Replaced reports whether this record is of a previous value whose
// overlap has ended at now.
func (r *KeyRecord) Replaced(now time.Time) bool {
	return !r.ValueExpiresAt.IsZero() && !now.Before(r.ValueExpiresAt)
}

// CanInvalidateCache reports whether tags grant cache invalidation.
func CanInvalidateCache(tags map[string]string) bool {
	return strings.EqualFold(tags[InvalidateCacheTag], "true")
}

// KeyTypeAPIKey is the only usage plan key type (AWS's keyType).
const KeyTypeAPIKey = "API_KEY"

// UsagePlanKey is the association of an API key with a usage plan. ID is the
// key's id; Type is always KeyTypeAPIKey. JSON shape of AWS's UsagePlanKey,
// without its value: tollgate keeps only key hashes.
type UsagePlanKey struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Name string `json:"name"`
}
