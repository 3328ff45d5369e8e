package push

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redistest"
	"tollgate/keyspace"
	"tollgate/plans"
)

// state is what Redis holds of the published config under one prefix.
type state struct {
	watermark int64 // -1: absent
	snapshot  int64 // version; -1: absent
}

func readState(t *testing.T, rdb *redis.Client, prefix string) state {
	t.Helper()
	ctx := context.Background()
	s := state{watermark: -1, snapshot: -1}
	if v, err := rdb.Get(ctx, keyspace.Space{Prefix: prefix}.Version()).Int64(); err == nil {
		s.watermark = v
	} else if !errors.Is(err, redis.Nil) {
		t.Fatalf("read watermark: %v", err)
	}
	b, err := rdb.Get(ctx, keyspace.Space{Prefix: prefix}.Snapshot()).Bytes()
	if err == nil {
		var snap plans.Snapshot
		if err := json.Unmarshal(b, &snap); err != nil {
			t.Fatalf("stored snapshot: %v", err)
		}
		s.snapshot = snap.Version
	} else if !errors.Is(err, redis.Nil) {
		t.Fatalf("read snapshot: %v", err)
	}
	return s
}

// readRecord returns the stored record of hash (nil for a tombstone) and
// whether Redis has the key at all.
func readRecord(t *testing.T, rdb *redis.Client, prefix, hash string) (*plans.KeyRecord, bool) {
	t.Helper()
	b, err := rdb.Get(context.Background(), keyspace.Space{Prefix: prefix}.KeyRecord(hash)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false
	}
	if err != nil {
		t.Fatalf("read record: %v", err)
	}
	rec, err := decodeRecord(b)
	if err != nil {
		t.Fatalf("decode record: %v", err)
	}
	return rec, true
}

func readStream(t *testing.T, rdb *redis.Client, prefix string) []entry {
	t.Helper()
	msgs, err := rdb.XRange(context.Background(), keyspace.Space{Prefix: prefix}.Stream(), "-", "+").Result()
	if err != nil {
		t.Fatalf("read stream: %v", err)
	}
	out := make([]entry, 0, len(msgs))
	for _, m := range msgs {
		e, err := decodeEntry(m.Values)
		if err != nil {
			t.Fatalf("stream entry %s: %v", m.ID, err)
		}
		out = append(out, e)
	}
	return out
}

// changeVersions returns the versions of the change entries (not reload
// entries).
func changeVersions(entries []entry) []int64 {
	var out []int64
	for _, e := range entries {
		if e.isChange() && !e.reload {
			out = append(out, e.change.Version)
		}
	}
	return out
}

// startPublisher returns a publisher of src on a Redis prefix after its
// first reconcile, as the admin does at start (an empty Redis gets the
// whole config and a watermark).
func startPublisher(t *testing.T, src Source, rdb *redis.Client, prefix string) *Publisher {
	t.Helper()
	p := NewPublisher(src, rdb, Options{Prefix: prefix})
	if err := p.Reconcile(context.Background()); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	return p
}

// publisherWorld returns a Redis client and fresh key prefix, a fake
// Source, and a publisher of it after its first reconcile.
func publisherWorld(t *testing.T) (*redis.Client, string, *fakeSource, *Publisher) {
	t.Helper()
	rdb, prefix := redistest.MustClient(t)
	src := newFakeSource()
	return rdb, prefix, src, startPublisher(t, src, rdb, prefix)
}

func mustPublish(t *testing.T, p *Publisher) {
	t.Helper()
	if err := p.Publish(context.Background()); err != nil {
		t.Fatalf("Publish: %v", err)
	}
}

