package push

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/plans"
)

// Ready returns nil once a snapshot is loaded, the newest published one was
// not rejected, and Redis answered within the last 3×Block (at least 3s).
func (r *Reader) Ready() error {
	if r.version.Load() < 0 {
		return errors.New("push: no config snapshot loaded yet")
	}
	r.rejectMu.Lock()
	rej := r.rejected
	r.rejectMu.Unlock()
	if rej != nil {
		return rej
	}
	stale := max(3*r.opts.Block, 3*time.Second)
	if since := r.now().Sub(time.Unix(0, r.lastOK.Load())); since > stale {
		return fmt.Errorf("push: redis has not answered for %s", since.Round(time.Millisecond))
	}
	return nil
}

// Version returns the version of the loaded snapshot, or -1 before the
// first one is loaded.
func (r *Reader) Version() int64 { return r.version.Load() }

// loadSnapshot reads <prefix>:config:snapshot and, when it is newer than
// the loaded one, validates it and hands it to OnSnapshot. It returns an
// error only when Redis fails; a snapshot that is missing leaves the state
// as it is, one that is unusable is recorded for Ready.
func (r *Reader) loadSnapshot(ctx context.Context) error {
	r.snapMu.Lock()
	defer r.snapMu.Unlock()
	b, err := r.rdb.Get(ctx, r.keys.Snapshot()).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("push: read snapshot: %w", err)
	}
	if v, ok := leadingVersion(b); ok && (v <= r.version.Load() || r.isRejected(v)) {
		return nil
	}
	s := new(plans.Snapshot)
	if err := json.Unmarshal(b, s); err != nil {
		r.reject(-1, fmt.Errorf("push: published snapshot is not valid JSON: %w", err))
		return nil
	}
	if s.Version <= r.version.Load() {
		return nil
	}
	if err := r.accept(s); err != nil {
		r.reject(s.Version, fmt.Errorf("push: snapshot version %d rejected: %w", s.Version, err))
	}
	return nil
}

func (r *Reader) isRejected(v int64) bool {
	r.rejectMu.Lock()
	defer r.rejectMu.Unlock()
	return v == r.rejectedVer
}

func (r *Reader) accept(s *plans.Snapshot) error {
	s.Normalize()
	if err := s.Validate(); err != nil {
		return err
	}
	if r.opts.OnSnapshot != nil {
		if err := r.opts.OnSnapshot(s); err != nil {
			return err
		}
	}
	r.version.Store(s.Version)
	r.rejectMu.Lock()
	r.rejected = nil
	r.rejectMu.Unlock()
	return nil
}

// reject records why snapshot version v (-1: unknown) was refused.
func (r *Reader) reject(v int64, err error) {
	r.log.Error("push: keeping the old config", "err", err, "version", r.version.Load())
	r.rejectMu.Lock()
	r.rejected, r.rejectedVer = err, v
	r.rejectMu.Unlock()
	if r.opts.OnReject != nil {
		r.opts.OnReject(v, err)
	}
}
