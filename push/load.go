package push

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"tollgate/keyspace"
	"tollgate/plans"
)

// LoadKeyRecords writes n API key records straight into Redis, in the wire
// format Lookup reads, pipelined loadBatch at a time (a Redis Cluster
// client splits each pipeline per node), then raises the watermark to
// version if it is below: a bulk load for benchmarks and capacity tests
// (cmd/scale writes a million keys with it), bypassing the admin and
// PostgreSQL. record(i) returns the hash (plans.HashKey) and record of key
// i. Plain SETs: it overwrites whatever a publisher wrote under those
// hashes, so use it on a keyspace no admin publishes to. Errors are
// wrapped.
func LoadKeyRecords(ctx context.Context, rdb redis.UniversalClient, prefix string, n int, version int64,
	record func(i int) (hash string, rec *plans.KeyRecord)) error {
	keys := keyspace.Space{Prefix: prefix}
	for start := 0; start < n; start += loadBatch {
		pipe := rdb.Pipeline()
		for i := start; i < min(n, start+loadBatch); i++ {
			hash, rec := record(i)
			doc, _ := encodeRecord(rec, rec.Version) // no error to ignore: the second value is the version, rec.Version
			pipe.Set(ctx, keys.KeyRecord(hash), doc, 0)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("push: load key records %d..: %w", start, err)
		}
	}
	if _, err := raiseWatermark(ctx, rdb, keys.Version(), version); err != nil {
		return err
	}
	return nil
}

// loadBatch is how many records one pipeline of LoadKeyRecords writes.
const loadBatch = 2000
