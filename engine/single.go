package engine

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// decideSingle decides a batch on one primary (a single server or the
// primary Sentinel names): one run of op "decide" for every decision of
// the batch, all levels and rules atomic, with the along commands of its
// calls queued after it on the same pipeline: one round trip. A NOSCRIPT
// reply loads the script and runs the batch again (it did not run the
// first time). The run is never retried otherwise (onceCmd).
func (e *Engine) decideSingle(ctx context.Context, a *runArgs, live []*call) {
	alongs := false
	for _, c := range live {
		a.addDecision(c.req, nil, rulesAt{}, e.holds.leaseUS)
		alongs = alongs || c.along != nil
	}
	keys, args, run := a.build(runOpts{clock: live[0].clock, changes: e.changes0, window: e.keys.RunWindow(0, e.node),
		run: e.runs.Add(1), await: e.awaitRestore, leaseUS: e.leaseHold.Microseconds()})
	e.trips.Add(1)
	sent := time.Now()
	var cmd *redis.Cmd
	if !alongs {
		cmd = e.runOnce(ctx, e.rdb, keys, args)
	} else {
		pipe := e.rdb.Pipeline()
		cmd = queueOnce(ctx, pipe, keys, args)
		queueAlong(ctx, pipe, live)
		_, _ = pipe.Exec(ctx)
		cmd = sendAgainOnNoScript(ctx, e.rdb, cmd, keys, args)
	}
	reply, err := cmd.Text()
	e.answerRun(live, run, sent, reply, err)
}
