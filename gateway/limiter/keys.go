package limiter

import "strings"

// DefaultPrefix is the key prefix used when Options.Prefix is empty.
const DefaultPrefix = "tg"

// Keys builds the Redis key names of the limiter (DESIGN.md 4.3). It is a
// pure function family of its inputs and Prefix; the zero value uses
// DefaultPrefix. Per-key state shares the hash tag {k:<keyId>}, so one key's
// buckets, quota and usage live in one Redis Cluster slot; stage buckets use
// {s:<apiId>:<stage>} and the account bucket {acct}.
//
// Components are used verbatim when they have the shape of valid tollgate
// identifiers (ids, stage names, upper-case methods, paths starting with
// "/"). Anything else is escaped so that distinct inputs always give
// distinct names and no input can move the hash tag: '%', ':', '{', '}' and
// '/' become %25, %3A, %7B, %7D and %2F in ids, stage names and methods; in
// a path only '%' is escaped, and a path that does not start with "/" is
// marked with a leading "%-".
type Keys struct {
	// Prefix replaces "tg" in every name; "" means DefaultPrefix.
	Prefix string
}

func (k Keys) prefix() string {
	if k.Prefix == "" {
		return DefaultPrefix
	}
	return k.Prefix
}

// perKey returns "<p>:{k:<keyId>}:".
func (k Keys) perKey(keyID string) string {
	return k.prefix() + ":{k:" + escapeID(keyID) + "}:"
}

// PlanBucket names the plan bucket of one API key:
// <p>:{k:<keyId>}:tb:<planId>.
func (k Keys) PlanBucket(keyID, planID string) string {
	return k.perKey(keyID) + "tb:" + escapeID(planID)
}

// PlanMethodBucket names the plan's per-key bucket for one method of one
// stage: <p>:{k:<keyId>}:tb:<planId>:<apiId>:<stage>:<METHOD><path>, where
// path is the resource path ("/pets/{petId}").
func (k Keys) PlanMethodBucket(keyID, planID, apiID, stage, method, path string) string {
	return k.PlanBucket(keyID, planID) + ":" + escapeID(apiID) + ":" + escapeID(stage) + ":" +
		escapeID(method) + escapePath(path)
}

// Quota names the quota state (period start and count) of one API key in
// one plan: <p>:{k:<keyId>}:q:<planId>.
func (k Keys) Quota(keyID, planID string) string {
	return k.perKey(keyID) + "q:" + escapeID(planID)
}

// Usage names the hash of admitted requests per UTC day ("YYYY-MM-DD" →
// count) of one API key in one plan: <p>:{k:<keyId>}:u:<planId>.
func (k Keys) Usage(keyID, planID string) string {
	return k.perKey(keyID) + "u:" + escapeID(planID)
}

// StageBucket names the shared stage bucket of one method:
// <p>:{s:<apiId>:<stage>}:tb:<METHOD><path>.
func (k Keys) StageBucket(apiID, stage, method, path string) string {
	return k.prefix() + ":{s:" + escapeID(apiID) + ":" + escapeID(stage) + "}:tb:" +
		escapeID(method) + escapePath(path)
}

// AccountBucket names the account bucket: <p>:{acct}:tb.
func (k Keys) AccountBucket() string {
	return k.prefix() + ":{acct}:tb"
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
