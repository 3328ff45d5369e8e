package plans

import (
	"context"
	"encoding/json"
	"time"
)

// Audit sources: the door a change came through (docs/operations.md,
// "Audit log").
const (
	SourceAPI      = "api"      // the AWS-style admin API (CLI, SDKs, curl)
	SourceConsole  = "console"  // the operator console
	SourceImport   = "import"   // ImportRestApi, PutRestApi, ImportApiKeys
	SourceConfig   = "config"   // tollgate config apply
	SourcePortal   = "portal"   // the developer portal
	SourceRotation = "rotation" // API key rotation
)

// AuditEntry is one change (or one read of API key values) in the audit
// log. Resource is the resource's path ("/restapis/a1b2c3d4e5"); the API
// writes it as an ARN in Region (the one tag-resource takes). Change is the
// request with secrets and key values redacted (RedactChange), never nil
// once recorded.
type AuditEntry struct {
	ID        int64
	Time      time.Time
	Actor     string // the credential's name, or the bootstrap access key id
	Source    string // one of the Source constants
	Operation string // e.g. CreateApiKey
	Region    string
	Resource  string
	Change    json.RawMessage

	// Recorded is set once a committed transaction holds the entry: the
	// store records an entry in the first write transaction of its
	// context, and the admin records it alone when none did (a change
	// outside PostgreSQL, such as a cache flush).
	Recorded bool
}

// ARN returns the entry's resource as an ARN:
// arn:aws:apigateway:<region>::<path>.
func (e *AuditEntry) ARN() string {
	region := e.Region
	if region == "" {
		region = DefaultRegion
	}
	return "arn:aws:apigateway:" + region + "::" + e.Resource
}

// DefaultRegion is the region of ARNs for requests that name none
// (bearer tokens).
const DefaultRegion = "us-east-1"

// AuditQuery selects audit entries, newest first: Resource (a path; its
// descendants match too), Actor, From and To (inclusive; zero means
// open), one page of Limit (1..500) after Position.
type AuditQuery struct {
	Resource string
	Actor    string
	From, To time.Time
	Limit    int
	Position string
}

type auditKey struct{}

// WithAudit returns ctx carrying e: every store write transaction run with
// it records e in the same transaction, once. This is how the admin API's
// wrapper audits every route; other doors (the developer portal) audit
// their writes the same way, with their own Source.
func WithAudit(ctx context.Context, e *AuditEntry) context.Context {
	return context.WithValue(ctx, auditKey{}, e)
}

// AuditOf returns the entry ctx carries, or nil.
func AuditOf(ctx context.Context) *AuditEntry {
	e, _ := ctx.Value(auditKey{}).(*AuditEntry)
	return e
}

// ConfigCounts are how many of each top-level item the store holds
// (tollgate config checks that it read them all).
type ConfigCounts struct {
	Apis, UsagePlans, ApiKeys, DomainNames int
}
