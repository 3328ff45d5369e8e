package keyspace

// Snapshot names the published config snapshot: <p>:config:snapshot.
func (s Space) Snapshot() string { return s.prefix() + ":config:snapshot" }

// Version names the watermark, the last config version fully published:
// <p>:config:version.
func (s Space) Version() string { return s.prefix() + ":config:version" }

// Stream names the change stream: <p>:config:changes.
func (s Space) Stream() string { return s.prefix() + ":config:changes" }

// KeyRecord names the record of the API key whose hash (plans.HashKey) is
// hash: <p>:key:{<hash>}. The braces make the hash the Redis Cluster hash
// tag (hashes are hex and hold no brace).
func (s Space) KeyRecord(hash string) string { return s.prefix() + ":key:{" + hash + "}" }

// CacheGeneration names a stage's cache generation, an integer incremented
// by every flush of the stage's cache and part of every cache entry's
// digest: <p>:cache:gen:{<apiId>:<stage>}. An absent key means generation 0.
func (s Space) CacheGeneration(apiID, stage string) string {
	return s.prefix() + ":cache:gen:{" + escapeID(apiID) + ":" + escapeID(stage) + "}"
}

// CacheEntry names the response cache entry whose digest (cache.Digest, 64
// hex digits) is digest: <p>:cache:e:<digest>. Entries have no hash tag:
// they spread over every slot of a Redis Cluster.
func (s Space) CacheEntry(digest string) string { return s.prefix() + ":cache:e:" + digest }
