package limiter

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redisscript"
)

// Decisions of concurrent requests are decided together: each Decide
// queues its request, and up to maxFlushers flushers (callers, or
// goroutines they hand over to) take everything queued (at most maxBatch
// requests) and decide it with one run of limiter.lua, one round trip for
// the lot. Under load a request waits for at most the runs in flight
// before its own; alone, it is sent at once by its own goroutine. The
// script decides the batch in queue order, each decision exactly as if it
// ran alone after the ones before it (states are read once, carried
// between decisions in the script, and written once), and a script run is
// atomic in Redis, so two decisions on one bucket never race: batching
// changes the Redis work and the number of round trips, not any decision.
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

// replySize is the bytes of one decision in the script's reply ('<i8' x 9).
const replySize = 8 * rLen

// call is one queued decision.
type call struct {
	ctx   context.Context // the caller's context with Decide's deadline
	req   *Request
	clock string // the clock argument; a batch holds calls of one value
	along func(ctx context.Context, p redis.Pipeliner)
	taken bool // a flusher took it (under batcher.mu)
	res   [rLen]int64
	plan  int
	err   error
	done  chan struct{}
}

// batcher is the queue of decisions waiting for a flusher.
type batcher struct {
	mu       sync.Mutex
	queue    []*call
	spare    []*call // the previous queue's array, reused
	flushers int
}

// enqueue queues c. When fewer than maxFlushers run, the caller becomes
// one: it sends batches from the head of the queue until a flusher took
// its own call (it sends nothing after its own batch), then hands its place
// to a new goroutine if calls are still queued. So a request alone is
// decided without any goroutine switch, and no caller sends more than the
// batches ahead of its own.
func (l *Limiter) enqueue(c *call) {
	b := &l.batch
	b.mu.Lock()
	b.queue = append(b.queue, c)
	start := b.flushers < maxFlushers
	if start {
		b.flushers++
	}
	b.mu.Unlock()
	if start {
		l.flush(c)
	}
}

// flush sends queued batches while it holds a flusher's place: until the
// queue is empty, or, when own is not nil, until own was taken (then a
// goroutine takes over any calls left).
func (l *Limiter) flush(own *call) {
	b := &l.batch
	a := argsPool.Get().(*batchArgs)
	defer argsPool.Put(a)
	for {
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.flushers--
			b.mu.Unlock()
			return
		}
		if own != nil && own.taken {
			b.mu.Unlock()
			go l.flush(nil) // keeps this flusher's place
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
		for _, c := range batch {
			c.taken = true
		}
		if n < len(b.queue) {
			b.queue = b.queue[n:]
		} else {
			b.queue, b.spare = b.spare[:0], nil
		}
		b.mu.Unlock()
		l.send(a, batch)
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

// send decides one batch in one script run, with the along commands of its
// calls queued after it on the same pipeline, under the earliest deadline
// of its calls. Calls whose caller has gone or whose deadline passed while
// queued are not sent (nothing is charged for them). A NOSCRIPT reply
// loads the script and runs the batch again (it did not run the first
// time). A panic (in an along function, say) fails the batch's calls with
// an error instead of leaving their callers waiting.
func (l *Limiter) send(a *batchArgs, batch []*call) {
	a.reset()
	live := a.live[:0]
	closed := 0 // live calls answered so far
	defer func() {
		if r := recover(); r != nil {
			for _, c := range live[closed:] {
				c.err = fmt.Errorf("batch panicked: %v", r)
				close(c.done)
			}
			clear(live)
		}
	}()
	deadline := time.Now().Add(l.timeout)
	alongs := false
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.err = err
			close(c.done)
			continue
		}
		plan, err := a.add(c.req)
		if err != nil {
			c.err = err
			close(c.done)
			continue
		}
		c.plan = plan
		alongs = alongs || c.along != nil
		if d, ok := c.ctx.Deadline(); ok && d.Before(deadline) {
			deadline = d
		}
		live = append(live, c)
	}
	a.live = live
	if len(live) == 0 {
		return
	}
	// A lone call runs under its own context, which carries its deadline
	// (no second context and timer per request when there is no batching).
	ctx := live[0].ctx
	if len(live) > 1 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(context.Background(), deadline)
		defer cancel()
	}
	keys, args := a.keysAndArgs(live[0].clock, len(live))
	var cmd *redis.Cmd
	if !alongs {
		cmd = l.run(ctx, decideScript, keys, args)
	} else {
		pipe := l.rdb.Pipeline()
		cmd = decideScript.EvalSha(ctx, pipe, keys, args...)
		for _, c := range live {
			if c.along != nil {
				c.along(ctx, pipe)
			}
		}
		_, _ = pipe.Exec(ctx)
		if redisscript.IsNoScript(cmd.Err()) {
			cmd = l.reload(ctx, decideScript, keys, args)
		}
	}
	reply, err := cmd.Text()
	if err == nil && len(reply) != len(live)*replySize {
		err = fmt.Errorf("reply has %d bytes, want %d", len(reply), len(live)*replySize)
	}
	for i, c := range live {
		if err != nil {
			c.err = err
		} else {
			c.res = decodeReply(reply, i)
		}
		closed++
		close(c.done)
	}
	clear(live)
}

