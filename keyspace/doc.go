// Package keyspace names every Redis key tollgate writes or reads: one
// pure, fuzzable function family (Space) and the Redis Cluster slot of a
// name (Slot). It imports only the standard library and no Redis driver.
//
// Two adapters own Redis I/O and both name their keys here, so no name is
// built twice: package engine (a gateway node's limiter state, response
// cache entries and stage cache generations) and package push (the config
// push protocol: snapshot, key records, change stream, watermark, and the
// cache generation the admin bumps on a flush). An import test
// (internal/layering) allows no other package to import keyspace.
//
// # Layout
//
// Per-key limiter state shares the hash tag {k:<keyId>}, so one API key's
// buckets, quota and usage sit in one Redis Cluster slot and one script
// decides them atomically; each stage's method buckets share
// {s:<apiId>:<stage>}, the account bucket has {acct}. The state of one
// rate-limit rule for one value of what it counts by (a client address, a
// header value...) has {r:<counterId>:<digest>}, a slot of its own.
//
//	<p>:{k:<keyId>}:tb:<planId>                                  plan bucket
//	<p>:{k:<keyId>}:tb:<planId>:<apiId>:<stage>:<METHOD><path>   plan-method bucket
//	<p>:{k:<keyId>}:q:<planId>                                   quota (period start, count)
//	<p>:{k:<keyId>}:u:<planId>                                   usage per UTC day
//	<p>:{k:<keyId>}:cq:<planId>                                  customer quota of a key without a customerId
//	<p>:{c:<customerId>}:cq:<planId>                             customer quota (period start, units)
//	<p>:{s:<apiId>:<stage>}:tb:<METHOD><path>                    stage method bucket
//	<p>:{acct}:tb                                                account bucket
//	<p>:{r:<counterId>:<digest>}:<tb|sw|fw|cc|lb>                rate-limit rule state
//	<p>:{c<n>}:uc                                                usage change set of one slot (SlotTag)
//	<p>:cache:e:<digest>                                         response cache entry
//	<p>:cache:gen:{<apiId>:<stage>}                              stage cache generation
//	<p>:config:snapshot                                          published snapshot
//	<p>:config:version                                           watermark
//	<p>:config:changes                                           change stream
//	<p>:key:{<hash>}                                             API key record
//
// <p> is the prefix ("tg"). No name holds a time: quota periods and usage
// days are computed inside the limiter script from Redis TIME.
// docs/architecture.md describes who writes what.
package keyspace
