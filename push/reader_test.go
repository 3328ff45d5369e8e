package push

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/clocktest"
	"tollgate/internal/redistest"
	"tollgate/internal/waittest"
	"tollgate/keyspace"
	"tollgate/plans"
)

// recorder collects what a Reader hands to its callbacks.
type recorder struct {
	mu       sync.Mutex
	snaps    []int64
	events   []plans.Change
	usages   []string
	rejects  []int64
	reloads  int
	failSnap func(*plans.Snapshot) error // makes OnSnapshot fail when it returns an error
}

func (rc *recorder) options(prefix string) ReaderOptions {
	return ReaderOptions{
		Prefix: prefix,
		OnSnapshot: func(s *plans.Snapshot) error {
			rc.mu.Lock()
			defer rc.mu.Unlock()
			if rc.failSnap != nil {
				if err := rc.failSnap(s); err != nil {
					return err
				}
			}
			rc.snaps = append(rc.snaps, s.Version)
			return nil
		},
		OnEvent: func(c plans.Change) {
			rc.mu.Lock()
			defer rc.mu.Unlock()
			rc.events = append(rc.events, c)
		},
		OnUsage: func(planID, keyID string) {
			rc.mu.Lock()
			defer rc.mu.Unlock()
			rc.usages = append(rc.usages, planID+":"+keyID)
		},
		OnReject: func(v int64, _ error) {
			rc.mu.Lock()
			defer rc.mu.Unlock()
			rc.rejects = append(rc.rejects, v)
		},
		OnReload: func() {
			rc.mu.Lock()
			defer rc.mu.Unlock()
			rc.reloads++
		},
		Block: 200 * time.Millisecond,
	}
}

func (rc *recorder) reloadCount() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.reloads
}

// startReader starts a Reader (Start, then Run in a goroutine stopped at
// cleanup).
func startReader(t *testing.T, rdb redis.UniversalClient, opts ReaderOptions) *Reader {
	t.Helper()
	return startReaderAt(t, rdb, opts, time.Now)
}

