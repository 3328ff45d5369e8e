package gateway

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"tollgate/engine"
	"tollgate/internal/redistest"
	"tollgate/plans"
	"tollgate/push"
)

// memSource is an in-memory push.Source: the admin side of the protocol
// without PostgreSQL, so the gateway can be tested with the real
// push.Publisher and push.Reader over Redis.
type memSource struct {
	mu      sync.Mutex
	snap    *plans.Snapshot
	records map[string]*plans.KeyRecord
	changes []plans.Change
}

func (m *memSource) ConfigVersion(context.Context) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return int64(len(m.changes)), nil
}

func (m *memSource) Changes(_ context.Context, after int64, limit int) ([]plans.Change, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []plans.Change
	for _, c := range m.changes {
		if c.Version > after && len(out) < limit {
			out = append(out, c)
		}
	}
	return out, nil
}

func (m *memSource) Snapshot(context.Context) (*plans.Snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := *m.snap
	s.Version = int64(len(m.changes))
	return &s, nil
}

func (m *memSource) KeyRecords(_ context.Context, hashes []string) (map[string]*plans.KeyRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]*plans.KeyRecord{}
	for _, h := range hashes {
		if r := m.records[h]; r != nil {
			c := *r
			out[h] = &c
		}
	}
	return out, nil
}

func (m *memSource) AllKeyRecords(_ context.Context, fn func(string, *plans.KeyRecord) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for h, r := range m.records {
		if err := fn(h, r); err != nil {
			return err
		}
	}
	return nil
}

// commit records one admin write: edit runs under the lock and returns the
// change (its version is filled in).
func (m *memSource) commit(edit func() plans.Change) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := edit()
	c.Version = int64(len(m.changes) + 1)
	for _, h := range c.KeyHashes {
		if r := m.records[h]; r != nil {
			r.Version = c.Version
		}
	}
	m.changes = append(m.changes, c)
}

// readerGateway is a gateway fed by the real push.Reader and limiter on
// the test Redis, with src publishing through push.Publisher.
func readerGateway(t *testing.T, src *memSource) (*testGateway, *push.Publisher) {
	t.Helper()
	rdb, prefix := redistest.MustClient(t)
	pub := push.NewPublisher(src, rdb, push.Options{Prefix: prefix, Logger: slog.New(slog.DiscardHandler)})
	if err := pub.Publish(t.Context()); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	var srv *Server
	reader := push.NewReader(rdb, push.ReaderOptions{Prefix: prefix, Block: 100 * time.Millisecond,
		OnSnapshot: func(s *plans.Snapshot) error { return srv.SetSnapshot(s) }})
	eng := engine.New(rdb, engine.Options{Prefix: prefix})
	if err := eng.Load(t.Context()); err != nil {
		t.Fatalf("engine Load: %v", err)
	}
	tg := &testGateway{engine: &countingEngine{inner: eng}, prefix: prefix, logs: &syncBuffer{}}
	srv = New(Options{Keys: reader, Engine: tg.engine,
		Logger: slog.New(slog.NewJSONHandler(tg.logs, nil)), Ready: func(context.Context) error { return reader.Ready() }})
	tg.Server = srv
	ctx, cancel := context.WithCancel(context.Background())
	if err := reader.Start(ctx); err != nil {
		t.Fatalf("reader Start: %v", err)
	}
	done := make(chan struct{})
	go func() { defer close(done); reader.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	tg.http = httptestServer(t, srv)
	return tg, pub
}

// eventually polls cond every 10ms for up to 2s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 2s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestWithPushReader(t *testing.T) {
	t.Parallel()
	snap := keyedSnapshot()
	snap.Plans["plan01"].Quota = &plans.Quota{Limit: 100, Period: plans.PeriodWeek}
	good := plans.HashKey(goodKey, nil)
	src := &memSource{snap: snap, records: map[string]*plans.KeyRecord{
		good: {KeyID: "key0000001", Enabled: true, PlanIDs: []string{"plan01"}},
	}}
	src.commit(func() plans.Change { return plans.Change{Snapshot: true, KeyHashes: []string{good}} })
	tg, pub := readerGateway(t, src)
	if err := tg.Ready(); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	got := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey)
	if got.status != 200 || got.header.Get("X-RateLimit-Remaining") != "99" {
		t.Fatalf("good key: got %d remaining %q, want 200 remaining 99", got.status, got.header.Get("X-RateLimit-Remaining"))
	}
	wantError(t, tg.do(t, "GET", "/prod/keyed", "x-api-key", unknownKey), 403, "Forbidden", "ForbiddenException")

	src.commit(func() plans.Change {
		src.records[good].Enabled = false
		return plans.Change{KeyHashes: []string{good}}
	})
	if err := pub.Publish(t.Context()); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	eventually(t, "disabled key refused", func() bool {
		return tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey).status == 403
	})

	src.commit(func() plans.Change {
		src.snap = limitSnapshot(plans.UsagePlan{Quota: &plans.Quota{Limit: 5, Period: plans.PeriodDay}}, plans.Stage{})
		src.snap.Apis[testAPI].Stages[testStage].Resources = resources(res{"/moved", methods(mock(false), "GET")})
		return plans.Change{Snapshot: true}
	})
	if err := pub.Publish(t.Context()); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	eventually(t, "new snapshot served", func() bool { return tg.do(t, "GET", "/prod/moved").status == 200 })
	if got := tg.do(t, "GET", "/prod/keyed"); got.status != 404 {
		t.Errorf("route of the old snapshot: got %d, want 404", got.status)
	}
}

func TestPushReaderUnpublishedIs503(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.MustClient(t)
	reader := push.NewReader(rdb, push.ReaderOptions{Prefix: prefix})
	tg := &testGateway{engine: &countingEngine{inner: engine.New(rdb, engine.Options{Prefix: prefix})}, prefix: prefix, logs: &syncBuffer{}}
	tg.Server = New(Options{Keys: reader, Engine: tg.engine,
		Logger: slog.New(slog.NewJSONHandler(tg.logs, nil))})
	if err := tg.SetSnapshot(keyedSnapshot()); err != nil {
		t.Fatal(err)
	}
	tg.http = httptestServer(t, tg.Server)
	got := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey)
	wantError(t, got, 503, "Service Unavailable", "ServiceUnavailableException")
}
