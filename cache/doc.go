// Package cache will hold the stage response cache of DESIGN.md section 6:
// entries in the cache Redis keyed by a digest of API id, stage, cache
// generation, method, Host, request path and the integration's cache key
// parameters, flushed per stage by bumping the generation. It is built in
// its own issue; the gateway has a seam for it and sends no X-Cache headers
// until then.
package cache
