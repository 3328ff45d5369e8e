package engine

import (
	"context"
	_ "embed"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redisscript"
)

//go:embed limits.lua
var limitsSource string

//go:embed rules.lua
var rulesSource string

// limitsScript is limits.lua with rules.lua inserted before its dispatch
// (assemble), hashed once: runs send its SHA1 (EVALSHA).
var limitsScript = redis.NewScript(assemble(limitsSource, rulesSource))

// dispatchLine starts limits.lua's dispatch, the last lines of the file:
// rules.lua goes right before it, where every local of limits.lua
// (its functions and its ops table) is in scope.
const dispatchLine = "\nlocal run = ops[ARGV[1]]"

// assemble inserts rules (rules.lua) into limits (limits.lua) before its
// dispatch. This is the one step that joins the two files: rules.lua uses
// the locals of limits.lua it lists in its header and adds its operations
// to ops. It panics when limits has no dispatch line (a broken build).
func assemble(limits, rules string) string {
	i := strings.LastIndex(limits, dispatchLine)
	if i < 0 {
		panic("engine: limits.lua has no dispatch line " + strconv.Quote(dispatchLine[1:]))
	}
	return limits[:i+1] + rules + limits[i:]
}

// Operations of the limits script (its ARGV[1]); rules.lua adds the last
// five.
const (
	opDecide      = "decide"
	opRefund      = "refund"
	opUnlease     = "unlease"
	opQuota       = "quota"
	opSettle      = "settle"
	opRules       = "rules"
	opDecideRules = "decide_rules"
	opUnrules     = "unrules"
	opRenew       = "renew"
)

// onceCmd is a command go-redis must never send twice: a limits.lua run
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

// queueOnce queues an EVALSHA of limits.lua with keys and args on p (a
// client or a pipeline) as a onceCmd and returns its command.
func queueOnce(ctx context.Context, p processor, keys []string, args []any) *redis.Cmd {
	all := make([]any, 0, 3+len(keys)+len(args))
	all = append(all, "evalsha", limitsScript.Hash(), len(keys))
	for _, k := range keys {
		all = append(all, k)
	}
	all = append(all, args...)
	cmd := redis.NewCmd(ctx, all...)
	cmd.SetFirstKeyPos(3)
	_ = p.Process(ctx, onceCmd{cmd})
	return cmd
}

// processor is what both clients and pipelines offer to send a command.
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// runOnce runs limits.lua once on rdb (a client, not a pipeline); on
// NOSCRIPT (a restarted or flushed server: it did not run) it loads the
// script and runs it again.
func (e *Engine) runOnce(ctx context.Context, rdb redis.UniversalClient, keys []string, args []any) *redis.Cmd {
	return sendAgainOnNoScript(ctx, rdb, queueOnce(ctx, rdb, keys, args), keys, args)
}

// sendAgainOnNoScript returns cmd, a run of limits.lua, unless its reply
// was NOSCRIPT: then it loads the script on rdb and runs it once more on
// rdb (redisscript.Reload).
func sendAgainOnNoScript(ctx context.Context, rdb redis.UniversalClient, cmd *redis.Cmd, keys []string, args []any) *redis.Cmd {
	again, err := redisscript.Reload(ctx, rdb, limitsScript, cmd.Err())
	if err != nil {
		failed := redis.NewCmd(ctx)
		failed.SetErr(err)
		return failed
	}
	if !again {
		return cmd
	}
	return queueOnce(ctx, rdb, keys, args)
}
