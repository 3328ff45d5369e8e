package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redisscript"
	"tollgate/keyspace"
	"tollgate/limit"
)

// Clock is a source of time for the scripts in place of Redis TIME: tests
// inject one (the script is given its time); nil, or a Clock that returns
// the zero time, means Redis TIME. Production never sets one.
type Clock func() time.Time

// runTimeout is the deadline of one run once sent (Options.Timeout when
// that is longer). A run past it fails (the connection is dropped, so the
// run may or may not have happened: its decisions are undecided, with the
// run's number for the fail-open charges).
const runTimeout = time.Second

// ReplyDeadline is how long a node waits for a reply of its limiter Redis
// on a live connection, given Options.Timeout: runTimeout, or timeout when
// longer. A key lookup waits as long, so that a busy node, not a down
// Redis, never answers 503.
func ReplyDeadline(timeout time.Duration) time.Duration { return max(runTimeout, timeout) }

// refundTimeout bounds a give-back (phase 3 of Redis Cluster, a
// release of CONCURRENCY requests), which runs after the callers were
// answered.
const refundTimeout = time.Second

// runner sends the limiter script's runs of one node: what every run
// shares (the Redis client, key names, the node's number and run count,
// the clock, the measured offset to Redis time), the resends of runs that
// provably did not run, and the answers of a run's calls. Everything above
// it in the engine goes to Redis through it.
type runner struct {
	rdb  redis.UniversalClient
	cc   *redis.ClusterClient // rdb on Redis Cluster; nil on one primary
	keys keyspace.Space
	// clock replaces Redis TIME in the scripts (tests); nil means Redis TIME
	clock Clock
	// node numbers this engine's runs (the run windows of decide.lua);
	// runs counts them per slot (one on one primary), so that a slot's
	// window of 256 numbers spans 256 runs of that slot, however many the
	// node sends to other slots meanwhile
	node uint32
	runs []atomic.Int64
	// offset is Redis time minus the node's, in µs, as the last reply
	// showed it
	offset atomic.Int64
	// trips counts the round trips of decisions and lease give-backs
	trips atomic.Int64
	// resent counts runs sent again after a reply proved they did not run
	resent atomic.Int64
	// changes0 is the usage change set of slot 0: on one primary, every
	// key's
	changes0     string
	awaitRestore bool
	leaseHoldUS  int64
}

// clockArg returns the scripts' time argument: the injected clock's time
// in Unix microseconds, or "" for Redis TIME.
func (r *runner) clockArg() string {
	if r.clock == nil {
		return ""
	}
	t := r.clock()
	if t.IsZero() {
		return ""
	}
	return strconv.FormatInt(t.UnixMicro(), 10)
}

// slotOf returns the slot runs of key go to: its Redis Cluster slot, 0 on
// one primary.
func (r *runner) slotOf(key string) int {
	if r.cc == nil {
		return 0
	}
	return keyspace.Slot(key)
}

// changesOf returns the usage change set of slot (slot 0's on one
// primary).
func (r *runner) changesOf(slot int) string {
	if r.cc == nil {
		return r.changes0
	}
	return r.keys.UsageChanges(slot)
}

// nextRun returns the number of the node's next run in slot.
func (r *runner) nextRun(slot int) int64 { return r.runs[slot].Add(1) }

// decideOpts returns the run-wide options of a run of op "decide" in slot,
// with its own new number.
func (r *runner) decideOpts(slot int, clock string) runOpts {
	return runOpts{clock: clock, changes: r.changesOf(slot), window: r.keys.RunWindow(slot, r.node),
		run: r.nextRun(slot), await: r.awaitRestore, leaseUS: r.leaseHoldUS}
}

// observe records the Redis time redisUS a run sent at the node's time
// sent reported: the node then estimates Redis time as its own plus the
// offset. Redis read its time after the send, so the estimate is never
// ahead of Redis by more than the clocks drift.
func (r *runner) observe(sent time.Time, redisUS int64) {
	r.offset.Store(redisUS - sent.UnixMicro())
}

