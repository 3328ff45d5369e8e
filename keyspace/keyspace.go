package keyspace

import (
	"fmt"
	"strings"
)

// DefaultPrefix is the prefix of every name when Space.Prefix is empty.
const DefaultPrefix = "tg"

// Space builds the Redis key names of tollgate: a pure function family of
// its inputs and Prefix (see the package documentation for the layout).
// The zero value uses DefaultPrefix. Safe for concurrent use.
//
// Components are used verbatim when they have the shape of valid tollgate
// identifiers (ids, stage names, upper-case methods, paths starting with
// "/"). Anything else is escaped so that distinct inputs always give
// distinct names and no input can move the hash tag: '%', ':', '{', '}' and
// '/' become %25, %3A, %7B, %7D and %2F in ids, stage names and methods; in
// a path only '%' is escaped, and a path that does not start with "/" is
// marked with a leading "%-".
type Space struct {
	// Prefix replaces "tg" in every name; "" means DefaultPrefix. Tests use
	// a unique prefix each.
	Prefix string
}

// CheckPrefix returns an error when prefix cannot start tollgate's names:
// when it holds '{' or '}'. Redis Cluster hashes the first "{...}" of a
// name (its hash tag) to pick its slot, so braces in the prefix would take
// the place of every name's own tag: a key's state could split over slots
// (which scripts cannot touch together) or every name would fall in one
// slot (one master holding all state). The error names the prefix.
func CheckPrefix(prefix string) error {
	if strings.ContainsAny(prefix, "{}") {
		return fmt.Errorf("key prefix %q contains { or }: Redis Cluster would hash it in place of each name's own hash tag", prefix)
	}
	return nil
}

func (s Space) prefix() string {
	if s.Prefix == "" {
		return DefaultPrefix
	}
	return s.Prefix
}

// perKey returns "<p>:{k:<keyId>}:".
func (s Space) perKey(keyID string) string {
	return s.prefix() + ":{k:" + escapeID(keyID) + "}:"
}

// PlanBucket names the plan bucket of one API key:
// <p>:{k:<keyId>}:tb:<planId>.
func (s Space) PlanBucket(keyID, planID string) string {
	return s.perKey(keyID) + "tb:" + escapeID(planID)
}

// PlanMethodBucket names the plan's per-key bucket for one method of one
// stage: <p>:{k:<keyId>}:tb:<planId>:<apiId>:<stage>:<METHOD><path>, where
// path is the resource path ("/pets/{petId}").
func (s Space) PlanMethodBucket(keyID, planID, apiID, stage, method, path string) string {
	return s.PlanBucket(keyID, planID) + ":" + escapeID(apiID) + ":" + escapeID(stage) + ":" +
		escapeID(method) + escapePath(path)
}

// Quota names the quota state (period start and count) of one API key in
// one plan: <p>:{k:<keyId>}:q:<planId>.
func (s Space) Quota(keyID, planID string) string {
	return s.perKey(keyID) + "q:" + escapeID(planID)
}

// CustomerQuota names the customer quota state (tollgate:customer-quota:
// period start and units) of one customer in one plan, shared by every key
// with that customerId: <p>:{c:<customerId>}:cq:<planId>.
func (s Space) CustomerQuota(customerID, planID string) string {
	return s.prefix() + ":{c:" + escapeID(customerID) + "}:cq:" + escapeID(planID)
}

// KeyCustomerQuota names the customer quota state of a key without a
// customerId, its own customer: <p>:{k:<keyId>}:cq:<planId>, in its slot.
func (s Space) KeyCustomerQuota(keyID, planID string) string {
	return s.perKey(keyID) + "cq:" + escapeID(planID)
}

// Usage names the hash of admitted requests per UTC day ("YYYY-MM-DD" →
// count) of one API key in one plan: <p>:{k:<keyId>}:u:<planId>.
func (s Space) Usage(keyID, planID string) string {
	return s.perKey(keyID) + "u:" + escapeID(planID)
}

// StageBucket names the shared stage bucket of one method:
// <p>:{s:<apiId>:<stage>}:tb:<METHOD><path>.
func (s Space) StageBucket(apiID, stage, method, path string) string {
	return s.prefix() + ":{s:" + escapeID(apiID) + ":" + escapeID(stage) + "}:tb:" +
		escapeID(method) + escapePath(path)
}

// AccountBucket names the account bucket: <p>:{acct}:tb.
func (s Space) AccountBucket() string {
	return s.prefix() + ":{acct}:tb"
}

// escapeID percent-escapes the characters that separate components or
// delimit the hash tag. Valid ids, stage names and methods contain none of
// them and are returned unchanged, without allocating.
func escapeID(s string) string {
	if !strings.ContainsAny(s, "%:{}/") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '%':
			b.WriteString("%25")
		case ':':
			b.WriteString("%3A")
		case '{':
			b.WriteString("%7B")
		case '}':
			b.WriteString("%7D")
		case '/':
			b.WriteString("%2F")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// escapePath escapes '%' and marks a path that does not start with "/", so
// that the boundary between an escaped method (which holds no '/' and never
// "%-") and the path is unambiguous.
func escapePath(p string) string {
	if strings.Contains(p, "%") {
		p = strings.ReplaceAll(p, "%", "%25")
	}
	if !strings.HasPrefix(p, "/") {
		return "%-" + p
	}
	return p
}
