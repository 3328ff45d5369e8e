package push

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/redis/go-redis/v9"

	"tollgate/plans"

	"tollgate/keyspace"
)

// Source is what the Publisher reads from the source of truth (implemented
// by plans/postgres.DB). Errors are returned as they come (a down database
// is a *plans.Error of KindUnavailable there).
type Source interface {
	// ConfigVersion returns the current config version (0 before any write).
	ConfigVersion(ctx context.Context) (int64, error)
	// Changes returns up to limit changes with a version above
	// afterVersion, ascending by version, one per version without holes.
	Changes(ctx context.Context, afterVersion int64, limit int) ([]plans.Change, error)
	// Snapshot returns the whole current config at one consistent version.
	Snapshot(ctx context.Context) (*plans.Snapshot, error)
	// KeyRecords returns the current records of the keys with these
	// hashes; a deleted key is absent from the map.
	KeyRecords(ctx context.Context, hashes []string) (map[string]*plans.KeyRecord, error)
	// AllKeyRecords calls fn for every API key, oldest record version
	// first, and stops at fn's first error, returning it.
	AllKeyRecords(ctx context.Context, fn func(hash string, rec *plans.KeyRecord) error) error
}

// Options configure a Publisher. The zero value is usable.
type Options struct {
	// Prefix starts every Redis key name; "" means keyspace.DefaultPrefix
	// ("tg").
	Prefix string
	// StreamMaxLen caps the change stream (XADD MAXLEN ~); default 100000
	// entries.
	StreamMaxLen int64
	// Logger receives warnings and reconciler errors; default slog.Default().
	Logger *slog.Logger
}

// DefaultStreamMaxLen is the change stream cap when Options.StreamMaxLen is 0.
const DefaultStreamMaxLen = 100000

// changesBatch is how many changes Publish asks the Source for at once.
const changesBatch = 500

// Publisher writes committed config changes to the limiter Redis (docs/architecture.md,
// "How configuration reaches the gateways"). One Publisher serializes its own calls with a mutex; several
// admin processes may publish to one Redis at once, as every write is a
// compare-and-set on versions.
type Publisher struct {
	src    Source
	rdb    redis.UniversalClient
	keys   keyspace.Space
	maxLen int64
	log    *slog.Logger

	mu sync.Mutex
}

