package plans

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
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

// Validate checks name, description, tags and, when set, the value.
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
	return ValidateTags(k.Tags)
}

// HashKey returns the lowercase hex SHA-256 of an API key value, or its
// HMAC-SHA-256 under pepper when pepper is not empty. It is the only form
// in which tollgate stores or looks up keys.
func HashKey(value string, pepper []byte) string {
	if len(pepper) == 0 {
		sum := sha256.Sum256([]byte(value))
		return hex.EncodeToString(sum[:])
	}
	m := hmac.New(sha256.New, pepper)
	m.Write([]byte(value))
	return hex.EncodeToString(m.Sum(nil))
}

// KeyRecord is what the gateway knows of an API key, pushed to Redis under
// the key's hash: its id, whether it is enabled, the usage plans it belongs
// to, whether it may invalidate cache entries, and the config version that
// wrote it (records are written only if newer).
type KeyRecord struct {
	KeyID           string   `json:"keyId"`
	Enabled         bool     `json:"enabled"`
	PlanIDs         []string `json:"planIds"`
	InvalidateCache bool     `json:"invalidateCache,omitempty"`
	Version         int64    `json:"version"`
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
