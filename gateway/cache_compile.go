package gateway

import (
	"net/http"
	"time"

	"tollgate/cache"
	"tollgate/plans"
)

// methodCache is a method's compiled cache settings (docs/behaviour.md, "Response cache"); a
// method that does not cache has none.
type methodCache struct {
	ttl         time.Duration
	stale       cache.Staleness // the stage's stale windows (its tags)
	params      []cache.Param
	authKeyed   bool // Authorization is a key parameter, so it may be cached
	cookieKeyed bool // Cookie is a key parameter
	requireAuth bool
	strategy    string
	verb        string
}

// compileCache resolves the cache settings of a method on a stage: nil
// unless the stage has cacheClusterEnabled and the method's setting (its
// own entry, or "*/*" for GET) enables caching with a TTL above 0. An
// unusable cacheKeyParameters list (Validate refuses it first) disables
// caching rather than keying on less than asked.
func compileCache(stage *plans.Stage, path, verb string, in *plans.Integration) *methodCache {
	if !stage.CacheClusterEnabled {
		return nil
	}
	ms := stage.CacheSetting(path, verb)
	if !ms.CachingEnabled || ms.CacheTTLInSeconds <= 0 {
		return nil
	}
	var list []string
	if in != nil {
		list = in.CacheKeyParameters
	}
	params, err := cache.ParseParams(list)
	if err != nil {
		return nil
	}
	return &methodCache{
		ttl: time.Duration(ms.CacheTTLInSeconds) * time.Second,
		stale: cache.Staleness{
			IfError:         time.Duration(stage.CacheStaleSeconds(plans.CacheStaleIfErrorTag)) * time.Second,
			WhileRevalidate: time.Duration(stage.CacheStaleSeconds(plans.CacheStaleWhileRevalidateTag)) * time.Second,
		},
		params:      params,
		authKeyed:   cache.HasHeader(params, "Authorization"),
		cookieKeyed: cache.HasHeader(params, "Cookie"),
		requireAuth: ms.RequireAuthorizationForCacheControl,
		strategy:    ms.UnauthorizedCacheControlHeaderStrategy,
		verb:        verb,
	}
}

// eligible reports whether a request of this method may use the cache: a
// GET (or ANY) method caches GET and HEAD requests; a method configured for
// another verb caches only that verb. Other requests are served as by a
// method that does not cache (no X-Cache).
func (mc *methodCache) eligible(reqMethod string) bool {
	if mc.verb == http.MethodGet || mc.verb == "ANY" {
		return reqMethod == http.MethodGet || reqMethod == http.MethodHead
	}
	return reqMethod == mc.verb
}

// onError returns e when it may answer in place of a failed upstream
// call at now: past its freshness by less than its stale-if-error window
// (the stage's or its own, see cache.Stale); nil otherwise.
func (mc *methodCache) onError(e *cache.Entry, now time.Time) *cache.Entry {
	if e == nil || !e.StaleWithin(now, cache.Stale(e.Header, mc.stale).IfError) {
		return nil
	}
	return e
}

// whileRevalidate reports whether e may answer at once at now while it is
// refreshed: past its freshness by less than its stale-while-revalidate
// window (the stage's or its own, see cache.Stale).
func (mc *methodCache) whileRevalidate(e *cache.Entry, now time.Time) bool {
	return e != nil && e.StaleWithin(now, cache.Stale(e.Header, mc.stale).WhileRevalidate)
}

// cacheMode is what the cache does for one request.
type cacheMode int

const (
	modeLookup    cacheMode = iota // serve a hit, else call and store
	modeRefresh                    // authorized max-age=0: call and replace the entry
	modeBypass                     // not eligible: neither read nor store
	modeForbidden                  // unauthorized max-age=0 under FAIL_WITH_403
)

// mode decides how a request uses the cache, and whether an ignored
// "Cache-Control: max-age=0" earns the Warning header. A request with a
// body bypasses: the body reaches the upstream but is no part of the key,
// so its answer must neither be stored (it would be served to requests
// without that body: cache poisoning) nor be a stored one. A Range request
// bypasses: its answer is part of the resource, never stored, and a full
// entry is not cut to size here (RFC 9110 section 14 allows either). A
// request with Authorization or Cookie bypasses unless that header is a
// key parameter.
// max-age=0 refreshes when authorization is not required or the caller's
// key is tagged tollgate:invalidate-cache=true; otherwise the
// unauthorizedCacheControlHeaderStrategy decides.
func (mc *methodCache) mode(r *http.Request, rec *plans.KeyRecord) (cacheMode, bool) {
	if hasBody(r) || len(r.Header["Range"]) > 0 || !mc.authKeyed && len(r.Header.Values("Authorization")) > 0 || !mc.cookieKeyed && len(r.Header.Values("Cookie")) > 0 {
		return modeBypass, false
	}
	if !maxAgeZero(r.Header) {
		return modeLookup, false
	}
	if !mc.requireAuth || rec != nil && rec.InvalidateCache {
		return modeRefresh, false
	}
	switch mc.strategy {
	case plans.FailWith403:
		return modeForbidden, false
	case plans.SucceedWithoutResponseHeader:
		return modeLookup, false
	}
	return modeLookup, true // SUCCEED_WITH_RESPONSE_HEADER, the default
}

// hasBody reports whether r carries a body: a Content-Length above 0, or
// one of unknown length (chunked, or an HTTP/2 stream without a length).
func hasBody(r *http.Request) bool {
	return r.ContentLength != 0 || len(r.TransferEncoding) > 0
}

// maxAgeZero reports whether Cache-Control carries max-age=0.
func maxAgeZero(h http.Header) bool {
	for name, value := range cache.Directives(h) {
		if name == "max-age" && value == "0" {
			return true
		}
	}
	return false
}