// NewPublisher returns a Publisher reading src and writing to rdb.
func NewPublisher(src Source, rdb redis.UniversalClient, opts Options) *Publisher {
	p := &Publisher{src: src, rdb: rdb, keys: keyspace.Space{Prefix: opts.Prefix},
		maxLen: opts.StreamMaxLen, log: opts.Logger}
	if p.maxLen <= 0 {
		p.maxLen = DefaultStreamMaxLen
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	return p
}

// Publish writes every change after the watermark (<prefix>:config:version),
// in version order: for each, the current snapshot when the change touched
// it, the current records of the keys it touched (tombstones for deleted
// keys), one stream entry, then the watermark. When the watermark is absent
// (Redis lost its data) or the Source no longer has the next change, it
// republishes everything instead (see Reconcile). Errors come from the
// Source or Redis; a later call resumes from the watermark.
func (p *Publisher) Publish(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.publish(ctx)
}

func (p *Publisher) publish(ctx context.Context) error {
	w, ok, err := p.watermark(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return p.republishAll(ctx)
	}
	snapDone := int64(-1) // version of the snapshot written during this call
	for {
		cs, err := p.src.Changes(ctx, w, changesBatch)
		if err != nil {
			return fmt.Errorf("push: read changes after %d: %w", w, err)
		}
		if len(cs) == 0 {
			return nil
		}
		for _, c := range cs {
			if c.Version != w+1 { // a hole: pruned, or never recorded
				p.log.Warn("push: change log does not continue the watermark; republishing everything",
					"watermark", w, "next", c.Version)
				return p.republishAll(ctx)
			}
			if err := p.publishChange(ctx, c, &snapDone); err != nil {
				return err
			}
			w = c.Version
		}
		if len(cs) < changesBatch {
			return nil
		}
	}
}

// publishChange writes one change: snapshot (unless this call already wrote
// one at least as new), key records, stream entry, watermark.
func (p *Publisher) publishChange(ctx context.Context, c plans.Change, snapDone *int64) error {
	if c.Snapshot && c.Version > *snapDone {
		v, err := p.writeSnapshot(ctx, c.Version)
		if err != nil {
			return err
		}
		*snapDone = v
	}
	if err := p.writeKeys(ctx, c); err != nil {
		return err
	}
	if err := p.xadd(ctx, changeValues(c)); err != nil {
		return err
	}
	_, err := raiseWatermark(ctx, p.rdb, p.keys.Version(), c.Version)
	return err
}

// writeSnapshot writes the Source's current snapshot, which must be at
// least at version atLeast, and returns its version.
func (p *Publisher) writeSnapshot(ctx context.Context, atLeast int64) (int64, error) {
	s, err := p.src.Snapshot(ctx)
	if err != nil {
		return 0, fmt.Errorf("push: read snapshot: %w", err)
	}
	if s.Version < atLeast {
		return 0, fmt.Errorf("push: source snapshot version %d is older than change %d", s.Version, atLeast)
	}
	doc, err := encodeSnapshot(s)
	if err != nil {
		return 0, err
	}
	_, err = runCAS(ctx, p.rdb, casWrite{key: p.keys.Snapshot(), version: s.Version, doc: doc})
	return s.Version, err
}

// writeKeys writes the current records of the keys c touched; keys the
// Source no longer has get a tombstone at c.Version. That version is a
// lower bound of the deletion's (the Source read them later), so the
// tombstone can never beat a newer record of a key re-created with the same
// value; a live record read by a slower publisher between c and the
// deletion may survive it until the deletion's own change is published,
// whose tombstone carries the deletion's version.
func (p *Publisher) writeKeys(ctx context.Context, c plans.Change) error {
	if len(c.KeyHashes) == 0 {
		return nil
	}
	recs, err := p.src.KeyRecords(ctx, c.KeyHashes)
	if err != nil {
		return fmt.Errorf("push: read key records of change %d: %w", c.Version, err)
	}
	ws := make([]casWrite, 0, len(c.KeyHashes))
	for _, h := range c.KeyHashes {
		ws = append(ws, p.recordWrite(h, recs[h], c.Version))
	}
	return runCASBatch(ctx, p.rdb, ws)
}

// recordWrite returns the cas.lua call storing rec under hash, or a
// tombstone at version when rec is nil.
func (p *Publisher) recordWrite(hash string, rec *plans.KeyRecord, version int64) casWrite {
	doc, v := encodeRecord(rec, version)
	w := casWrite{key: p.keys.KeyRecord(hash), version: v, doc: doc}
	if rec == nil {
		w.ttlMS = TombstoneTTL.Milliseconds()
	}
	return w
}

func (p *Publisher) xadd(ctx context.Context, values []any) error {
	err := p.rdb.XAdd(ctx, &redis.XAddArgs{Stream: p.keys.Stream(), MaxLen: p.maxLen,
		Approx: true, Values: values}).Err()
	if err != nil {
		return fmt.Errorf("push: append to change stream: %w", err)
	}
	return nil
}

// watermark returns the published config version; ok is false when Redis
// has none.
func (p *Publisher) watermark(ctx context.Context) (v int64, ok bool, err error) {
	v, err = p.rdb.Get(ctx, p.keys.Version()).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("push: read watermark: %w", err)
	}
	return v, true, nil
}

// FlushStageCache invalidates every cache entry of a stage at once: it
// increments <prefix>:cache:gen:{<apiID>:<stage>} (a persistent counter
// that is part of every cache key; every caching decision reads it, so no
// stream entry is needed). Entries of older generations are never read
// again and expire by their TTL. Errors come from Redis.
func (p *Publisher) FlushStageCache(ctx context.Context, apiID, stage string) error {
	if apiID == "" || stage == "" {
		return fmt.Errorf("push: flush needs an api id and a stage name, got %q:%q", apiID, stage)
	}
	if err := p.rdb.Incr(ctx, p.keys.CacheGeneration(apiID, stage)).Err(); err != nil {
		return fmt.Errorf("push: bump cache generation of %s:%s: %w", apiID, stage, err)
	}
	return nil
}

// AnnounceUsageUpdate tells every gateway node that the usage of keyID in
// planID was changed (UpdateUsage, docs/behaviour.md "Usage"), so that they clear their
// local refusal memory for that key: one stream entry usage=planID:keyID.
// The counters themselves live in Redis and are changed by the caller.
// Errors come from Redis.
func (p *Publisher) AnnounceUsageUpdate(ctx context.Context, planID, keyID string) error {
	if planID == "" || keyID == "" {
		return fmt.Errorf("push: usage update needs a plan id and a key id, got %q:%q", planID, keyID)
	}
	return p.xadd(ctx, usageValues(planID, keyID))
}
