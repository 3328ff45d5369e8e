package gateway

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/engine"
	"tollgate/internal/redistest"
	"tollgate/internal/waittest"
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
	return readerNode(t, rdb, prefix), pub
}

// readerNode is one gateway node on rdb under prefix, fed by its own
// push.Reader, whose change events end the engine's capacity leases and
// refusal memory (as cmd/tollgate wires them); its engine has the default
// options (leases on).
func readerNode(t *testing.T, rdb redis.UniversalClient, prefix string) *testGateway {
	t.Helper()
	var srv *Server
	eng := engine.New(rdb, engine.Options{Prefix: prefix})
	lim := newLimiter(t, eng, true)
	reader := push.NewReader(rdb, push.ReaderOptions{Prefix: prefix, Block: 100 * time.Millisecond,
		OnSnapshot: func(s *plans.Snapshot) error { return srv.SetSnapshot(s) }, OnEvent: lim.forgetChange})
	if err := eng.Load(t.Context()); err != nil {
		t.Fatalf("engine Load: %v", err)
	}
	tg := &testGateway{engine: &countingEngine{inner: lim}, prefix: prefix, logs: &syncBuffer{}}
	srv = New(Options{Keys: reader, Engine: tg.engine,
		Logger: slog.New(slog.NewJSONHandler(tg.logs, nil)), Ready: func(context.Context) error { return reader.Ready() }})
	tg.Server = srv
	ctx, cancel := context.WithCancel(context.Background())
	if err := reader.Start(ctx); err != nil {
		t.Fatalf("reader Start: %v", err)
	}
	done := make(chan struct{})
	go func() { defer close(done); reader.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; _ = eng.Close() })
	tg.http = httptestServer(t, srv)
	return tg
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
	waittest.Until(t, "disabled key refused", 10*time.Second, func() bool {
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
	waittest.Until(t, "new snapshot served", 10*time.Second, func() bool { return tg.do(t, "GET", "/prod/moved").status == 200 })
	if got := tg.do(t, "GET", "/prod/keyed"); got.status != 404 {
		t.Errorf("route of the old snapshot: got %d, want 404", got.status)
	}
}

func TestPushReaderUnpublishedIs503(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.MustClient(t)
	reader := push.NewReader(rdb, push.ReaderOptions{Prefix: prefix})
	tg := &testGateway{engine: &countingEngine{inner: newLimiter(t, engine.New(rdb, engine.Options{Prefix: prefix}), false)}, prefix: prefix, logs: &syncBuffer{}}
	tg.Server = New(Options{Keys: reader, Engine: tg.engine,
		Logger: slog.New(slog.NewJSONHandler(tg.logs, nil))})
	if err := tg.SetSnapshot(keyedSnapshot()); err != nil {
		t.Fatal(err)
	}
	tg.http = httptestServer(t, tg.Server)
	got := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey)
	wantError(t, got, 503, "Service Unavailable", "ServiceUnavailableException")
}

// A key disabled while two gateway nodes admit it under load (capacity
// leases on, the default), on one primary and on Redis Cluster, each node
// with its own client, is refused by every node within the push bound
// (a second here, docs/leases.md), and a node that refused it once never
// admits it again (403, then 429 once the client's failed key attempts
// are limited).
func TestKeyDisabledMidLoadRefusedByEveryNode(t *testing.T) {
	t.Parallel()
	redistest.EachBackend(t, keyDisabledMidLoadRefusedByEveryNode)
}

func keyDisabledMidLoadRefusedByEveryNode(t *testing.T, b redistest.Backend) {
	snap := keyedSnapshot()
	snap.Plans["plan01"].Throttle = &plans.Throttle{RateLimit: 1e6, BurstLimit: 1 << 30}
	snap.Account = plans.Throttle{RateLimit: 1e6, BurstLimit: 1 << 30}
	good := plans.HashKey(goodKey, nil)
	src := &memSource{snap: snap, records: map[string]*plans.KeyRecord{
		good: {KeyID: "key0000001", Enabled: true, PlanIDs: []string{"plan01"}},
	}}
	src.commit(func() plans.Change { return plans.Change{Snapshot: true, KeyHashes: []string{good}} })
	rdb, prefix := b.Open(t)
	pub := push.NewPublisher(src, rdb, push.Options{Prefix: prefix, Logger: slog.New(slog.DiscardHandler)})
	if err := pub.Publish(t.Context()); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	nodes := []*testGateway{readerNode(t, b.Dial(t), prefix), readerNode(t, b.Dial(t), prefix)}
	for _, n := range nodes {
		waittest.Until(t, "node ready", 10*time.Second, func() bool { return n.Ready() == nil })
	}
	type outcome struct {
		start, end time.Time
		status     int
	}
	var mu sync.Mutex
	seen := make([][]outcome, len(nodes))
	var admitted [2]atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, n := range nodes {
		for range 4 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					req, _ := http.NewRequest("GET", n.http.URL+"/prod/keyed", nil)
					req.Host = testHost
					req.Header.Set("x-api-key", goodKey)
					start := time.Now()
					resp, err := n.http.Client().Do(req)
					if err != nil {
						t.Errorf("node %d: %v", i, err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
					if resp.StatusCode == 200 {
						admitted[i].Add(1)
					}
					mu.Lock()
					seen[i] = append(seen[i], outcome{start, time.Now(), resp.StatusCode})
					mu.Unlock()
				}
			})
		}
	}
	waittest.Until(t, "both nodes admitting", 10*time.Second, func() bool { return admitted[0].Load() > 200 && admitted[1].Load() > 200 })
	disabled := time.Now()
	src.commit(func() plans.Change {
		src.records[good].Enabled = false
		return plans.Change{KeyHashes: []string{good}}
	})
	if err := pub.Publish(t.Context()); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	const bound = time.Second
	waittest.Until(t, "each node answered a request sent a bound after the disable", 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, out := range seen {
			if !slices.ContainsFunc(out, func(o outcome) bool { return o.start.After(disabled.Add(bound)) }) {
				return false
			}
		}
		return true
	})
	close(stop)
	wg.Wait()
	for i, out := range seen {
		var firstRefusal time.Time
		for _, o := range out {
			switch {
			case o.status == 200 && o.start.After(disabled.Add(bound)):
				t.Errorf("node %d: admitted a request sent %v after the key was disabled", i, o.start.Sub(disabled))
			case o.status == 200 && !firstRefusal.IsZero() && o.start.After(firstRefusal):
				t.Errorf("node %d: admitted a request sent after its first refusal", i)
			case o.status != 200 && o.status != 403 && o.status != 429:
				t.Errorf("node %d: status %d", i, o.status)
			case o.status != 200 && firstRefusal.IsZero():
				firstRefusal = o.end
			}
		}
		if firstRefusal.IsZero() {
			t.Errorf("node %d: never refused the disabled key", i)
		} else {
			t.Logf("node %d refused the key %v after it was disabled", i, firstRefusal.Sub(disabled))
		}
	}
}
