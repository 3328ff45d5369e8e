package engine

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redisscript"
	"tollgate/script"
)

// limitsScript is the limiter script (package script's library), hashed
// once: runs send its SHA1 (EVALSHA).
var limitsScript = redis.NewScript(script.Source)

// onceCmd is a command go-redis must never send twice: a limiter script run
// that charges tokens or quota. go-redis retries a command after a
// network error (EOF, reset, timeout) even when the command reached Redis
// and ran, which would charge it twice; with NoRetry it reports the error
// instead, and the engine treats the decision as failed (the caller's
// failure mode decides). Replies that prove the command did not run
// (MOVED, ASK: go-redis follows them whatever NoRetry says; TRYAGAIN and
// the like: cluster.go sends those again) are not affected.
type onceCmd struct{ *redis.Cmd }

// NoRetry reports true: see onceCmd.
func (onceCmd) NoRetry() bool { return true }

// queueOnce queues an EVALSHA of the limiter script with keys and args on p (a
// client or a pipeline) as a onceCmd and returns its command.
func queueOnce(ctx context.Context, p processor, keys []string, args []any) *redis.Cmd {
	all := make([]any, 0, 3+len(keys)+len(args))
	all = append(all, "evalsha", limitsScript.Hash(), len(keys))
	for _, k := range keys {
		all = append(all, k)
	}
	all = append(all, args...)
	cmd := newScriptCmd(ctx, all)
	_ = p.Process(ctx, onceCmd{cmd})
	return cmd
}

// newScriptCmd returns the command of args: EVALSHA, the script's hash,
// the number of keys, the keys (the first, args[3], routes it on Redis
// Cluster), the arguments.
func newScriptCmd(ctx context.Context, args []any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, args...)
	cmd.SetFirstKeyPos(3)
	return cmd
}

// sendScript sends the script run of args (newScriptCmd) on p, a client
// or a pipeline, and returns its command.
func sendScript(ctx context.Context, p processor, args []any) *redis.Cmd {
	cmd := newScriptCmd(ctx, args)
	_ = p.Process(ctx, cmd)
	return cmd
}

// processor is what both clients and pipelines offer to send a command.
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// runOnce runs the limiter script once on rdb (a client, not a pipeline); on
// NOSCRIPT (a restarted or flushed server: it did not run) it loads the
// script and runs it again.
func runOnce(ctx context.Context, rdb redis.UniversalClient, keys []string, args []any) *redis.Cmd {
	return sendAgainOnNoScript(ctx, rdb, queueOnce(ctx, rdb, keys, args), keys, args)
}

// sendAgainOnNoScript returns cmd, a run of the limiter script, unless its reply
// was NOSCRIPT: then it loads the script on rdb and runs it once more on
// rdb (againOnNoScript).
func sendAgainOnNoScript(ctx context.Context, rdb redis.UniversalClient, cmd *redis.Cmd, keys []string, args []any) *redis.Cmd {
	return againOnNoScript(ctx, rdb, limitsScript, cmd, 0, func(ctx context.Context) *redis.Cmd { return queueOnce(ctx, rdb, keys, args) })
}

// againOnNoScript returns cmd, a run of script s sent in a pipeline
// (where go-redis cannot fall back to EVAL), unless its reply was
// NOSCRIPT (a restarted, flushed or failed-over server: it did not run):
// then it loads s on every shard of rdb (redisscript.Reload) and returns
// what send, which sends the run once more on rdb, returns; both under
// ctx, bounded by timeout unless it is 0. A failed load is the returned
// command's error.
func againOnNoScript(ctx context.Context, rdb redis.UniversalClient, s *redis.Script, cmd *redis.Cmd, timeout time.Duration,
	send func(ctx context.Context) *redis.Cmd) *redis.Cmd {
	if !redisscript.IsNoScript(cmd.Err()) {
		return cmd
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	if _, err := redisscript.Reload(ctx, rdb, s, cmd.Err()); err != nil {
		failed := redis.NewCmd(ctx)
		failed.SetErr(err)
		return failed
	}
	return send(ctx)
}
