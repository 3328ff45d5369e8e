// Package webhook delivers tollgate's webhooks: each event is a JSON POST
// to the configured URL (TOLLGATE_WEBHOOK_URL), signed with
// TOLLGATE_WEBHOOK_SECRET in the header
//
//	Tollgate-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">
//
// (Sign and Verify), and retried with backoff until the receiver answers
// 2xx. Events wait in a durable outbox (Outbox; plans/postgres keeps it in
// PostgreSQL) that producers fill and that a Dispatcher on every admin
// node drains, so an event survives restarts and several admin nodes
// never send one event at the same time. Delivery is at least once: a
// node that dies after the receiver's 2xx and before noting it sends the
// event again, with the same id, which receivers use to drop repeats
// (docs/operations.md, "Webhooks").
package webhook