// run runs s with EVALSHA; on NOSCRIPT (a restarted or flushed server) it
// loads the script and runs it again. The returned command holds the reply
// or the error.
func (l *Limiter) run(ctx context.Context, s *redis.Script, keys []string, args []any) *redis.Cmd {
	cmd := s.EvalSha(ctx, l.rdb, keys, args...)
	if redisscript.IsNoScript(cmd.Err()) {
		return l.reload(ctx, s, keys, args)
	}
	return cmd
}

// reload loads s (after a NOSCRIPT reply) and runs it with EVALSHA.
func (l *Limiter) reload(ctx context.Context, s *redis.Script, keys []string, args []any) *redis.Cmd {
	if err := s.Load(ctx, l.rdb).Err(); err != nil {
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(fmt.Errorf("reload script: %w", err))
		return cmd
	}
	return s.EvalSha(ctx, l.rdb, keys, args...)
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

// batchArgs lays out KEYS and ARGV of one limiter.lua run as its header
// states: state keys (buckets, quotas) first, then usage hashes, each key
// once, and the decisions packed into one string. Reused by a flusher.
type batchArgs struct {
	state, usage []string
	stateIdx     map[string]uint16 // 1-based index in state
	usageIdx     map[string]uint16 // 1-based index in usage
	spec         []byte
	keys         []string
	args         [argCount]any
	live         []*call
}

// argCount is the number of ARGV entries of limiter.lua.
const argCount = 4

var argsPool = sync.Pool{New: func() any {
	return &batchArgs{stateIdx: map[string]uint16{}, usageIdx: map[string]uint16{}}
}}

func (a *batchArgs) reset() {
	clear(a.state)
	clear(a.usage)
	a.state, a.usage, a.spec = a.state[:0], a.usage[:0], a.spec[:0]
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

// add packs req as limiter.lua's header states and returns the index of
// its plan bucket (-1 if none). It fails only for more than maxBuckets
// buckets.
func (a *batchArgs) add(req *Request) (plan int, err error) {
	n := len(req.Buckets)
	if n > maxBuckets {
		return -1, fmt.Errorf("limiter: decide: %d buckets, at most %d", n, maxBuckets)
	}
	plan = -1
	for i := range req.Buckets {
		if req.Buckets[i].Level == LevelPlan || req.Buckets[i].Level == LevelPlanMethod {
			plan = i
			break
		}
	}
	var qIdx, uIdx uint16
	var qLimit int32
	var qCode, qOffset uint8
	if q := req.Quota; q != nil {
		qIdx = index(&a.state, a.stateIdx, q.Key)
		qLimit, qCode, qOffset = max(0, q.Limit), periodCode(q.Period), uint8(min(max(q.Offset, 0), math.MaxUint8))
	}
	if req.UsageKey != "" {
		uIdx = index(&a.usage, a.usageIdx, req.UsageKey)
	}
	le := binary.LittleEndian
	s := append(a.spec, uint8(n), uint8(plan+1))
	s = le.AppendUint16(s, qIdx)
	s = le.AppendUint32(s, uint32(qLimit))
	s = append(s, qCode, qOffset)
	s = le.AppendUint16(s, uIdx)
	for i := range req.Buckets {
		b := &req.Buckets[i]
		s = le.AppendUint16(s, index(&a.state, a.stateIdx, b.Key))
		s = le.AppendUint64(s, math.Float64bits(b.RateLimit))
		s = le.AppendUint32(s, uint32(b.BurstLimit))
	}
	a.spec = s
	return plan, nil
}

// keysAndArgs returns KEYS and ARGV for the decisions added so far. Both
// alias a's buffers: use them before the next reset.
func (a *batchArgs) keysAndArgs(clock string, decisions int) ([]string, []any) {
	a.keys = append(append(a.keys[:0], a.state...), a.usage...)
	a.args = [argCount]any{clock, decisions, len(a.state), a.spec}
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
