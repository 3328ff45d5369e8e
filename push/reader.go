package push

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"tollgate/plans"

	"tollgate/keyspace"
)

// ReaderOptions configure a Reader. The zero value is usable (though a
// gateway wants OnSnapshot).
type ReaderOptions struct {
	// Prefix starts every Redis key name; "" means keyspace.DefaultPrefix
	// ("tg").
	Prefix string
	// OnSnapshot is called with each valid snapshot newer than the current
	// one, from the goroutine running Start or Run. An error rejects it: the
	// old one keeps serving and Ready reports the error until a newer
	// snapshot is accepted. The snapshot must not be modified afterwards by
	// the Reader; the callee owns it.
	OnSnapshot func(*plans.Snapshot) error
	// OnEvent, optional, is called for each config change read from the
	// stream (after its key records were dropped from the local cache and
	// the snapshot, if it changed, was loaded): the plans, stages and key
	// hashes it touched, e.g. to clear local refusal memory.
	OnEvent func(plans.Change)
	// OnUsage, optional, is called for each usage update announced on the
	// stream (UpdateUsage of keyID in planID), e.g. to clear local quota
	// refusal memory for that key.
	OnUsage func(planID, keyID string)
	// OnReject, optional, is called when a published snapshot is refused
	// (invalid JSON: version -1; fails Validate; OnSnapshot's error), e.g.
	// to count it in tollgate_config_rejected_total.
	OnReject func(version int64, err error)
	// OnReload, optional, is called after every full reload (start, error
	// gap, trimmed stream, republish by the admin): any local memory
	// derived from config should be dropped, as events may have been missed.
	OnReload func()
	// Logger receives warnings; default slog.Default().
	Logger *slog.Logger
	// Block is how long one XREAD waits for entries; default 1s.
	Block time.Duration
	// NegativeTTL is how long an unknown key hash is remembered; default 5s.
	NegativeTTL time.Duration
	// CacheSize bounds the local key record cache and, separately, the
	// unknown-hash memory (entries each); default 100000.
	CacheSize int
	// LookupTimeout bounds the Redis read of a cold key lookup (one
	// pipeline of the reads of the hashes looked up meanwhile); it is
	// shared by every caller waiting on that hash, so it does not follow
	// any one caller's context. Default 1s, a decision's deadline.
	LookupTimeout time.Duration
}

// Reader defaults.
const (
	DefaultBlock         = time.Second
	DefaultNegativeTTL   = 5 * time.Second
	DefaultCacheSize     = 100000
	DefaultLookupTimeout = time.Second
)

// readCount is the most stream entries one XREAD returns.
const readCount = 1000

// Reader is the gateway end of the push protocol: it follows the change
// stream, hands newer snapshots to OnSnapshot and answers key lookups from
// a local bounded cache backed by Redis. Call Start once, then Run in its
// own goroutine; Lookup, Ready and Version are safe from any goroutine.
type Reader struct {
	rdb  redis.UniversalClient
	keys keyspace.Space
	opts ReaderOptions
	log  *slog.Logger

	epoch atomic.Uint64
	pos   *boundedMap[*plans.KeyRecord]
	neg   *boundedMap[time.Time] // expiry of the memory of an unknown hash
	sf    singleflight.Group
	cold  *coldReads

	version atomic.Int64     // of the loaded snapshot; -1 before the first
	lastOK  atomic.Int64     // unix nanoseconds of Redis's last answer
	now     func() time.Time // time.Now; tests step a clocktest.Clock

	snapMu      sync.Mutex // serializes snapshot loads
	rejectMu    sync.Mutex
	rejected    error // why the newest snapshot was refused; nil once one is accepted
	rejectedVer int64 // its version, not tried again until a full reload; -1 none

	streamMu    sync.Mutex // owns the stream position below
	lastID      string
	lastVersion int64 // highest config version seen on the stream; 0: unknown
	needReload  bool
}