func TestPublishWritesChangesInOrder(t *testing.T) {
	t.Parallel()
	rdb, prefix, src, p := publisherWorld(t)
	h1, h2 := testHash(1), testHash(2)
	src.putKey(h1, true, "plan01")  // v1
	src.setAccountRate(200)         // v2
	src.putKey(h2, false, "plan01") // v3
	src.deleteKey(h1)               // v4
	mustPublish(t, p)

	if got, want := readState(t, rdb, prefix), (state{watermark: 4, snapshot: 4}); got != want {
		t.Errorf("state: got %+v, want %+v", got, want)
	}
	entries := readStream(t, rdb, prefix)[1:] // after the reload entry of the start
	if got, want := changeVersions(entries), []int64{1, 2, 3, 4}; !slices.Equal(got, want) {
		t.Fatalf("stream versions: got %v, want %v", got, want)
	}
	if got := entries[1]; !got.change.Snapshot || !slices.Equal(got.change.Stages, []string{"a1b2c3d4e5:prod"}) {
		t.Errorf("entry v2: got %+v, want snapshot=true stages=[a1b2c3d4e5:prod]", got.change)
	}
	if got := entries[2].change.KeyHashes; !slices.Equal(got, []string{h2}) {
		t.Errorf("entry v3 keys: got %v, want [%s]", got, h2)
	}
	rec, ok := readRecord(t, rdb, prefix, h2)
	if want := src.record(h2); !ok || rec == nil || rec.KeyID != want.KeyID || rec.Enabled || rec.Version != 3 {
		t.Errorf("record h2: got %+v (present %v), want %+v", rec, ok, want)
	}
	if rec, ok := readRecord(t, rdb, prefix, h1); !ok || rec != nil {
		t.Errorf("record h1: got %+v (present %v), want a tombstone", rec, ok)
	}
	ttl := rdb.PTTL(context.Background(), keyspace.Space{Prefix: prefix}.KeyRecord(h1)).Val()
	if ttl <= TombstoneTTL-time.Minute || ttl > TombstoneTTL {
		t.Errorf("tombstone TTL: got %v, want about %v", ttl, TombstoneTTL)
	}
	if ttl := rdb.PTTL(context.Background(), keyspace.Space{Prefix: prefix}.KeyRecord(h2)).Val(); ttl != -1 {
		t.Errorf("record TTL: got %v, want none (-1ns)", ttl)
	}
}

func TestPublishResumesFromWatermark(t *testing.T) {
	t.Parallel()
	rdb, prefix, src, p := publisherWorld(t)
	src.putKey(testHash(1), true, "plan01")
	mustPublish(t, p)
	mustPublish(t, p) // nothing new: no entry
	src.putKey(testHash(2), true, "plan01")
	src.setAccountRate(300)
	mustPublish(t, p)

	if got, want := changeVersions(readStream(t, rdb, prefix)), []int64{1, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("stream versions: got %v, want %v", got, want)
	}
	if got, want := readState(t, rdb, prefix), (state{watermark: 3, snapshot: 3}); got != want {
		t.Errorf("state: got %+v, want %+v", got, want)
	}
}

func TestPublishManyChangesInBatches(t *testing.T) {
	t.Parallel()
	rdb, prefix, src, p := publisherWorld(t)
	n := changesBatch*2 + 7
	for i := range n {
		src.putKey(testHash(i%10), i%2 == 0, "plan01")
	}
	mustPublish(t, p)
	if got := readState(t, rdb, prefix).watermark; got != int64(n) {
		t.Errorf("watermark: got %d, want %d", got, n)
	}
	if got := len(changeVersions(readStream(t, rdb, prefix))); got != n {
		t.Errorf("change entries: got %d, want %d", got, n)
	}
}

func TestCASNeverMovesBackwards(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.MustClient(t)
	ctx := context.Background()
	hash := testHash(1)
	key := keyspace.Space{Prefix: prefix}.KeyRecord(hash)
	rec := func(v int64, enabled bool) casWrite {
		doc, _ := encodeRecord(&plans.KeyRecord{KeyID: "k1", Enabled: enabled, Version: v}, v)
		return casWrite{key: key, version: v, doc: doc}
	}
	tomb := func(v int64) casWrite {
		doc, _ := encodeRecord(nil, v)
		return casWrite{key: key, version: v, doc: doc}
	}
	steps := []struct {
		name        string
		write       casWrite
		wantWritten bool
		wantVersion int64
	}{
		{"first write", rec(5, true), true, 5},
		{"older refused", rec(3, false), false, 5},
		{"same version refused", rec(5, false), false, 5},
		{"newer written", rec(8, false), true, 8},
		{"older tombstone refused", tomb(7), false, 8},
		{"newer tombstone written", tomb(9), true, 9},
		{"older record cannot resurrect", rec(8, true), false, 9},
		{"re-created key newer", rec(12, true), true, 12},
	}
	for _, s := range steps {
		written, err := runCAS(ctx, rdb, s.write)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		b, _ := rdb.Get(ctx, key).Bytes()
		v, _ := leadingVersion(b)
		if written != s.wantWritten || v != s.wantVersion {
			t.Errorf("%s: got written=%v version=%d, want written=%v version=%d", s.name, written, v, s.wantWritten, s.wantVersion)
		}
	}
	for _, s := range []struct {
		name  string
		to    int64
		moved bool
		want  int64
	}{{"first", 10, true, 10}, {"lower", 7, false, 10}, {"equal", 10, false, 10}, {"higher", 11, true, 11}} {
		moved, err := raiseWatermark(ctx, rdb, keyspace.Space{Prefix: prefix}.Version(), s.to)
		if err != nil {
			t.Fatalf("watermark %s: %v", s.name, err)
		}
		if got := readState(t, rdb, prefix).watermark; moved != s.moved || got != s.want {
			t.Errorf("watermark %s: got moved=%v value=%d, want moved=%v value=%d", s.name, moved, got, s.moved, s.want)
		}
	}
}