// estimate returns the time the scripts will run at: the injected
// clock's, else the estimate of Redis time now.
func (r *runner) estimate() time.Time {
	if r.clock != nil {
		if t := r.clock(); !t.IsZero() {
			return t
		}
	}
	return r.redisNow(time.Now())
}

// redisNow estimates Redis time at the node's time t.
func (r *runner) redisNow(t time.Time) time.Time {
	return t.Add(time.Duration(r.offset.Load()) * time.Microsecond)
}

// undecided wraps err, the failure of run numbered run sent at sent, as a
// limit.UndecidedError: the run is named unless Redis replied (then it did
// not run).
func (r *runner) undecided(run int64, sent time.Time, err error) error {
	if isReply(err) && !errors.Is(err, errDuplicateRun) {
		run = 0
	}
	return &limit.UndecidedError{Run: run, At: r.redisNow(sent), Err: err}
}

// answerRun answers the calls of live, decided in that order by one run
// numbered run (0: without a run window) sent at the node's time sent,
// from its reply or its error.
func (r *runner) answerRun(live []*call, run int64, sent time.Time, reply string, err error) {
	var rr runReply
	if err == nil {
		rules := 0
		for _, c := range live {
			rules += len(c.req.Rules)
		}
		rr, err = decodeRunReply(reply, len(live), rules)
	}
	if err != nil {
		err = r.undecided(run, sent, err)
		for _, c := range live {
			c.answer(err)
		}
		return
	}
	r.observe(sent, rr.decisions[0].NowUS)
	rules := rr.rules
	for i, c := range live {
		c.res, c.run = rr.decisions[i], run
		c.rules, rules = rules[:len(c.req.Rules):len(c.req.Rules)], rules[len(c.req.Rules):]
		c.answer(nil)
	}
}

// slotRun is one run of the script in one slot.
type slotRun struct {
	slot  int
	args  *runArgs
	keys  []string
	argv  []any
	run   int64 // its run number (a run of op "decide" with a window), 0 none
	sent  time.Time
	cmd   *redis.Cmd
	reply string
	err   error
}

// decoded returns sr's reply decoded, or the run's error.
func (sr *slotRun) decoded(decisions, rules int) (runReply, error) {
	if sr.err != nil {
		return runReply{}, sr.err
	}
	return decodeRunReply(sr.reply, decisions, rules)
}

// runSlots sends runs, one per slot: in one pipeline on Redis Cluster
// (sent again when a reply proves they did not run), or each on the one
// primary.
func (r *runner) runSlots(ctx context.Context, runs []*slotRun) {
	if r.cc != nil {
		r.runCluster(ctx, runs, nil)
		return
	}
	for _, sr := range runs {
		sr.sent = time.Now()
		sr.cmd = runOnce(ctx, r.rdb, sr.keys, sr.argv)
		v, err := sr.cmd.Result()
		sr.reply, _ = v.(string)
		sr.err = err
	}
}

// maxResendWait caps the wait before a run whose reply proved it did not
// run is sent again (5 ms more per attempt up to this).
const maxResendWait = 50 * time.Millisecond

// migrationWait is how long a run whose replies prove it did not run
// (TRYAGAIN while its slot migrates key by key, CLUSTERDOWN or MASTERDOWN
// while a replica takes over, LOADING) is sent again, each time under a
// deadline of its own: Redis answers, so waiting cannot hide an outage, and
// no request of a migrating slot fails.
const migrationWait = 3 * time.Second