// NewReader returns a Reader of rdb; nothing is read until Start.
func NewReader(rdb redis.UniversalClient, opts ReaderOptions) *Reader {
	if opts.Block <= 0 {
		opts.Block = DefaultBlock
	}
	if opts.NegativeTTL <= 0 {
		opts.NegativeTTL = DefaultNegativeTTL
	}
	if opts.CacheSize <= 0 {
		opts.CacheSize = DefaultCacheSize
	}
	if opts.LookupTimeout <= 0 {
		opts.LookupTimeout = DefaultLookupTimeout
	}
	r := &Reader{rdb: rdb, keys: keyspace.Space{Prefix: opts.Prefix}, opts: opts, log: opts.Logger, needReload: true, now: time.Now}
	if r.log == nil {
		r.log = slog.Default()
	}
	r.cold = &coldReads{rdb: rdb, keys: r.keys, timeout: opts.LookupTimeout}
	r.pos = newBoundedMap[*plans.KeyRecord](opts.CacheSize, &r.epoch)
	r.neg = newBoundedMap[time.Time](opts.CacheSize, &r.epoch)
	r.version.Store(-1)
	r.rejectedVer = -1
	return r
}

// Start makes the initial full load (snapshot, stream position). When
// Redis is down or no snapshot is published yet it logs, returns nil and
// leaves the rest to Run, which keeps trying; Ready reports the state. It
// returns only ctx's error.
func (r *Reader) Start(ctx context.Context) error {
	r.streamMu.Lock()
	defer r.streamMu.Unlock()
	if err := r.reload(ctx); err != nil {
		r.needReload = true
		r.log.Warn("push: initial config load failed; will retry", "err", err)
	}
	return ctx.Err()
}

// Run follows the change stream until ctx is done: a blocking XREAD from
// the last entry read, then for each entry drop the key records it names
// from the local cache, reload the snapshot when it changed, call the
// callbacks. It reloads everything on start (unless Start did), after a
// Redis error (retrying with backoff up to 1s), on a reload entry, and on a
// version gap (the stream was trimmed past its position), and when the
// stream ends before its position (deleted, or recreated by a server whose
// clock is behind). A blocking XREAD is not interrupted by ctx (go-redis),
// so Run returns within Block after ctx is done.
func (r *Reader) Run(ctx context.Context) {
	const maxBackoff = time.Second
	delay := 50 * time.Millisecond
	failing := false
	for ctx.Err() == nil {
		err := r.step(ctx)
		if err == nil {
			if failing {
				r.log.Info("push: change stream readable again; config reloaded")
			}
			delay, failing = 50*time.Millisecond, false
			continue
		}
		if ctx.Err() != nil {
			return
		}
		if !failing {
			r.log.Warn("push: change stream read failed; retrying, then reloading everything", "err", err)
		}
		failing = true
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, maxBackoff)
	}
}

func (r *Reader) step(ctx context.Context) error {
	r.streamMu.Lock()
	defer r.streamMu.Unlock()
	var err error
	if r.needReload {
		err = r.reload(ctx)
	} else {
		err = r.readOnce(ctx)
	}
	if err != nil {
		r.needReload = true
	}
	return err
}

func (r *Reader) markOK() { r.lastOK.Store(r.now().UnixNano()) }

// reload reads the watermark and the stream's last id, loads the snapshot,
// and drops every cached key record, so that everything before that id is
// reflected and everything after it will be read. Caller holds streamMu.
//
// Without a watermark nothing is published (Redis lost its data and the
// admin has not republished yet): the cached key records are kept, so the
// keys this node already knew keep being served from their last good
// records until the republish, whose reload entry brings the next reload;
// only the memory of unknown hashes goes (they may exist after all).
func (r *Reader) reload(ctx context.Context) error {
	w, err := r.rdb.Get(ctx, r.keys.Version()).Int64()
	published := err == nil
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("push: read watermark: %w", err)
	}
	last, err := r.rdb.XRevRangeN(ctx, r.keys.Stream(), "+", "-", 1).Result()
	if err != nil {
		return fmt.Errorf("push: read change stream end: %w", err)
	}
	id := "0-0"
	if len(last) > 0 {
		id = last[0].ID
	}
	r.rejectMu.Lock()
	r.rejectedVer = -1 // a reload tries a refused snapshot again
	r.rejectMu.Unlock()
	if err := r.loadSnapshot(ctx); err != nil {
		return err
	}
	if published {
		r.pos.clear()
	}
	r.neg.clear()
	r.lastID, r.lastVersion, r.needReload = id, w, false
	r.markOK()
	if r.opts.OnReload != nil {
		r.opts.OnReload()
	}
	return nil
}

