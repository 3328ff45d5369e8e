package engine

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// decideSingle decides a batch on one primary (a single server or the
// primary Sentinel names): one run of limits.lua for every decision of the
// batch (op "decide", or "decide_rules" when a request has rate-limit
// rules: rules.go), all levels atomic, with the along commands of its calls queued
// after it on the same pipeline: one round trip. A NOSCRIPT reply loads
// the script and runs the batch again (it did not run the first time).
// The run is never retried otherwise (see runOnce).
func (e *Engine) decideSingle(ctx context.Context, a *batchArgs, live []*call) {
	alongs := false
	for _, c := range live {
		alongs = alongs || c.along != nil
	}
	a.changes, a.await = e.changes0, e.awaitRestore
	keys, args, rules := e.packBatch(a, live)
	e.trips.Add(1)
	var cmd *redis.Cmd
	if !alongs {
		cmd = e.runOnce(ctx, e.rdb, keys, args)
	} else {
		pipe := e.rdb.Pipeline()
		cmd = queueOnce(ctx, pipe, keys, args)
		for _, c := range live {
			if c.along != nil {
				c.along(ctx, pipe)
			}
		}
		_, _ = pipe.Exec(ctx)
		cmd = sendAgainOnNoScript(ctx, e.rdb, cmd, keys, args)
	}
	reply, err := cmd.Text()
	if rules {
		reply, err = splitReply(reply, err, live)
	}
	if err == nil && len(reply) != len(live)*replySize {
		err = fmt.Errorf("reply has %d bytes, want %d", len(reply), len(live)*replySize)
	}
	for i, c := range live {
		if err != nil {
			c.answer(nil, err)
			continue
		}
		r := decodeReply(reply, i)
		c.answer(&r, nil)
	}
}
