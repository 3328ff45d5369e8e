package push

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"tollgate/plans"
)

// fakeSource stands in for PostgreSQL's reading side (plans/postgres.DB
// implements Source for real): a config version counter, a change log with
// one row per version, the current snapshot and the current key records.
// Its mutators behave like admin writes.
type fakeSource struct {
	mu       sync.Mutex
	version  int64
	firstLog int64 // versions below it were pruned from the change log
	log      []plans.Change
	snap     *plans.Snapshot
	keys     map[string]*plans.KeyRecord
	invalid  bool // Snapshot returns a snapshot that fails Validate
}

func newFakeSource() *fakeSource {
	return &fakeSource{snap: validSnapshot(), keys: map[string]*plans.KeyRecord{}}
}

// validSnapshot returns a small valid snapshot: one API with one stage and
// one plan covering it.
func validSnapshot() *plans.Snapshot {
	return &plans.Snapshot{
		Account: plans.Throttle{RateLimit: 100, BurstLimit: 50},
		Apis: map[string]*plans.ApiConfig{"a1b2c3d4e5": {ID: "a1b2c3d4e5", ApiKeySource: "HEADER",
			Stages: map[string]*plans.StageConfig{"prod": {
				Stage:     plans.Stage{StageName: "prod", DeploymentID: "dep001"},
				Resources: []plans.Resource{{ID: "root000000", Path: "/"}},
			}}}},
		Plans: map[string]*plans.UsagePlan{"plan01": {ID: "plan01", Name: "gold",
			ApiStages: []plans.ApiStage{{ApiID: "a1b2c3d4e5", Stage: "prod"}}}},
	}
}

// commit records one admin write as the next version.
func (f *fakeSource) commit(c plans.Change) int64 {
	f.version++
	c.Version = f.version
	f.log = append(f.log, c)
	return c.Version
}

// setAccountRate changes the snapshot (the account throttle rate).
func (f *fakeSource) setAccountRate(rate float64) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snap.Account.RateLimit = rate
	return f.commit(plans.Change{Snapshot: true, Stages: []string{"a1b2c3d4e5:prod"}})
}

// setInvalid makes the snapshot unusable (or usable again) as a write.
func (f *fakeSource) setInvalid(invalid bool) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.invalid = invalid
	return f.commit(plans.Change{Snapshot: true})
}

// putKey creates or updates a key record.
func (f *fakeSource) putKey(hash string, enabled bool, planIDs ...string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := f.commit(plans.Change{KeyHashes: []string{hash}})
	f.keys[hash] = &plans.KeyRecord{KeyID: "k" + hash[:9], Enabled: enabled, PlanIDs: planIDs, Version: v}
	return v
}

// deleteKey deletes a key.
func (f *fakeSource) deleteKey(hash string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.keys, hash)
	return f.commit(plans.Change{KeyHashes: []string{hash}})
}

// prune drops change log rows up to and including version v.
func (f *fakeSource) prune(v int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.firstLog = v + 1
}

// dropChange removes one change log row (a hole inside the log).
func (f *fakeSource) dropChange(v int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = slices.DeleteFunc(f.log, func(c plans.Change) bool { return c.Version == v })
}

func (f *fakeSource) ConfigVersion(context.Context) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.version, nil
}

func (f *fakeSource) Changes(_ context.Context, after int64, limit int) ([]plans.Change, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []plans.Change
	for _, c := range f.log {
		if c.Version > after && c.Version >= f.firstLog && len(out) < limit {
			out = append(out, c)
		}
	}
	return out, nil
}

func (f *fakeSource) Snapshot(context.Context) (*plans.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := json.Marshal(f.snap) // deep copy, as a database read would be
	if err != nil {
		return nil, err
	}
	s := new(plans.Snapshot)
	if err := json.Unmarshal(b, s); err != nil {
		return nil, err
	}
	s.Version = f.version
	if f.invalid {
		s.Plans["plan01"].ID = "mismatch"
	}
	return s, nil
}

func (f *fakeSource) KeyRecords(_ context.Context, hashes []string) (map[string]*plans.KeyRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]*plans.KeyRecord{}
	for _, h := range hashes {
		if r, ok := f.keys[h]; ok {
			c := *r
			out[h] = &c
		}
	}
	return out, nil
}

func (f *fakeSource) AllKeyRecords(_ context.Context, fn func(string, *plans.KeyRecord) error) error {
	f.mu.Lock()
	type kv struct {
		h string
		r plans.KeyRecord
	}
	all := make([]kv, 0, len(f.keys))
	for h, r := range f.keys {
		all = append(all, kv{h, *r})
	}
	f.mu.Unlock()
	slices.SortFunc(all, func(a, b kv) int { return int(a.r.Version - b.r.Version) })
	for _, e := range all {
		if err := fn(e.h, &e.r); err != nil {
			return err
		}
	}
	return nil
}

// lastSnapshotChange returns the version of the last change that touched
// the snapshot.
func (f *fakeSource) lastSnapshotChange() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.log) - 1; i >= 0; i-- {
		if f.log[i].Snapshot {
			return f.log[i].Version
		}
	}
	return 0
}

// record returns a copy of the source's current record of hash, or nil.
func (f *fakeSource) record(hash string) *plans.KeyRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r, ok := f.keys[hash]; ok {
		c := *r
		return &c
	}
	return nil
}

// testHash returns a key hash for test key n.
func testHash(n int) string { return plans.HashKey(fmt.Sprintf("testkeyvalue%020d", n), nil) }