// readOnce waits up to Block for entries after lastID and applies them.
// Caller holds streamMu.
func (r *Reader) readOnce(ctx context.Context) error {
	res, err := r.rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{r.keys.Stream(), r.lastID},
		Count: readCount, Block: r.opts.Block}).Result()
	if errors.Is(err, redis.Nil) {
		r.markOK()
		return r.checkStreamEnd(ctx)
	}
	if err != nil {
		return fmt.Errorf("push: read change stream: %w", err)
	}
	r.markOK()
	for _, s := range res {
		if err := r.apply(ctx, s.Messages); err != nil {
			return err
		}
	}
	return nil
}

// checkStreamEnd, run when a read found nothing new, reloads everything if
// the stream ends before our position: it was deleted (Redis lost its data)
// or recreated with smaller ids (a new server whose clock is behind), so
// the entries the admin appends next might never sort after lastID.
// Caller holds streamMu.
func (r *Reader) checkStreamEnd(ctx context.Context) error {
	if r.lastID == "0-0" {
		return nil
	}
	last, err := r.rdb.XRevRangeN(ctx, r.keys.Stream(), "+", "-", 1).Result()
	if err != nil {
		return fmt.Errorf("push: read change stream end: %w", err)
	}
	if len(last) > 0 && !streamIDLess(last[0].ID, r.lastID) {
		return nil
	}
	r.log.Warn("push: change stream ends before our position; reloading everything", "position", r.lastID)
	return r.reload(ctx)
}

// apply handles a batch of entries in order: key records are dropped per
// entry, the snapshot is loaded once for the batch, then OnEvent runs for
// each change. A reload entry or a version gap turns into a full reload.
func (r *Reader) apply(ctx context.Context, msgs []redis.XMessage) error {
	var changes []plans.Change
	snapshot := false
	defer func() { r.emit(changes) }()
	for _, m := range msgs {
		e, err := decodeEntry(m.Values)
		if err != nil {
			r.log.Warn("push: skipping malformed stream entry", "id", m.ID, "err", err)
			r.lastID = m.ID
			continue
		}
		if e.reload || (e.isChange() && r.lastVersion > 0 && e.change.Version > r.lastVersion+1) {
			r.log.Info("push: reloading config", "reload_entry", e.reload,
				"seen_version", r.lastVersion, "entry_version", e.change.Version)
			return r.reload(ctx)
		}
		r.lastID = m.ID
		if e.usage != "" {
			if r.opts.OnUsage != nil {
				r.opts.OnUsage(splitPair(e.usage))
			}
			continue
		}
		r.dropKeys(e.change.KeyHashes)
		snapshot = snapshot || e.change.Snapshot
		changes = append(changes, e.change)
		r.lastVersion = max(r.lastVersion, e.change.Version)
	}
	if snapshot {
		return r.loadSnapshot(ctx)
	}
	return nil
}

func (r *Reader) emit(changes []plans.Change) {
	if r.opts.OnEvent == nil {
		return
	}
	for _, c := range changes {
		r.opts.OnEvent(c)
	}
}

// dropKeys forgets what the local caches know of these hashes.
func (r *Reader) dropKeys(hashes []string) {
	for _, h := range hashes {
		r.pos.invalidate(h)
		r.neg.invalidate(h)
	}
}