// startReaderAt is startReader with the reader's clock now.
func startReaderAt(t *testing.T, rdb redis.UniversalClient, opts ReaderOptions, now func() time.Time) *Reader {
	t.Helper()
	r := NewReader(rdb, opts)
	r.now = now
	ctx, cancel := context.WithCancel(context.Background())
	if err := r.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

func mustLookup(t *testing.T, r *Reader, hash string) *plans.KeyRecord {
	t.Helper()
	rec, err := r.Lookup(context.Background(), hash)
	if err != nil {
		t.Fatalf("Lookup: %v", err)
	}
	return rec
}

func TestReaderStartedLateGetsLatestConfig(t *testing.T) {
	t.Parallel()
	rdb, prefix, src, p := publisherWorld(t)
	src.putKey(testHash(1), true, "plan01")
	src.setAccountRate(150)
	src.putKey(testHash(1), false, "plan01")
	src.putKey(testHash(2), true, "plan01")
	mustPublish(t, p)

	rc := &recorder{}
	r := startReader(t, rdb, rc.options(prefix))
	if err := r.Ready(); err != nil {
		t.Errorf("Ready: got %v, want nil", err)
	}
	if got := r.Version(); got != 4 {
		t.Errorf("Version: got %d, want 4 (the source's version when the snapshot was published)", got)
	}
	if got := mustLookup(t, r, testHash(1)); got == nil || got.Enabled || got.Version != 3 {
		t.Errorf("Lookup key 1: got %+v, want the disabled record of version 3", got)
	}
	if got := mustLookup(t, r, testHash(2)); got == nil || !got.Enabled {
		t.Errorf("Lookup key 2: got %+v, want the enabled record", got)
	}
	if got := mustLookup(t, r, testHash(99)); got != nil {
		t.Errorf("Lookup unknown key: got %+v, want nil", got)
	}
}

func TestReaderWithoutSnapshotIsNotReadyUntilPublished(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.MustClient(t)
	rc := &recorder{}
	r := startReader(t, rdb, rc.options(prefix))
	if err := r.Ready(); err == nil {
		t.Fatal("Ready before any publish: got nil, want an error")
	}
	if got := r.Version(); got != -1 {
		t.Errorf("Version before any publish: got %d, want -1", got)
	}
	if _, err := r.Lookup(context.Background(), testHash(1)); plans.ErrorKind(err) != plans.KindUnavailable || !errors.Is(err, ErrNotPublished) {
		t.Errorf("Lookup before any publish: got %v, want KindUnavailable caused by ErrNotPublished", err)
	}
	src := newFakeSource()
	src.setAccountRate(120)
	startPublisher(t, src, rdb, prefix)
	waittest.Until(t, "ready after the first publish", 2*time.Second, func() bool { return r.Ready() == nil })
	if got := r.Version(); got != 1 {
		t.Errorf("Version: got %d, want 1", got)
	}
}

// A reader follows config changes and usage updates.
func TestReaderFollowsSnapshotKeysAndUsageUpdates(t *testing.T) {
	t.Parallel()
	rdb, prefix, src, p := publisherWorld(t)
	h := testHash(1)
	src.putKey(h, true, "plan01")
	mustPublish(t, p)
	rc := &recorder{}
	r := startReader(t, rdb, rc.options(prefix))
	if got := mustLookup(t, r, h); got == nil || !got.Enabled {
		t.Fatalf("Lookup: got %+v, want the enabled record", got)
	}

	src.putKey(h, false, "plan01") // v2
	v := src.setAccountRate(500)   // v3
	mustPublish(t, p)
	if err := p.AnnounceUsageUpdate(context.Background(), "plan01", "k123456789"); err != nil {
		t.Fatal(err)
	}
	waittest.Until(t, "key disabled", time.Second, func() bool { rec := mustLookup(t, r, h); return !rec.Enabled })
	waittest.Until(t, "snapshot loaded", time.Second, func() bool { return r.Version() == v })
	waittest.Until(t, "usage update seen", time.Second, func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		return len(rc.usages) == 1
	})
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if want := []int64{0, 3}; !slices.Equal(rc.snaps, want) {
		t.Errorf("snapshots handed over: got %v, want %v", rc.snaps, want)
	}
	var versions []int64
	for _, c := range rc.events {
		versions = append(versions, c.Version)
	}
	if want := []int64{2, 3}; !slices.Equal(versions, want) {
		t.Errorf("events: got %v, want %v", versions, want)
	}
	if got, want := rc.usages, []string{"plan01:k123456789"}; !slices.Equal(got, want) {
		t.Errorf("usage updates: got %v, want %v", got, want)
	}
}

