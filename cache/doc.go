// Package cache is the stage response cache of DESIGN.md section 6, on the
// cache Redis (TOLLGATE_CACHE_REDIS_URL, run with allkeys-lru).
//
// Key builds an entry's Redis key, "<prefix>:cache:e:<sha256 hex>", from
// API id, stage, the stage's cache generation, method, lowercased Host,
// the request path as received and the integration's cacheKeyParameters
// (ParseParams) in canonical form: parameters in a fixed order, values
// percent-decoded and kept in order when repeated, absent unlike empty,
// unlisted parameters ignored. A flush bumps the generation (in the
// limiter Redis, push.CacheGenKey): O(1), and old entries expire by TTL.
//
// An entry is a Redis hash: field "vary" holds the Vary names of the stored
// response and each other field one variant (Variant), so a response that
// varies on request headers is stored per their values, Accept-Encoding
// normalised (AcceptEncoding). Store.Queue reads the variant that matches a
// request in one EVAL (lookup.lua) that the gateway puts in a pipeline;
// Store.Put writes one variant and the key's expiry in one MULTI.
// Storable and Private say what may be stored and shared; Flight coalesces
// concurrent misses of one entry on one node.
//
//	store := cache.New(cacheRDB, cache.Options{Prefix: "tg"})
//	params, _ := cache.ParseParams(integration.CacheKeyParameters)
//	key := store.Key(params, &cache.Request{APIID: "a1b2c3d4e5", Stage: "prod", Generation: gen,
//		Method: "GET", Host: r.Host, Path: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery, Header: r.Header})
//	// key == "tg:cache:e:3f1c…" (64 hex digits)
//
// The gateway (serveCached) decides when to read, serve and store.
package cache
