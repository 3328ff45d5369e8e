// Package gateway is tollgate's data plane (DESIGN.md section 4): an
// http.Handler that routes `Host: {restApiId}.execute-api.<anything>` and
// `/{stageName}/{resource path}` to a method of the deployment a stage
// serves, checks the caller's API key, asks the limiter for one atomic
// decision over the plan, stage and account buckets and the plan quota,
// writes the caller's rate-limit headers and calls the integration
// (HTTP_PROXY through httputil.ReverseProxy, or MOCK).
//
// The server runs on an immutable compiled form of a *plans.Snapshot (one
// tree router per stage, every bucket resolved), built off the request path
// by SetSnapshot and swapped in whole through an atomic pointer; a request
// loads it once. Key records come from a KeyLookup (push.Reader in
// production) and decisions from a Limiter (gateway/limiter over Redis);
// the gateway never talks to PostgreSQL.
//
// Order of work for one request (DESIGN.md 4.2): input limits (414, 413),
// route (404, 405), key check (403, 429 for repeated failures, 503), limits
// (429, 503 when failing closed), integration (502, 504), then one access-log
// line and the metrics. A method that caches (DESIGN.md 6, package cache)
// runs its limits, its stage's cache generation and its cache entry in one
// pipelined round trip per Redis server, then serves the hit or calls the
// integration once per entry on the node (see serveCached).
//
// # Wiring (cmd)
//
//	lim := limiter.New(rdb, limiter.Options{Prefix: "tg", Timeout: redisTimeout})
//	var srv *gateway.Server
//	reader := push.NewReader(rdb, push.ReaderOptions{OnSnapshot: func(s *plans.Snapshot) error { return srv.SetSnapshot(s) }})
//	metrics := gateway.NewMetrics()
//	registry.MustRegister(metrics.Collectors()...)
//	srv = gateway.New(gateway.Options{
//		Keys: reader, Limiter: lim, LimiterKeys: lim.Keys(),
//		KeyPepper: pepper, FailureMode: mode, TrustedProxies: proxies,
//		Logger: logger, Metrics: metrics,
//		Ready: func(ctx context.Context) error { return reader.Ready() },
//		Cache: cache.New(cacheRDB, cache.Options{Prefix: "tg"}), LimiterRedis: rdb,
//		CacheGenKey: func(api, stage string) string { return push.CacheGenKey("tg", api, stage) },
//		CacheTimeout: redisTimeout,
//	})
//	hs := &http.Server{Handler: srv, ReadHeaderTimeout: gateway.ReadHeaderTimeout, MaxHeaderBytes: gateway.ServerMaxHeaderBytes}
//
// srv must be assigned before reader.Start delivers the first snapshot.
package gateway
