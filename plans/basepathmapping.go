package plans

import (
	"fmt"
	"strings"
)

// NoBasePath is AWS's name of the empty base path: a mapping of it serves
// every path of its domain that no longer base path takes.
const NoBasePath = "(none)"

// MaxBasePathLen bounds a base path, in characters, as AWS.
const MaxBasePathLen = 300

// BasePathMapping maps a base path of a custom domain name to a stage of
// an API, AWS's {basePath, restApiId, stage}. BasePath is "(none)" (the
// empty path), one segment ("v1") or several ("v1/orders"), each of
// letters, digits and $-_.+!*'(); "https://<domain>/<basePath>/<rest>"
// reaches the stage with path "/<rest>". An empty Stage means callers name
// the stage as the first segment after the base path.
type BasePathMapping struct {
	BasePath  string `json:"basePath"`
	RestApiID string `json:"restApiId"`
	Stage     string `json:"stage,omitempty"`
}

// Normalize writes the empty base path as "(none)" and drops a stage of
// "(none)" (AWS's way to say the callers name it).
func (m *BasePathMapping) Normalize() {
	m.BasePath = NormalizeBasePath(m.BasePath)
	if m.Stage == NoBasePath {
		m.Stage = ""
	}
}

// NormalizeBasePath returns "(none)" for "" and p otherwise.
func NormalizeBasePath(p string) string {
	if p == "" {
		return NoBasePath
	}
	return p
}

// Validate checks a normalized mapping: its base path (ValidateBasePath),
// an API id and, when set, a stage name. Whether the API and stage exist
// is the store's to check.
func (m *BasePathMapping) Validate() error {
	if err := ValidateBasePath(m.BasePath); err != nil {
		return err
	}
	if m.RestApiID == "" {
		return Invalid("restApiId", "restApiId is required")
	}
	if m.Stage != "" {
		if err := ValidateStageName(m.Stage); err != nil {
			return Invalid("stage", "stage %q must match [A-Za-z0-9_-]{1,128}", m.Stage)
		}
	}
	return nil
}

// ValidateBasePath accepts "(none)" and paths of at most 300 characters
// made of segments separated by single slashes (none at either end), each
// of letters, digits and $-_.+!*'() and neither "." nor "..".
func ValidateBasePath(p string) error {
	if p == NoBasePath {
		return nil
	}
	if len(p) > MaxBasePathLen {
		return Invalid("basePath", "basePath must be at most %d characters", MaxBasePathLen)
	}
	for _, seg := range strings.Split(p, "/") {
		if err := validBasePathSegment(seg); err != nil {
			return Invalid("basePath", "basePath %q %s", p, err)
		}
	}
	return nil
}

func validBasePathSegment(seg string) error {
	if seg == "" {
		return fmt.Errorf("must be segments separated by single slashes, without a slash at either end")
	}
	if seg == "." || seg == ".." {
		return fmt.Errorf("must not have a . or .. segment")
	}
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("$-_.+!*'()", c) >= 0) {
			return fmt.Errorf("may hold only letters, digits, $-_.+!*'() and / between segments")
		}
	}
	return nil
}

// DomainConfig is a custom domain name as the gateway sees it in a
// Snapshot: its certificate, either stored (Certificate, the private key
// possibly sealed) or named by CertificateArn for the nodes to load from
// their own files, and its base path mappings ordered by base path.
type DomainConfig struct {
	DomainName     string             `json:"domainName"`
	Certificate    *DomainCertificate `json:"certificate,omitempty"`
	CertificateArn string             `json:"certificateArn,omitempty"`
	Mappings       []BasePathMapping  `json:"mappings"`
}

// Validate checks what the gateway relies on: a valid name, exactly one
// certificate source, and valid mappings with distinct base paths.
func (d *DomainConfig) Validate() error {
	if err := ValidateDomainName(d.DomainName); err != nil {
		return err
	}
	if (d.Certificate == nil) == (d.CertificateArn == "") {
		return fmt.Errorf("domain %s: want exactly one of certificate and certificateArn", d.DomainName)
	}
	seen := make(map[string]bool, len(d.Mappings))
	for i := range d.Mappings {
		m := &d.Mappings[i]
		if err := m.Validate(); err != nil {
			return fmt.Errorf("domain %s: %w", d.DomainName, err)
		}
		if seen[m.BasePath] {
			return fmt.Errorf("domain %s: base path %s is mapped twice", d.DomainName, m.BasePath)
		}
		seen[m.BasePath] = true
	}
	return nil
}
