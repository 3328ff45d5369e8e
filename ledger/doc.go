// Package ledger moves usage from the limiter into the usage ledger in
// PostgreSQL (docs/usage.md).
//
// The gateway counts admitted requests in the limiter Redis, per (key,
// plan, UTC day) and per quota period; it never talks to PostgreSQL. A
// Flusher, run by every admin node (role admin or all), takes what the
// limiter observed from a UsageSource at least every Options.Interval
// (500 ms by default) and writes it to a Store (plans/postgres.DB) in one
// transaction:
//
//	source.Drain ──▶ plans.UsageBatch (merged) ──▶ store.FlushUsage ──▶ source.Ack
//
// Day counts are absolute, so the write keeps the greater of the stored and
// the observed count: a retried, repeated or concurrent flush (several
// admin nodes) never double counts. The source keeps what it handed out
// until Ack, and hands it out again if no Ack comes (the worker died), so
// a crash of an admin node loses nothing; what can be lost is what the
// limiter Redis itself loses before it is flushed. That bound is stated in
// docs/usage.md: the interval plus the time one flush takes.
//
// A failed write keeps the drained observations and retries them at the
// next tick before draining more, so memory stays bounded while
// PostgreSQL is down. Run's final flush on shutdown writes what is
// pending, so a clean stop loses nothing.
package ledger
