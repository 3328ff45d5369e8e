package push

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redisscript"
)

var (
	//go:embed cas.lua
	casSource string
	//go:embed watermark.lua
	watermarkSource string

	casScript       = redis.NewScript(casSource)
	watermarkScript = redis.NewScript(watermarkSource)
)

// casWrite is one cas.lua call: document key, version, JSON and TTL in ms.
type casWrite struct {
	key     string
	version int64
	doc     []byte
	ttlMS   int64
}

// runCAS stores one document through cas.lua (EVALSHA, falling back to
// EVAL on NOSCRIPT) and reports whether it was written.
func runCAS(ctx context.Context, rdb redis.Scripter, w casWrite) (bool, error) {
	n, err := casScript.Run(ctx, rdb, []string{w.key}, w.version, w.doc, w.ttlMS).Int64()
	if err != nil {
		return false, fmt.Errorf("push: write %s: %w", w.key, err)
	}
	return n == 1, nil
}

// runCASBatch stores many documents through cas.lua in one pipeline. Inside
// a pipeline go-redis cannot fall back to EVAL, so a NOSCRIPT reply loads the
// script on every shard (redisscript.Reload) and runs the whole batch once
// more (the writes are idempotent).
func runCASBatch(ctx context.Context, rdb redis.UniversalClient, ws []casWrite) error {
	if len(ws) == 0 {
		return nil
	}
	err := casPipeline(ctx, rdb, ws)
	if again, lerr := redisscript.Reload(ctx, rdb, casScript, err); lerr != nil {
		return fmt.Errorf("push: cas script: %w", lerr)
	} else if again {
		err = casPipeline(ctx, rdb, ws)
	}
	if err != nil {
		return fmt.Errorf("push: write %d key records: %w", len(ws), err)
	}
	return nil
}

func casPipeline(ctx context.Context, rdb redis.UniversalClient, ws []casWrite) error {
	pipe := rdb.Pipeline()
	for _, w := range ws {
		casScript.EvalSha(ctx, pipe, []string{w.key}, w.version, w.doc, w.ttlMS)
	}
	_, err := pipe.Exec(ctx)
	return err
}

// raiseWatermark sets <prefix>:config:version to v unless it is already at
// least v; it reports whether it moved.
func raiseWatermark(ctx context.Context, rdb redis.Scripter, key string, v int64) (bool, error) {
	n, err := watermarkScript.Run(ctx, rdb, []string{key}, v).Int64()
	if err != nil {
		return false, fmt.Errorf("push: raise watermark to %d: %w", v, err)
	}
	return n == 1, nil
}