// runCluster sends runs (and the along commands of alongs) in one pipeline
// through the cluster client, then sends again, alone, the runs whose
// reply proves they did not run, until they ran, failed otherwise, or
// migrationWait passed. A run that meets a connection error reloads the
// slot map at once: a master that died answers no MOVED.
func (r *runner) runCluster(ctx context.Context, runs []*slotRun, alongs []*call) {
	if err := ctx.Err(); err != nil {
		// Phases share the batch's deadline, and an earlier one may have
		// used it up: nothing is sent, so nothing runs (and alongs, which
		// would only fail, are not queued).
		for _, sr := range runs {
			sr.err = fmt.Errorf("%w: %w", errNotSent, err)
		}
		return
	}
	pipe := r.cc.Pipeline()
	now := time.Now()
	for _, sr := range runs {
		sr.cmd, sr.sent = queueOnce(ctx, pipe, sr.keys, sr.argv), now
	}
	queueAlong(ctx, pipe, alongs)
	_, _ = pipe.Exec(ctx)
	pending, until := runs, now.Add(migrationWait)
	for attempt := 0; ; attempt++ {
		var again []*slotRun
		var noScript error // a NOSCRIPT reply among them: load the script first
		for _, sr := range pending {
			v, err := sr.cmd.Result() // a string (op "decide") or an integer (the others)
			sr.reply, _ = v.(string)
			sr.err = err
			if err != nil && !isReply(err) {
				r.cc.ReloadState(ctx)
			}
			if notRun(sr.err) && !errors.Is(sr.err, errNotSent) && time.Now().Before(until) {
				again = append(again, sr)
				if redisscript.IsNoScript(sr.err) {
					noScript = sr.err
				}
			}
		}
		if len(again) == 0 {
			return
		}
		// each resend has a deadline of its own: Redis answered
		rctx, cancel := context.WithTimeout(context.Background(), runTimeout)
		if noScript != nil {
			if _, err := redisscript.Reload(rctx, r.cc, limitsScript, noScript); err != nil {
				for _, sr := range again {
					sr.err = err
				}
				cancel()
				return
			}
		} else {
			_ = sleep(rctx, min(time.Duration(attempt+1)*5*time.Millisecond, maxResendWait))
		}
		r.resent.Add(int64(len(again)))
		pipe = r.cc.Pipeline()
		now = time.Now()
		for _, sr := range again {
			sr.cmd, sr.sent = queueOnce(rctx, pipe, sr.keys, sr.argv), now
		}
		_, _ = pipe.Exec(rctx)
		cancel()
		pending = again
	}
}

// errNotSent marks a run the engine did not send because its phase's
// deadline had passed before it: it did not run, so the shared tokens of
// its requests go back. A deadline that passes while a run is being sent
// counts as a run that may have run (the tokens stay taken: an
// under-admission only).
var errNotSent = errors.New("not sent: the deadline passed before the run")

// notRun reports whether err is a reply that proves the command did not
// run (or errNotSent): it can be sent again without charging twice.
func notRun(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, errNotSent) {
		return true
	}
	if _, moved := redis.IsMovedError(err); moved {
		return true
	}
	if _, ask := redis.IsAskError(err); ask {
		return true
	}
	return redis.IsTryAgainError(err) || redis.IsClusterDownError(err) || redis.IsLoadingError(err) ||
		redis.IsMasterDownError(err) || redisscript.IsNoScript(err)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// keyEntry is one entry of a run over keys (ops "unrules" and "renew"):
// its key, and how to pack it given the key's index in the run's KEYS.
type keyEntry struct {
	key  string
	pack func(s []byte, ki uint16) []byte
}

// runKeyed runs op with entries: one run on one primary, one per slot on
// Redis Cluster (in one pipeline), each with ARGV[3] head then its
// entries packed. It returns the first error.
func (r *runner) runKeyed(ctx context.Context, op string, head []byte, entries []keyEntry) error {
	bySlot := map[int][]keyEntry{}
	for _, x := range entries {
		s := r.slotOf(x.key)
		bySlot[s] = append(bySlot[s], x)
	}
	runs := make([]*slotRun, 0, len(bySlot))
	for slot, xs := range bySlot {
		var keys []string
		idx := map[string]uint16{}
		spec := append([]byte(nil), head...)
		for _, x := range xs {
			spec = x.pack(spec, index(&keys, idx, x.key))
		}
		runs = append(runs, &slotRun{slot: slot, keys: keys, argv: []any{op, r.clockArg(), spec}})
	}
	r.runSlots(ctx, runs)
	for _, sr := range runs {
		if sr.err != nil && sr.err != redis.Nil {
			return sr.err
		}
	}
	return nil
}
