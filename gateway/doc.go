// Package gateway is tollgate's data plane (docs/architecture.md,
// docs/behaviour.md): an http.Handler that routes
// `Host: {restApiId}.execute-api.<anything>` and
// `/{stageName}/{resource path}`, or a custom domain name's
// `/{basePath}/{resource path}` through its base path mappings, to a
// method of the deployment a stage serves, checks the caller's API key, asks the engine for one atomic
// decision over the plan, stage and account buckets and the plan quota,
// writes the caller's rate-limit headers and calls the integration
// (HTTP_PROXY through httputil.ReverseProxy, or MOCK).
//
// The server runs on an immutable compiled form of a *plans.Snapshot (one
// tree router per stage, every bucket resolved, each custom domain's
// certificate parsed and its base path tree), built off the request path
// by SetSnapshot and swapped in whole through an atomic pointer; a request
// loads it once. Key records come from a KeyLookup (push.Reader in
// production); decisions and the response cache from an Engine, the port
// it declares (engine.Engine in production). The gateway never talks to
// PostgreSQL, holds no Redis client and builds no Redis key name: it names
// limits by scope (package limit) and cache entries by their parts
// (package cache), and imports no Redis driver.
//
// Order of work for one request: input limits (414, 413), route (404,
// 405), key check (403, 429 for repeated failures, 503), limits (429, 503
// when failing closed), integration (502, 504), then one access-log line
// and the metrics. A method that caches runs its limits, its stage's cache
// generation and its cache entry in one round trip per Redis server, then
// serves the hit or calls the integration once per entry on the node (see
// serveCached). The request's state lives on one exchange value that the
// functions of the request path take.
//
// # Wiring (cmd)
//
//	eng := engine.New(rdb, engine.Options{Prefix: "tg", Timeout: redisTimeout})
//	var srv *gateway.Server
//	reader := push.NewReader(rdb, push.ReaderOptions{OnSnapshot: func(s *plans.Snapshot) error { return srv.SetSnapshot(s) },
//		OnEvent: eng.ForgetChange, OnUsage: eng.ForgetUsage, OnReload: eng.ForgetAll})
//	metrics := gateway.NewMetrics()
//	registry.MustRegister(metrics.Collectors()...)
//	srv = gateway.New(gateway.Options{
//		Keys: reader, Engine: eng, KeyPepper: pepper, FailureMode: mode, TrustedProxies: proxies,
//		Logger: logger, Metrics: metrics, Ready: func(ctx context.Context) error { return reader.Ready() },
//		Secrets: secretsKey, CertificateFiles: files,
//	})
//	hs := &http.Server{Handler: srv, ReadHeaderTimeout: gateway.ReadHeaderTimeout, MaxHeaderBytes: gateway.ServerMaxHeaderBytes}
//	tlsServer := &http.Server{Handler: srv, TLSConfig: srv.TLSConfig(), ...} // ServeTLS(ln, "", "")
//	go srv.WatchCertificateFiles(ctx, 0)
//
// srv must be assigned before reader.Start delivers the first snapshot.
package gateway
