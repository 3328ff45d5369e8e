package push

// DefaultPrefix is the Redis key prefix used when an Options or
// ReaderOptions Prefix is empty.
const DefaultPrefix = "tg"

func prefixOr(p string) string {
	if p == "" {
		return DefaultPrefix
	}
	return p
}

// SnapshotKey returns the Redis key of the published snapshot:
// "<prefix>:config:snapshot".
func SnapshotKey(prefix string) string { return prefix + ":config:snapshot" }

// VersionKey returns the Redis key of the watermark, the last config
// version fully published: "<prefix>:config:version".
func VersionKey(prefix string) string { return prefix + ":config:version" }

// StreamKey returns the Redis key of the change stream:
// "<prefix>:config:changes".
func StreamKey(prefix string) string { return prefix + ":config:changes" }

// KeyRecordKey returns the Redis key of the record of the API key whose
// hash (plans.HashKey) is hash: "<prefix>:key:{<hash>}". The braces make
// the hash the Redis Cluster hash tag.
func KeyRecordKey(prefix, hash string) string { return prefix + ":key:{" + hash + "}" }

// CacheGenKey returns the Redis key of a stage's cache generation, an
// integer incremented by every flush of the stage's cache and part of every
// cache entry's key: "<prefix>:cache:gen:{<apiID>:<stage>}". An absent key
// means generation 0.
func CacheGenKey(prefix, apiID, stage string) string {
	return prefix + ":cache:gen:{" + apiID + ":" + stage + "}"
}
