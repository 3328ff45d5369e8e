package plans

import (
	"crypto/sha256"
	"encoding/hex"
)

// Role is what an admin credential may do (docs/operations.md, "Admin
// credentials and roles"): admin everything; operator everything but
// credentials and changing the account; keys API keys and plan
// memberships only; viewer reads, without key values or credentials.
type Role string

// Roles.
const (
	RoleAdmin    Role = "admin"
	RoleOperator Role = "operator"
	RoleKeys     Role = "keys"
	RoleViewer   Role = "viewer"
)

// Roles lists every role, most powerful first.
var Roles = []Role{RoleAdmin, RoleOperator, RoleKeys, RoleViewer}

// Valid reports whether r is one of Roles.
func (r Role) Valid() bool {
	switch r {
	case RoleAdmin, RoleOperator, RoleKeys, RoleViewer:
		return true
	}
	return false
}

// Credential kinds: an AWS SigV4 access key pair or a bearer token.
const (
	CredentialSigV4 = "sigv4"
	CredentialToken = "token"
)

// Credential is an admin API credential without its secret. JSON shape of
// the admin API's /credentials; AccessKeyID is set for sigv4 only.
type Credential struct {
	ID              string `json:"id"`
	Name            string `json:"name"`
	Role            Role   `json:"role"`
	Kind            string `json:"kind"`
	AccessKeyID     string `json:"accessKeyId,omitempty"`
	CreatedDate     Epoch  `json:"createdDate"`
	LastRotatedDate Epoch  `json:"lastRotatedDate"`
}

// Validate checks name, role and kind.
func (c *Credential) Validate() error {
	if err := ValidateName("name", c.Name); err != nil {
		return err
	}
	if !c.Role.Valid() {
		return Invalid("role", "role %q must be admin, operator, keys or viewer", c.Role)
	}
	if c.Kind != CredentialSigV4 && c.Kind != CredentialToken {
		return Invalid("kind", "kind %q must be sigv4 or token", c.Kind)
	}
	return nil
}

// CredentialSecret is what the store keeps of a credential's secret:
// TokenHash (HashToken) for a token, AccessKeyID and the sealed secret
// access key for sigv4.
type CredentialSecret struct {
	TokenHash    string
	AccessKeyID  string
	SealedSecret string
}

// NewAdminToken returns a new bearer token: "tgt" then 40 random base62
// characters (about 238 bits).
func NewAdminToken() string { return "tgt" + randomString(40, base62) }

// NewAccessKeyID returns a new SigV4 access key id: "TGAK" then 16 random
// uppercase letters and digits, 20 characters as AWS's.
func NewAccessKeyID() string {
	return "TGAK" + randomString(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
}

// NewSecretAccessKey returns a new SigV4 secret: 40 random base62
// characters.
func NewSecretAccessKey() string { return randomString(40, base62) }

// HashToken returns the lowercase hex SHA-256 of a bearer token, the only
// form in which tokens are stored or looked up.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}