// TestStalePublisherCannotRegress runs the full republish of a publisher
// whose source is behind what Redis holds: nothing may move backwards.
func TestStalePublisherCannotRegress(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.MustClient(t)
	ctx := context.Background()
	stale := newFakeSource()
	stale.putKey(testHash(1), true, "plan01") // v1: enabled
	fresh := newFakeSource()
	pf := startPublisher(t, fresh, rdb, prefix)
	fresh.putKey(testHash(1), true, "plan01")
	fresh.putKey(testHash(1), false, "plan01") // v2: disabled
	fresh.setAccountRate(300)                  // v3
	mustPublish(t, pf)

	if err := NewPublisher(stale, rdb, Options{Prefix: prefix}).republishAll(ctx); err != nil {
		t.Fatalf("stale republish: %v", err)
	}
	if got, want := readState(t, rdb, prefix), (state{watermark: 3, snapshot: 3}); got != want {
		t.Errorf("state: got %+v, want %+v", got, want)
	}
	if rec, _ := readRecord(t, rdb, prefix, testHash(1)); rec == nil || rec.Enabled || rec.Version != 2 {
		t.Errorf("record: got %+v, want the disabled record of version 2", rec)
	}
}

// TestPublishersRacing runs two admin processes' publishers against one
// Redis while writes keep committing; a watcher checks that the watermark
// and the snapshot never move backwards, and the end state is the source's.
func TestPublishersRacing(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.MustClient(t)
	ctx := context.Background()
	src := newFakeSource()
	pubs := []*Publisher{startPublisher(t, src, rdb, prefix), startPublisher(t, src, rdb, prefix)}
	stop := make(chan struct{})
	watchErr := make(chan string, 1)
	go watchMonotonic(t, rdb, prefix, stop, watchErr)

	var wg sync.WaitGroup
	for w, p := range pubs {
		wg.Go(func() {
			for i := range 60 {
				if i%3 == w {
					src.setAccountRate(float64(100 + i))
				} else {
					src.putKey(testHash(i%7), (i+w)%2 == 0, "plan01")
				}
				if err := p.Publish(ctx); err != nil {
					t.Errorf("publisher %d: %v", w, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	if msg := <-watchErr; msg != "" {
		t.Error(msg)
	}
	mustPublish(t, pubs[0])
	v, _ := src.ConfigVersion(ctx)
	if got := readState(t, rdb, prefix); got.watermark != v || got.snapshot < src.lastSnapshotChange() {
		t.Errorf("state: got %+v, want watermark %d and a snapshot of at least version %d", got, v, src.lastSnapshotChange())
	}
	for i := range 7 {
		got, _ := readRecord(t, rdb, prefix, testHash(i))
		if want := src.record(testHash(i)); got == nil || got.Version != want.Version || got.Enabled != want.Enabled {
			t.Errorf("record %d: got %+v, want %+v", i, got, want)
		}
	}
}

// watchMonotonic polls the watermark and snapshot version until stop and
// reports the first backwards move on out ("" when none).
func watchMonotonic(t *testing.T, rdb *redis.Client, prefix string, stop <-chan struct{}, out chan<- string) {
	var last state
	last.watermark, last.snapshot = -1, -1
	for {
		select {
		case <-stop:
			out <- ""
			return
		default:
		}
		s := readState(t, rdb, prefix)
		if s.watermark < last.watermark || s.snapshot < last.snapshot {
			out <- "went backwards: got " + fmtState(s) + " after " + fmtState(last)
			return
		}
		last = s
	}
}

func fmtState(s state) string {
	b, _ := json.Marshal(map[string]int64{"watermark": s.watermark, "snapshot": s.snapshot})
	return string(b)
}

func TestPublishRepublishesWhenChangeLogHasAHole(t *testing.T) {
	t.Parallel()
	rdb, prefix, src, p := publisherWorld(t)
	src.putKey(testHash(1), true, "plan01")
	mustPublish(t, p)
	src.putKey(testHash(2), true, "plan01") // v2, pruned before publish
	src.putKey(testHash(3), true, "plan01") // v3
	src.prune(2)
	mustPublish(t, p)

	entries := readStream(t, rdb, prefix)
	if last := entries[len(entries)-1]; !last.reload || last.change.Version != 3 {
		t.Errorf("last entry: got %+v, want a reload entry of version 3", last)
	}
	for _, n := range []int{1, 2, 3} {
		if rec, _ := readRecord(t, rdb, prefix, testHash(n)); rec == nil {
			t.Errorf("record %d: got none, want it republished", n)
		}
	}
	if got := readState(t, rdb, prefix).watermark; got != 3 {
		t.Errorf("watermark: got %d, want 3", got)
	}
}

// A hole after the first change of a batch (a change pruned or never
// recorded while the one before it was kept) is noticed too: the
// publisher republishes everything rather than skipping the change.
func TestPublishRepublishesOnAHoleInsideTheLog(t *testing.T) {
	t.Parallel()
	rdb, prefix, src, p := publisherWorld(t)
	src.putKey(testHash(1), true, "plan01") // v1
	mustPublish(t, p)
	src.setAccountRate(300)                  // v2: the batch starts where the watermark left off
	src.putKey(testHash(1), false, "plan01") // v3: disabled, then dropped from the log
	src.setAccountRate(400)                  // v4
	src.dropChange(3)
	mustPublish(t, p)

	rec, _ := readRecord(t, rdb, prefix, testHash(1))
	if rec == nil || rec.Enabled {
		t.Fatalf("record of the key disabled in the dropped change: got %+v, want it disabled", rec)
	}
	if got := readState(t, rdb, prefix).watermark; got != 4 {
		t.Errorf("watermark: got %d, want 4", got)
	}
}

func TestPublishOnEmptyRedisRepublishesEverything(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.MustClient(t)
	src := newFakeSource()
	src.putKey(testHash(1), true, "plan01")
	src.setAccountRate(300)
	mustPublish(t, NewPublisher(src, rdb, Options{Prefix: prefix}))

	entries := readStream(t, rdb, prefix)
	if len(entries) != 1 || !entries[0].reload || entries[0].change.Version != 2 {
		t.Errorf("stream: got %+v, want one reload entry of version 2", entries)
	}
	if got, want := readState(t, rdb, prefix), (state{watermark: 2, snapshot: 2}); got != want {
		t.Errorf("state: got %+v, want %+v", got, want)
	}
	if rec, _ := readRecord(t, rdb, prefix, testHash(1)); rec == nil || !rec.Enabled {
		t.Errorf("record: got %+v, want the enabled record", rec)
	}
}

func TestFlushStageCache(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.MustClient(t)
	ctx := context.Background()
	p := NewPublisher(newFakeSource(), rdb, Options{Prefix: prefix})
	for range 2 {
		if err := p.FlushStageCache(ctx, "a1b2c3d4e5", "prod"); err != nil {
			t.Fatalf("FlushStageCache: %v", err)
		}
	}
	gen := keyspace.Space{Prefix: prefix}.CacheGeneration("a1b2c3d4e5", "prod")
	if got := rdb.Get(ctx, gen).Val(); got != "2" {
		t.Errorf("generation: got %q, want \"2\"", got)
	}
	if ttl := rdb.PTTL(ctx, gen).Val(); ttl != -1 {
		t.Errorf("generation TTL: got %v, want none (-1ns)", ttl)
	}
	if entries := readStream(t, rdb, prefix); len(entries) != 0 {
		t.Errorf("stream: got %+v, want no entries (gateways read the generation itself)", entries)
	}
	if err := p.FlushStageCache(ctx, "", "prod"); err == nil {
		t.Error("flush without api id: got nil error, want one")
	}
}
