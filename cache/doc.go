// Package cache holds the rules of the stage response cache
// (docs/behaviour.md, "Response cache") that are not Redis I/O: what an
// entry's digest is built from (Digest: API id, stage, cache generation,
// method, lowercased Host, the path as received and the integration's
// cacheKeyParameters in canonical form), what may be stored and shared
// (Storable, Private), Vary variants (VaryNames, VaryValue, Variant, with
// Accept-Encoding normalised by AcceptEncoding), Cache-Control directives
// (Directives), how long past its freshness an entry may answer stale
// (Staleness, Stale: RFC 5861), the stored form of an Entry, and Flight,
// which coalesces concurrent misses of one entry on one node. It imports
// no Redis driver.
//
// The engine (package engine) owns the Redis side: it names an entry's
// key from its digest (keyspace.Space.CacheEntry), reads the stage's cache
// generation and the entry in the round trip of the request's limit
// decision (filling a Lookup), and stores entries (engine.Fill). A flush
// bumps the generation (push.Publisher.FlushStageCache): O(1), and old
// entries expire by TTL.
//
//	params, _ := cache.ParseParams(integration.CacheKeyParameters)
//	digest := cache.Digest(params, &cache.Request{APIID: "a1b2c3d4e5", Stage: "prod", Generation: gen,
//		Method: "GET", Host: r.Host, Path: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery, Header: r.Header})
//	// digest == "3f1c…" (64 hex digits)
//
// The gateway decides when to read, serve and store.
package cache
