package engine

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/script"
)

// States of a call (call.state): queued, then sent by a flusher, then
// answered by it; or abandoned by its caller, who left, while queued or
// sent (never along calls once sent: their caller reads the along
// commands' replies).
const (
	callQueued int32 = iota
	callSent
	callAnswered
	callAbandoned
)

// call is one queued decision.
type call struct {
	ctx   context.Context // the caller's context
	req   *keyedRequest
	clock string // the clock argument; a batch holds calls of one value
	along alongQueue
	res   script.DecisionReply
	rules []script.RuleReply
	err   error
	done  chan struct{}
	state atomic.Int32
	// answered is set by answer, on the flusher's goroutine only.
	answered bool
	// run is the number of the run that decided the call (its run window,
	// decide.lua), 0 for a run without one.
	run int64
	// takenAt is limit.Decision.TakenAt of a lease taken on Redis Cluster
	takenAt []time.Time
	// own holds the request when Decide resolved it (no allocation of its
	// own).
	own        keyedRequest
	ownBuckets [4]keyedBucket
	ownQuota   keyedQuota
	ownCust    keyedQuota
}

// again returns a new call of c's request for a decision sent again after
// its quota period table missed Redis's time: the table is made around
// the time of c's reply. A cache read done along c is not done again.
func (c *call) again() *call {
	n := &call{ctx: c.ctx, req: c.req, done: make(chan struct{})}
	if c.along != nil && !c.along.Done() {
		n.along = c.along
	}
	for _, q := range []*keyedQuota{c.req.Quota, c.req.Customer} {
		if q != nil && q.tabled() {
			q.Bounds = script.TableOf(q.Cal, time.UnixMicro(c.res.NowUS))
		}
	}
	return n
}

// answer ends c with err, or with the reply already in c.res and c.rules
// when err is nil; send wakes its caller at the end of the batch. Only the
// flusher that sent c calls it, once.
func (c *call) answer(err error) {
	c.err = err
	c.answered = true
	c.state.CompareAndSwap(callSent, callAnswered)
}

// abandon gives up on c for its caller, who left: while c is queued, or
// once sent unless it has along commands (their replies are read by the
// caller, so it waits for the run). It reports whether c was abandoned;
// if not, c is or will be answered.
func (c *call) abandon() bool {
	if c.state.CompareAndSwap(callQueued, callAbandoned) {
		return true
	}
	return c.along == nil && c.state.CompareAndSwap(callSent, callAbandoned)
}

// anyReplied reports whether Redis answered any of live: a decision, or an
// error reply.
func anyReplied(live []*call) bool {
	for _, c := range live {
		if c.err == nil || isReply(c.err) {
			return true
		}
	}
	return false
}

// queueAlong queues the along commands of the calls of live on pipe.
func queueAlong(ctx context.Context, pipe redis.Pipeliner, live []*call) {
	for _, c := range live {
		if c.along != nil {
			c.along.queue(ctx, pipe)
		}
	}
}

// alongQueue queues commands in the round trip of a decision: a cache
// read (lookupAlong). Done reports whether it did.
type alongQueue interface {
	queue(ctx context.Context, p redis.Pipeliner)
	Done() bool
}
