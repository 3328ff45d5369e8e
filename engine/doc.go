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
// bucket; the account bucket), the plan quota of the key and its rules.
// Decide resolves their Redis names (resolve.go) and decides them with op
// "decide" of the script library (package script): the request is
// admitted only if every limit has room, and then all are charged
// together; otherwise nothing is charged and the first refusing limit is
// reported. All time is Redis TIME (or the injected Options.Clock in
// tests); quota periods are computed inside the script, so no key name
// contains a time. A period anchored to a day or in a time zone (package
// calendar) cannot be: the engine sends a table of three periods around
// its estimate of Redis time (script.PeriodBounds, resolve.go), the script
// picks the one holding its TIME, and a table that misses it charges
// nothing and is sent again around the time of the reply (Decide).
//
// Concurrent decisions are batched (batch.go): on one primary (single.go)
// one script run decides the whole batch atomically in one round trip. On
// Redis Cluster (cluster.go) a key's own state (plan bucket, quota, usage)
// sits in its key's slot and the shared stage and account buckets and
// rules each in their own: a batch takes the shared limits first (one run
// per slot, pipelined), then decides each key's own state knowing those
// outcomes, then gives back the shared tokens of every request that was
// refused. Shared limits are never over-admitted and never charged for a
// refused request; they may under-admit only while a give-back is in
// flight.
//
// Every run is sent under its node's run window (run.go): a run Redis has
// seen already does nothing, so a run may be sent again after a network
// error, a stall or a failover without a double charge. Replies that prove
// a run did not happen (NOSCRIPT, MOVED, ASK, TRYAGAIN, CLUSTERDOWN) are
// followed or sent again until the cluster settles.
//
// A decision fails only when Redis does not answer, never because the
// node is busy: it waits while queued behind the node's own work and for
// its run's reply; after a run failed without a reply, decisions fail at
// once (ErrRedisDown) for Options.Timeout and while a run tries Redis
// again (health.go).
//
// # Layers
//
// The Engine is the core limit.Decider. The mechanisms that spare Redis a
// round trip or survive its absence stack on it as limit.Layer values, in
// packages of their own: engine/refusal remembers refusals until they
// could admit again, engine/lease takes capacity leases for hot request
// shapes (docs/leases.md), engine/failopen charges the admissions of an
// outage once Redis answers. Each layer knows the one below through
// limit.Decider alone; cmd wires the stack.
//
// # Rate-limit rules
//
// A limit.Request may carry rate-limit rules (docs/rules.md), decided
// with its buckets and quota, all or nothing (rules.go): in the batch's
// one atomic run on one primary; on Redis Cluster taken beside the shared
// buckets and undone with them. A CONCURRENCY rule's request holds a
// member until Decision.Release, under a lease the node renews (holds.go),
// so a dead node's requests leave within Options.ConcurrencyLease.
//
// # Response cache
//
// DecideLookup reads a stage's cache generation (limiter Redis) and the
// entry (cache Redis) in the round trip of the request's decision: one
// pipeline when both are one Redis, two in parallel otherwise. Fill stores
// an entry (cache.go). Package cache holds the HTTP rules (digest, Vary,
// storable).
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
