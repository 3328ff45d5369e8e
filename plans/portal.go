package plans

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/mail"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// PortalAccount is a partner's account on the developer portal
// (docs/portal.md): an email, the customer whose API keys it manages
// (every key it creates gets this customerId; it sees only keys with it),
// the usage plans it may create keys in, and its password's hash (PHC
// string of argon2id; never returned by the API).
type PortalAccount struct {
	ID           string
	Email        string
	CustomerID   string
	UsagePlanIDs []string
	PasswordHash string
	CreatedDate  time.Time
}

// PortalInvite is what POST /portal/invites takes: who is invited, for
// which customer, and the plans their keys may be in.
type PortalInvite struct {
	Email        string   `json:"email"`
	CustomerID   string   `json:"customerId"`
	UsagePlanIDs []string `json:"usagePlanIds"`
}

// PendingInvite is an invite not used and not expired, as GET
// /portal/invites lists it (never its link: only its hash is kept).
type PendingInvite struct {
	Email        string    `json:"email"`
	CustomerID   string    `json:"customerId"`
	UsagePlanIDs []string  `json:"usagePlanIds"`
	CreatedDate  Epoch     `json:"createdDate"`
	ExpiresAt    time.Time `json:"expiresAt"` // RFC 3339, as the invite's answer and a key's expiresAt
}

// Portal limits: how long an invite and a session last.
const (
	PortalInviteTTL  = 7 * 24 * time.Hour
	PortalSessionTTL = 12 * time.Hour
	maxEmailLen      = 254
)

// Validate checks an invite and normalises it: a valid email (stored
// lowercase), a customerId of 1..1024 characters, at least one plan id
// (duplicates dropped). Errors name email, customerId or usagePlanIds.
func (in *PortalInvite) Validate() error {
	email, err := NormalizeEmail(in.Email)
	if err != nil {
		return err
	}
	in.Email = email
	if in.CustomerID == "" || utf8.RuneCountInString(in.CustomerID) > MaxNameLen {
		return Invalid("customerId", "customerId must be 1 to %d characters", MaxNameLen)
	}
	if len(in.UsagePlanIDs) == 0 {
		return Invalid("usagePlanIds", "usagePlanIds must name at least one usage plan")
	}
	slices.Sort(in.UsagePlanIDs)
	in.UsagePlanIDs = slices.Compact(in.UsagePlanIDs)
	for _, id := range in.UsagePlanIDs {
		if !ValidID(id) {
			return Invalid("usagePlanIds", "usagePlanIds: %q is not a usage plan id", id)
		}
	}
	return nil
}

// NormalizeEmail returns the address of an email ("a@example.com", no
// display name) in lower case. Errors: KindInvalid naming email.
func NormalizeEmail(s string) (string, error) {
	s = strings.TrimSpace(s)
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || len(s) > maxEmailLen || !strings.Contains(s, "@") {
		return "", Invalid("email", "email %q must be an address such as partner@example.com", s)
	}
	return strings.ToLower(s), nil
}

// ValidatePassword checks a new portal password: 12 to 256 characters.
func ValidatePassword(pw string) error {
	if n := utf8.RuneCountInString(pw); n < 12 || n > 256 {
		return Invalid("password", "the password must be 12 to 256 characters")
	}
	return nil
}

// NewPortalToken returns a new invite or session token: 32 random bytes,
// base64url without padding.
func NewPortalToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Purposes of portal tokens (PortalTokenHash).
const (
	TokenInvite  = "invite"
	TokenSession = "session"
)

// PortalTokenHash is how a portal token is stored: the SHA-256 (hex) of
// its purpose and the token, never the token.
func PortalTokenHash(purpose, token string) string {
	sum := sha256.Sum256([]byte("tollgate portal " + purpose + "\x00" + token))
	return hex.EncodeToString(sum[:])
}

// PortalInviteURL is the absolute link of an invite token under the
// portal's base URL ("https://developers.example.com").
func PortalInviteURL(base, token string) string {
	return strings.TrimRight(base, "/") + "/portal/invite/" + url.PathEscape(token)
}
