package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Decisions of concurrent requests are decided together: each Decide
// queues its request, and up to maxFlushers flusher goroutines take
// everything queued (at most maxBatch requests) and decide it with one run
// of limits.lua (op "decide"), one round trip for the lot. Under load a
// request waits for at most the runs in flight before its own; alone, a
// flusher is started for it at once. The script decides the batch in
// queue order, each decision exactly as if it ran alone after the ones
// before it (states are read once, carried between decisions in the
// script, and written once), and a script run is atomic in Redis, so two
// decisions on one bucket never race: batching changes the Redis work and
// the number of round trips, not any decision.
//
// How long a caller waits (docs/behaviour.md, "When Redis cannot
// decide"): a call queued behind the node's own work waits on, however
// long that takes, since the queue is the gateway's, not Redis's; and a
// sent run is waited for until its reply, a connection error, or
// runTimeout (1 s). A reply that comes late on a live connection is not a
// failure: under load the node's own CPU delays reading it (a goroutine
// woken by the network can wait tens of milliseconds for a core), and the
// reply is exact, whereas failing the decision would admit without limits
// and leave it uncharged, or charge it twice if the run happened. A run
// fails only when Redis does not answer: connection refused or broken, an
// error reply, or runTimeout passed. After such a failure Redis counts as
// down: for Options.Timeout, and while the next run that tries it again
// is in flight, decisions fail at once (ErrRedisDown) instead of queueing
// behind it; the run that then tries Redis again has a deadline of
// Options.Timeout (go-redis's dial retries would hold it 0.4 s on a
// refused connection). A failed decision of a caller that admits it
// (Options.FailOpen) is charged later (failopen.go).
//
// maxFlushers is 2: Redis is the resource every gateway node shares, and
// fewer runs in flight make larger batches, so less Redis CPU per decision
// (on the 2-core bench machine, 2 against 4 took uncached requests at 32
// connections from 0.30 to 0.19 round trips and from 55 to 45 µs of Redis
// CPU each, with p50 latency no worse); two runs of up to maxBatch
// decisions in flight still cover a remote Redis's round trip.
const (
	maxFlushers = 2
	maxBatch    = 128
)

// replySize is the bytes of one decision in the script's reply ('<i8' x 10).
const replySize = 8 * rLen

// runTimeout is the deadline of one run once sent (Options.Timeout when
// that is longer). A run past it fails (the connection is dropped, so the run may
// or may not have happened: settleCall).
const runTimeout = time.Second

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
	along func(ctx context.Context, p redis.Pipeliner)
	res   [rLen]int64
	err   error
	done  chan struct{}
	state atomic.Int32
	// answered is set by answer, on the flusher's goroutine only; lost
	// too, when the caller had left.
	answered, lost bool
	// charge marks a charge of a request admitted without a decision
	// (failopen.go): nobody waits for it.
	charge bool
	// ruleRes holds the results of the request's rules (rules.go), set
	// before answer.
	ruleRes []ruleResult
	// own holds the request when Decide resolved it (no allocation of
	// its own).
	own        keyedRequest
	ownBuckets [4]keyedBucket
	ownQuota   keyedQuota
}

// batcher is the queue of decisions waiting for a flusher.
type batcher struct {
	mu       sync.Mutex
	queue    []*call
	spare    []*call // the previous queue's array, reused
	flushers int
}

// enqueue queues c and, when fewer than maxFlushers run, starts a
// flusher goroutine (the caller never sends itself, so that it can give
// up while Redis does not answer).
func (e *Engine) enqueue(c *call) {
	b := &e.batch
	b.mu.Lock()
	b.queue = append(b.queue, c)
	start := b.flushers < maxFlushers
	if start {
		b.flushers++
	}
	b.mu.Unlock()
	if start {
		go e.flush()
	}
}

// flush sends queued batches until the queue is empty, with the pending
// charges (failopen.go) at the head of a batch once Redis answers again.
func (e *Engine) flush() {
	b := &e.batch
	a := argsPool.Get().(*batchArgs)
	defer argsPool.Put(a)
	for {
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.flushers--
			b.mu.Unlock()
			return
		}
		n := min(len(b.queue), maxBatch)
		for i := 1; i < n; i++ { // one clock value per run (test clock only)
			if b.queue[i].clock != b.queue[0].clock {
				n = i
				break
			}
		}
		batch := b.queue[:n:n]
		if n < len(b.queue) {
			b.queue = b.queue[n:]
		} else {
			b.queue, b.spare = b.spare[:0], nil
		}
		b.mu.Unlock()
		if charges := e.charges.take(maxBatch-n, batch[0].clock, e.downAt.Load() == 0); len(charges) > 0 {
			e.send(a, append(charges, batch...))
		} else {
			e.send(a, batch)
		}
		if n > 1 {
			clear(batch)
			b.mu.Lock()
			if b.spare == nil {
				b.spare = batch[:0]
			}
			b.mu.Unlock()
		}
	}
}

