// Package engine is a gateway node's Redis: every Redis interaction of the
// data plane goes through one *Engine (docs/architecture.md). It decides
// limits, reads and fills the stage response cache, reads and sets usage
// and quotas, names every key (through package keyspace) and routes by
// Redis Cluster slot. The gateway consumes it through a small port it
// declares itself (gateway.Engine: Decide, DecideLookup, Fill) and imports
// no Redis driver; the admin reads usage through it (cmd wires both).
//
// # Decisions
//
// A limit.Request lists token buckets in AWS's check order (the plan
// bucket of the API key, or its per-method bucket; the stage method
// bucket; the account bucket) and the plan quota of the key, by scope.
// Decide resolves their Redis names and decides them with limits.lua (op
// "decide"): the request is admitted only if every bucket holds a token
// and the quota has room, and then all are charged together; otherwise
// nothing is charged and the first refusing limit is reported. All time is
// Redis TIME (or the injected Options.Clock in tests); quota periods are
// computed inside the script, so no key name contains a time.
//
// Concurrent decisions are batched (batch.go): on one primary (a single
// server, or the primary Sentinel names) one script run decides the whole
// batch atomically, all levels together, in one round trip. On Redis
// Cluster (cluster.go) a key's own state (plan bucket, quota, usage) sits
// in its key's slot and the shared stage and account buckets each in their
// own: a batch takes the shared buckets first (one script run per slot,
// pipelined, one round trip per node), then decides each key's own state
// knowing those outcomes (again one run per slot, one round trip per
// node), then gives back the shared tokens of every request that was
// refused. Shared buckets are never over-admitted and never charged for a
// refused request; they may under-admit only while a give-back is in
// flight.
//
// A script run that charges is sent once: go-redis would send it again
// after a network error even when it ran (a double charge); the engine
// reports such a decision as failed instead, and the caller's failure
// mode decides. Replies that prove a run did not happen (NOSCRIPT, MOVED,
// ASK, TRYAGAIN, CLUSTERDOWN) are followed or sent again.
//
// A decision fails only when Redis does not answer, never because the
// node is busy (batch.go): it waits while queued behind the node's own
// work and for its run's reply (up to 1 s); after a run failed without a
// reply, decisions fail at once (ErrRedisDown) for Options.Timeout and
// while a run tries Redis again. With Options.FailOpen (the gateway's
// failure mode "open") a failed decision is charged to the quota and
// usage once Redis answers (failopen.go), so usage counts every admitted
// request.
//
// A refusal of a caller's own plan bucket or quota is remembered on the
// node until the moment it could admit again (refusals.go), so a client
// that keeps calling while refused costs no Redis round trip; the memory
// is cleared by config, usage and reload events (ForgetChange,
// ForgetUsage, ForgetAll).
//
// # Capacity leases
//
// With Options.LeaseLifetime set, a hot request shape (its bucket and
// quota keys) takes several tokens and quota units in one decision and
// the node admits further requests of the shape against them without a
// round trip for at most that lifetime, then gives back what it did not
// spend with the usage of what it did (leases.go, limits.lua ops
// "decide" with a wanted count and "unlease"). The contract (never
// over-admitted; burst + rate × (T + L) over any interval; quotas exact;
// what a dead node loses) is docs/leases.md.
//
// # Rate-limit rules
//
// A limit.Request may carry rate-limit rules (docs/rules.md): token
// bucket, sliding and fixed windows, concurrency, a delaying leaky bucket
// and a calendar quota (a usage plan's quota in shadow mode), each counted
// per value of what it counts by, under its own hash tag. They are decided with the request's buckets and quota, all or
// nothing (rules.go, rules.lua): in the batch's one atomic run on one
// primary; on Redis Cluster taken beside the shared buckets in phase 1 and
// undone with them in phase 3. Shadow rules are decided and counted but
// never refuse. A CONCURRENCY rule's request holds a member until
// Decision.Release, under a lease the node renews (holds.go), so a dead
// node's requests leave within Options.ConcurrencyLease.
//
// # Response cache
//
// DecideLookup reads a stage's cache generation (limiter Redis) and the
// entry (cache Redis) in the round trip of the request's decision: one
// pipeline when both are one Redis, two in parallel otherwise. Fill stores
// an entry. Package cache holds the HTTP rules (digest, Vary, storable).
//
// # Example
//
//	eng := engine.New(rdb, engine.Options{Prefix: "tg", Timeout: 50 * time.Millisecond})
//	_ = eng.Load(ctx)
//	d, err := eng.Decide(ctx, &limit.Request{KeyID: "abcdefghij", PlanID: "a1b2c3",
//		API: "x1y2z3w4v5", Stage: "prod",
//		Buckets: []limit.Bucket{{Level: limit.LevelPlan, RateLimit: 10, BurstLimit: 20},
//			{Level: limit.LevelAccount, RateLimit: 10000, BurstLimit: 5000}},
//		Quota: &limit.Quota{Limit: 1000, Period: "DAY"}})
package engine
