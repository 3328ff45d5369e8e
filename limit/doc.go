// Package limit is the vocabulary of one limit decision, shared by the
// gateway (which builds a Request per request and writes headers from the
// Decision) and the engine (which decides it in Redis): token buckets in
// AWS's check order, the plan quota, the level that refused, and the
// states rate-limit headers are written from. It imports only the standard
// library, so the gateway uses it without depending on any Redis driver.
//
// A Request names its limits by scope (API key, usage plan, stage, method),
// never by Redis key: only the engine names Redis keys (package keyspace).
// docs/behaviour.md describes the decision; docs/architecture.md the
// packages.
package limit