func TestNegativeCacheAndItsInvalidation(t *testing.T) {
	t.Parallel()
	rdb, prefix, src, p := publisherWorld(t)
	ctx := context.Background()
	rc := &recorder{}
	opts := rc.options(prefix)
	opts.NegativeTTL = time.Hour
	clock := clocktest.New(time.Now())
	r := startReaderAt(t, rdb, opts, clock.Now)
	h := testHash(7)
	if got := mustLookup(t, r, h); got != nil {
		t.Fatalf("Lookup of unknown key: got %+v, want nil", got)
	}

	// A record written behind the stream's back stays unseen while the miss
	// is remembered, and is seen once the memory expires.
	doc, _ := encodeRecord(&plans.KeyRecord{KeyID: "sneaky0001", Enabled: true, Version: 1}, 1)
	if err := rdb.Set(ctx, keyspace.Space{Prefix: prefix}.KeyRecord(h), doc, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got := mustLookup(t, r, h); got != nil {
		t.Errorf("Lookup within NegativeTTL: got %+v, want nil (remembered miss)", got)
	}
	clock.Add(time.Hour - time.Millisecond)
	if got := mustLookup(t, r, h); got != nil {
		t.Errorf("Lookup just before NegativeTTL ends: got %+v, want nil (remembered miss)", got)
	}
	clock.Add(time.Millisecond)
	if got := mustLookup(t, r, h); got == nil {
		t.Errorf("Lookup once NegativeTTL ended: got nil, want the record")
	}

	// A stream event naming a remembered hash drops the memory at once.
	h2 := testHash(8)
	if got := mustLookup(t, r, h2); got != nil {
		t.Fatalf("Lookup of unknown key 2: got %+v, want nil", got)
	}
	src.putKey(h2, true, "plan01")
	mustPublish(t, p)
	took := waittest.Until(t, "created key seen", 250*time.Millisecond, func() bool { return mustLookup(t, r, h2) != nil })
	t.Logf("created key seen after %v (NegativeTTL %v, never reached)", took, opts.NegativeTTL)
}

func TestRedisFlushedAnswersUnavailableUntilReconcile(t *testing.T) {
	t.Parallel()
	rdb, prefix, src, p := publisherWorld(t)
	ctx := context.Background()
	cached, other := testHash(1), testHash(2)
	src.putKey(cached, true, "plan01")
	src.putKey(other, true, "plan01")
	src.setAccountRate(200)
	mustPublish(t, p)
	rc := &recorder{}
	r := startReader(t, rdb, rc.options(prefix))
	mustLookup(t, r, cached)
	reloads := rc.reloadCount()

	redistest.DeletePrefix(ctx, rdb, prefix) // Redis lost everything
	if got := mustLookup(t, r, cached); got == nil || !got.Enabled {
		t.Errorf("Lookup of a cached key: got %+v, want the cached record", got)
	}
	// The reader notices (its stream is gone) and reloads what is there:
	// nothing. Keys it already knew keep their last good records until the
	// admin has republished, rather than answering 503.
	waittest.Until(t, "reader notices the lost stream", 5*time.Second, func() bool { return rc.reloadCount() > reloads })
	reloads = rc.reloadCount()
	if got, err := r.Lookup(ctx, cached); err != nil || got == nil || !got.Enabled {
		t.Errorf("Lookup of a cached key after the reader reloaded an empty Redis: got (%+v, %v), want the last good record", got, err)
	}
	for _, h := range []string{other, testHash(3)} {
		rec, err := r.Lookup(ctx, h)
		if plans.ErrorKind(err) != plans.KindUnavailable || !errors.Is(err, ErrNotPublished) || rec != nil {
			t.Errorf("Lookup %s… while unpublished: got (%+v, %v), want KindUnavailable caused by ErrNotPublished", h[:8], rec, err)
		}
	}
	if err := p.Reconcile(ctx); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if got := mustLookup(t, r, other); got == nil || !got.Enabled {
		t.Errorf("Lookup after Reconcile: got %+v, want the record back", got)
	}
	if got := mustLookup(t, r, testHash(3)); got != nil {
		t.Errorf("Lookup of unknown key after Reconcile: got %+v, want nil", got)
	}
	if got := readState(t, rdb, prefix); got.watermark != 3 || got.snapshot != 3 {
		t.Errorf("state after Reconcile: got %+v, want watermark and snapshot 3", got)
	}
	waittest.Until(t, "reader reloads on the republish", 2*time.Second, func() bool { return rc.reloadCount() > reloads })
	if err := r.Ready(); err != nil {
		t.Errorf("Ready after Reconcile: got %v, want nil", err)
	}
}

func TestTrimmedStreamReloadsEverything(t *testing.T) {
	t.Parallel()
	rdb, prefix, src, p := publisherWorld(t)
	ctx := context.Background()
	h := testHash(1)
	src.putKey(h, true, "plan01")
	mustPublish(t, p)
	rc := &recorder{}
	r := NewReader(rdb, rc.options(prefix))
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mustLookup(t, r, h); got == nil || !got.Enabled {
		t.Fatalf("Lookup: got %+v, want the enabled record", got)
	}
	reloads := rc.reloadCount()

	// While the reader is not reading, the key is disabled and the stream
	// is trimmed past the entry that says so.
	src.putKey(h, false, "plan01")
	for i := range 4 {
		src.putKey(testHash(10+i), true, "plan01")
	}
	mustPublish(t, p)
	if err := rdb.XTrimMaxLen(ctx, keyspace.Space{Prefix: prefix}.Stream(), 1).Err(); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { r.Run(runCtx); close(done) }()
	defer func() { cancel(); <-done }()

	waittest.Until(t, "reload after the trim", 2*time.Second, func() bool { return rc.reloadCount() > reloads })
	if got := mustLookup(t, r, h); got == nil || got.Enabled {
		t.Errorf("Lookup after the reload: got %+v, want the disabled record", got)
	}
}

func TestInvalidSnapshotKeepsTheOldOne(t *testing.T) {
	t.Parallel()
	rdb, prefix, src, p := publisherWorld(t)
	good := src.setAccountRate(200)
	mustPublish(t, p)
	rc := &recorder{}
	r := startReader(t, rdb, rc.options(prefix))

	cases := []struct {
		name    string
		publish func() int64
		wantErr string
	}{
		{"fails Validate", func() int64 { return src.setInvalid(true) }, "id mismatch"},
		{"refused by OnSnapshot", func() int64 {
			rc.mu.Lock()
			rc.failSnap = func(s *plans.Snapshot) error {
				if s.Account.RateLimit == 999 {
					return errors.New("cannot compile")
				}
				return nil
			}
			rc.mu.Unlock()
			src.setInvalid(false)
			return src.setAccountRate(999)
		}, "cannot compile"},
	}
	for _, c := range cases {
		bad := c.publish()
		mustPublish(t, p)
		waittest.Until(t, c.name+": rejection reported", time.Second, func() bool {
			err := r.Ready()
			return err != nil && strings.Contains(err.Error(), c.wantErr)
		})
		if got := r.Version(); got != good {
			t.Errorf("%s: Version: got %d, want the old %d (refused %d)", c.name, got, good, bad)
		}
	}
	rc.mu.Lock()
	if got, want := rc.rejects, []int64{2, 4}; !slices.Equal(got, want) {
		t.Errorf("OnReject versions: got %v, want %v (each refused once)", got, want)
	}
	rc.mu.Unlock()
	fixed := src.setAccountRate(300)
	mustPublish(t, p)
	waittest.Until(t, "newer valid snapshot accepted", time.Second, func() bool { return r.Ready() == nil })
	if got := r.Version(); got != fixed {
		t.Errorf("Version after the fix: got %d, want %d", got, fixed)
	}
}

func TestLookupWhenRedisIsDown(t *testing.T) {
	t.Parallel()
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer down.Close()
	r := NewReader(down, ReaderOptions{Prefix: redistest.MustPrefix(t)})
	if err := r.Start(context.Background()); err != nil {
		t.Fatalf("Start with Redis down: got %v, want nil (it keeps trying)", err)
	}
	if err := r.Ready(); err == nil {
		t.Error("Ready with Redis down: got nil, want an error")
	}
	rec, err := r.Lookup(context.Background(), testHash(1))
	if plans.ErrorKind(err) != plans.KindUnavailable || rec != nil {
		t.Errorf("Lookup with Redis down: got (%+v, %v), want KindUnavailable", rec, err)
	}
}

// TestRecreatedStreamWithSmallerIDs covers a Redis that lost its data and
// came back with a clock behind: the reader notices the stream ends before
// its position, reloads, and then reads entries whatever their ids.
func TestRecreatedStreamWithSmallerIDs(t *testing.T) {
	t.Parallel()
	rdb, prefix, src, p := publisherWorld(t)
	ctx := context.Background()
	h := testHash(1)
	src.putKey(h, true, "plan01")
	mustPublish(t, p)
	rc := &recorder{}
	r := startReader(t, rdb, rc.options(prefix))
	mustLookup(t, r, h)
	reloads := rc.reloadCount()

	redistest.DeletePrefix(ctx, rdb, prefix)
	waittest.Until(t, "reload after the stream vanished", 2*time.Second, func() bool { return rc.reloadCount() > reloads })
	// The restored data comes back with entry ids far in the past.
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	restore := func() {
		rec := src.record(h)
		doc, _ := encodeRecord(rec, rec.Version)
		must(rdb.Set(ctx, keyspace.Space{Prefix: prefix}.KeyRecord(h), doc, 0).Err())
		must(rdb.Set(ctx, keyspace.Space{Prefix: prefix}.Version(), rec.Version, 0).Err())
	}
	restore()
	if got := mustLookup(t, r, h); got == nil || !got.Enabled {
		t.Fatalf("Lookup of the restored key: got %+v, want the enabled record (now cached)", got)
	}
	src.putKey(h, false, "plan01") // v2
	restore()
	must(rdb.XAdd(ctx, &redis.XAddArgs{Stream: keyspace.Space{Prefix: prefix}.Stream(), ID: "1-1",
		Values: changeValues(plans.Change{Version: 2, KeyHashes: []string{h}})}).Err())
	waittest.Until(t, "key disabled through the recreated stream", 2*time.Second, func() bool {
		rec, err := r.Lookup(ctx, h)
		return err == nil && rec != nil && !rec.Enabled
	})
}