// send decides one batch (single.go on one primary, cluster.go on Redis
// Cluster), with the along commands of its calls in the same round trip,
// under runTimeout. Calls whose caller has gone are not sent, nor, while
// Redis is down, any call (ErrRedisDown). A panic (in an along function,
// say) fails the batch's calls that were not answered yet with an error
// instead of leaving their callers waiting. At the end the run's outcome
// is recorded (runEnded: so a caller that decides again sees whether
// Redis is down), every call is settled (failopen.go), and then the
// callers are woken.
func (e *Engine) send(a *batchArgs, batch []*call) {
	a.reset()
	live := a.live[:0]
	ran := false
	defer func() {
		r := recover()
		if r != nil {
			for _, c := range live {
				if !c.answered {
					c.answer(nil, fmt.Errorf("batch panicked: %v", r))
				}
			}
		}
		switch {
		case ran && r != nil: // says nothing of Redis
			e.inFlight.Add(-1)
		case ran:
			e.runEnded(live)
		}
		for _, c := range batch {
			e.settleCall(c)
		}
		for _, c := range batch {
			if c.answered {
				close(c.done)
			}
		}
		clear(live)
	}()
	for _, c := range batch {
		if !c.state.CompareAndSwap(callQueued, callSent) {
			continue // the caller left while it was queued
		}
		if err := c.ctx.Err(); err != nil {
			c.answer(nil, err)
			continue
		}
		if len(c.req.Buckets) > maxBuckets {
			c.answer(nil, fmt.Errorf("%d buckets, at most %d", len(c.req.Buckets), maxBuckets))
			continue
		}
		if err := checkRules(c.req); err != nil {
			c.answer(nil, err)
			continue
		}
		live = append(live, c)
	}
	a.live = live
	if len(live) == 0 {
		return
	}
	if err := e.down(time.Now()); err != nil { // queued before Redis was found down
		for _, c := range live {
			c.answer(nil, err)
		}
		return
	}
	deadline := max(runTimeout, e.timeout)
	if e.downAt.Load() != 0 { // a run that tries Redis again: see down
		deadline = e.timeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	e.runStarted()
	ran = true
	if e.cluster != nil {
		e.cluster.decide(ctx, live)
	} else {
		e.decideSingle(ctx, a, live)
	}
}

// answer ends c with the script's values res (nil with err); send wakes
// its caller at the end of the batch. Only the flusher that sent c calls
// it, once. When the caller left, c is marked lost.
func (c *call) answer(res *[rLen]int64, err error) {
	if res != nil {
		c.res = *res
	}
	c.err = err
	c.answered = true
	c.lost = !c.state.CompareAndSwap(callSent, callAnswered)
}

// decodeReply returns the values of decision i of the script's reply.
func decodeReply(reply string, i int) (r [rLen]int64) {
	off := i * replySize
	for j := range r {
		p := off + 8*j
		r[j] = int64(uint64(reply[p]) | uint64(reply[p+1])<<8 | uint64(reply[p+2])<<16 | uint64(reply[p+3])<<24 |
			uint64(reply[p+4])<<32 | uint64(reply[p+5])<<40 | uint64(reply[p+6])<<48 | uint64(reply[p+7])<<56)
	}
	return r
}

// batchArgs lays out KEYS and ARGV of one limits.lua run as its header
// states: state keys (buckets, quotas) first, then usage hashes, each key
// once, and the decisions packed into one string. Reused by a flusher.
type batchArgs struct {
	state, usage []string
	stateIdx     map[string]uint16 // 1-based index in state
	usageIdx     map[string]uint16 // 1-based index in usage
	// changes is the usage change set of the run's slot (usagesource.go),
	// named in KEYS when the run counts usage; "" for none.
	changes string
	// await refuses the run's keyed decisions until the restore mark is
	// in changes (Options.AwaitRestore).
	await bool
	// quotaOnly is true when a decision has a quota but no usage count
	// (limit.Request.Uncounted): the change set is named for the restore
	// gate.
	quotaOnly bool
	spec      []byte
	keys      []string
	args      [argCount]any
	live      []*call
}

// argCount is the number of ARGV entries of limits.lua's op "decide".
const argCount = 7

var argsPool = sync.Pool{New: func() any { return newBatchArgs() }}

func newBatchArgs() *batchArgs {
	return &batchArgs{stateIdx: map[string]uint16{}, usageIdx: map[string]uint16{}}
}

func (a *batchArgs) reset() {
	clear(a.state)
	clear(a.usage)
	a.state, a.usage, a.spec, a.changes, a.await = a.state[:0], a.usage[:0], a.spec[:0], "", false
	a.quotaOnly = false
	clear(a.stateIdx)
	clear(a.usageIdx)
}

// index returns k's 1-based index in *list, adding it when new.
func index(list *[]string, idx map[string]uint16, k string) uint16 {
	if i, ok := idx[k]; ok {
		return i
	}
	*list = append(*list, k)
	i := uint16(len(*list))
	idx[k] = i
	return i
}

// maxBuckets is the most buckets one request may name (the script packs
// the count in a byte); a request has at most three.
const maxBuckets = math.MaxUint8

// remote is the outcome of a bucket decided in another slot (Redis
// Cluster's shared buckets, taken first: cluster.go), packed for the
// script in place of the bucket.
type remote struct {
	// decided marks the buckets decided elsewhere; the others are packed
	// with their key.
	decided bool
	// admitted is true when the bucket had a token (and gave one).
	admitted bool
	// retryUS is its retry-after in µs when it refused (-1: never).
	retryUS int64
}

// add packs req as one decision of limits.lua's op "decide" (the caller
// checked len(req.Buckets) <= maxBuckets). rem, when not nil, has one
// entry per bucket: those decided elsewhere are packed with key index 0.
func (a *batchArgs) add(req *keyedRequest, rem []remote) {
	var qIdx, uIdx uint16
	var qLimit int32
	var qCode, qOffset uint8
	if q := req.Quota; q != nil {
		qIdx = index(&a.state, a.stateIdx, q.Key)
		qLimit, qCode, qOffset = max(0, q.Limit), periodCode(q.Period), uint8(min(max(q.Offset, 0), math.MaxUint8))
	}
	if req.UsageKey != "" {
		uIdx = index(&a.usage, a.usageIdx, req.UsageKey)
	} else if qIdx != 0 {
		a.quotaOnly = true
	}
	le := binary.LittleEndian
	s := append(a.spec, uint8(len(req.Buckets)), uint8(req.planIndex()+1))
	s = le.AppendUint16(s, qIdx)
	s = le.AppendUint32(s, uint32(qLimit))
	s = append(s, qCode, qOffset)
	s = le.AppendUint16(s, uIdx)
	s = le.AppendUint16(s, max(req.Want, 1))
	for i := range req.Buckets {
		b := &req.Buckets[i]
		if rem != nil && rem[i].decided {
			s = appendRemote(s, rem[i])
			continue
		}
		s = le.AppendUint16(s, index(&a.state, a.stateIdx, b.Key))
		s = le.AppendUint64(s, math.Float64bits(b.RateLimit))
		s = le.AppendUint32(s, uint32(b.BurstLimit))
	}
	a.spec = s
}

// appendRemote packs a bucket decided in another slot: key index 0,
// its retry-after in µs as the rate, 1 or 0 as the burst.
func appendRemote(s []byte, r remote) []byte {
	le := binary.LittleEndian
	s = le.AppendUint16(s, 0)
	s = le.AppendUint64(s, math.Float64bits(float64(r.retryUS)))
	if r.admitted {
		return le.AppendUint32(s, 1)
	}
	return le.AppendUint32(s, 0)
}

// addRefund packs a give-back of tokens to the bucket whose state is key
// (limits.lua's op "refund": under the limits the state is stored with).
func (a *batchArgs) addRefund(key string, tokens int32) {
	le := binary.LittleEndian
	s := le.AppendUint16(a.spec, index(&a.state, a.stateIdx, key))
	a.spec = le.AppendUint32(s, uint32(tokens))
}

// refundArgs returns KEYS and ARGV of op "refund" for the give-backs added
// so far (they alias a's buffers, as keysAndArgs).
func (a *batchArgs) refundArgs(clock string) ([]string, []any) {
	a.keys = append(a.keys[:0], a.state...)
	return a.keys, []any{opRefund, clock, a.spec}
}

// keysAndArgs returns KEYS and ARGV for the decisions added so far: the
// usage change set, when the run counts usage, is the last key. Both alias
// a's buffers: use them before the next reset.
func (a *batchArgs) keysAndArgs(clock string, decisions int) ([]string, []any) {
	a.keys = append(append(a.keys[:0], a.state...), a.usage...)
	changes, await := "", ""
	if a.changes != "" && (len(a.usage) > 0 || a.quotaOnly) {
		a.keys = append(a.keys, a.changes)
		changes = strconv.Itoa(len(a.keys))
		if a.await {
			await = "1"
		}
	}
	a.args = [argCount]any{opDecide, clock, decisions, len(a.state), a.spec, changes, await}
	return a.keys, a.args[:]
}

// periodCode is the script's code for a quota period; anything unknown
// counts as DAY.
func periodCode(p string) uint8 {
	switch p {
	case "WEEK":
		return 1
	case "MONTH":
		return 2
	default:
		return 0
	}
}
