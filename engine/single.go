package engine

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// single decides batches on one primary (a single server or the primary
// Sentinel names).
type single struct {
	r             *runner
	concurrencyUS int64 // the lease of CONCURRENCY members (holds)
}

// decide decides a batch with one run of op "decide" for every decision
// of it, all levels and rules atomic, with the along commands of its calls
// queued after it on the same pipeline: one round trip. A NOSCRIPT reply
// loads the script and runs the batch again (it did not run the first
// time). The run is never retried otherwise (onceCmd).
func (s *single) decide(deadline time.Duration, a *runArgs, live []*call) {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	r := s.r
	alongs := false
	for _, c := range live {
		a.addDecision(c.req, nil, rulesAt{}, customerAt{}, s.concurrencyUS)
		alongs = alongs || c.along != nil
	}
	keys, args, run := a.build(r.decideOpts(0, live[0].clock))
	r.trips.Add(1)
	sent := time.Now()
	var cmd *redis.Cmd
	if !alongs {
		cmd = runOnce(ctx, r.rdb, keys, args)
	} else {
		pipe := r.rdb.Pipeline()
		cmd = queueOnce(ctx, pipe, keys, args)
		queueAlong(ctx, pipe, live)
		_, _ = pipe.Exec(ctx)
		cmd = sendAgainOnNoScript(ctx, r.rdb, cmd, keys, args)
	}
	reply, err := cmd.Text()
	r.answerRun(live, run, sent, reply, err)
}
