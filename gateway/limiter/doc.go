// Package limiter decides whether the gateway admits a request, over every
// limit that applies to it, in one atomic Redis script (DESIGN.md 4.3).
//
// A Request lists token buckets in AWS's check order (the plan bucket of
// the API key, or its per-method bucket; the stage method bucket; the
// account bucket) and the plan quota of the key. Decide runs limiter.lua
// with EVALSHA on one Redis primary: the request is admitted only if every
// bucket holds a token and the quota has room, and then all are charged
// together; otherwise nothing is charged and the first refusing limit is
// reported. Concurrent Decide calls are decided together, in one script
// run per batch (batch.go): the script reads every state of the batch with
// one MGET, decides the requests in order as if each ran alone, and writes
// each changed key once, so a busy stage or account bucket costs one read
// and one write per batch rather than per request. States are binary
// strings (state.lua). All time is Redis TIME; quota periods (UTC calendar days, weeks
// and months shifted by an offset) are computed inside the script, so no key
// name contains a time. Every key the script writes gets its TTL in the
// same script.
//
// Key names come from Keys, a pure function family:
//
//	<p>:{k:<keyId>}:tb:<planId>                                  plan bucket
//	<p>:{k:<keyId>}:tb:<planId>:<apiId>:<stage>:<METHOD><path>   plan-method bucket
//	<p>:{k:<keyId>}:q:<planId>                                   quota (period start, count)
//	<p>:{k:<keyId>}:u:<planId>                                   usage per UTC day
//	<p>:{s:<apiId>:<stage>}:tb:<METHOD><path>                    stage method bucket
//	<p>:{acct}:tb                                                account bucket
//
// Test builds (go test -tags testclock) add Limiter.SetClock, which passes
// an explicit time to the scripts instead of Redis TIME.
package limiter
