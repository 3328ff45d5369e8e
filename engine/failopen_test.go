package engine

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redistest"
	"tollgate/limit"
	"tollgate/plans"
)

// usageSum returns the usage of keyID in plan p1 from yesterday to
// tomorrow (UTC), summed: a test that crosses midnight still counts all.
func usageSum(t *testing.T, e *Engine, keyID string) int64 {
	t.Helper()
	now := time.Now()
	days, err := e.Usage(t.Context(), keyID, "p1", now.Add(-24*time.Hour), now.Add(24*time.Hour))
	if err != nil {
		t.Fatalf("Usage: %v", err)
	}
	var n int64
	for _, v := range days {
		n += v
	}
	return n
}

// settleCharges decides requests of another key on e until no charge is
// pending (each batch takes pending charges once Redis answers), or fails
// after 15 s.
func settleCharges(t *testing.T, e *Engine) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
		if p, _ := e.PendingCharges(); p == 0 {
			return
		}
		if _, err := e.Decide(t.Context(), &limit.Request{KeyID: "settle", PlanID: "p1"}); err != nil {
			t.Logf("Decide while settling charges: %v", err) // a pooled connection that broke meanwhile
			time.Sleep(20 * time.Millisecond)
		}
	}
	p, _ := e.PendingCharges()
	t.Fatalf("%d charges still pending after 15 s of decisions", p)
}

// silentRedis returns a client of a server that accepts connections and
// reads commands but never answers (a hung Redis).
func silentRedis(t *testing.T) *redis.Client {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, conn); _ = conn.Close() }()
		}
	}()
	c := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A decision queued behind the node's own work (every flusher busy, no run
// of this node waiting on Redis) waits past Options.Timeout instead of
// failing: the queue is the gateway's, not Redis's.
func TestDecisionQueuedBehindOwnWorkWaits(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.MustClient(t)
	l := mustLoaded(t, New(rdb, Options{Prefix: prefix, Timeout: 20 * time.Millisecond, FailOpen: true}))
	l.batch.mu.Lock()
	l.batch.flushers = maxFlushers // every flusher place busy (CPU work of the node)
	l.batch.mu.Unlock()
	req := nodeRequest(l, "k1", 100, 100, 10)
	type result struct {
		d   limit.Decision
		err error
	}
	done := make(chan result, 1)
	go func() {
		d, err := l.decideKeyed(t.Context(), req, nil)
		done <- result{d, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("queued decision ended while no run was in flight: %+v, %v; want it to wait", r.d, r.err)
	case <-time.After(10 * l.timeout):
	}
	l.batch.mu.Lock()
	l.batch.flushers-- // a busy flusher comes back and drains the queue
	l.batch.mu.Unlock()
	l.flush()
	r := <-done
	if r.err != nil || !r.d.Allowed || r.d.Quota.Remaining != 9 {
		t.Fatalf("queued decision: got %+v, %v, want admitted with 9 left", r.d, r.err)
	}
}

// A Redis that accepts connections but never answers fails the decision
// whose run was sent (after the run's deadline), and then, for
// Options.Timeout, decisions fail at once with ErrRedisDown instead of
// queueing behind a run; the decision after that tries Redis again.
func TestDecisionsFailAtOnceWhileRedisDoesNotAnswer(t *testing.T) {
	t.Parallel()
	l := New(silentRedis(t), Options{Prefix: "t", Timeout: time.Millisecond, FailOpen: true})
	req := nodeRequest(l, "k1", 1, 1, 1)
	_, err := l.decideKeyed(t.Context(), req, nil)
	if err == nil || errors.Is(err, ErrRedisDown) {
		t.Fatalf("first decision: got %v, want its run's failure", err)
	}
	l.timeout = time.Hour // the decisions below come within Options.Timeout
	for i := range 3 {
		if _, err := l.decideKeyed(t.Context(), req, nil); !errors.Is(err, ErrRedisDown) {
			t.Fatalf("decision %d after the failure: got %v, want ErrRedisDown", i+2, err)
		}
	}
	if p, _ := l.PendingCharges(); p != 4 {
		t.Fatalf("pending charges: got %d, want 4 (every failed decision)", p)
	}
	l.timeout = 0 // Options.Timeout has passed: the next decision tries Redis
	if _, err := l.decideKeyed(t.Context(), req, nil); err == nil || errors.Is(err, ErrRedisDown) {
		t.Fatalf("decision after Options.Timeout: got %v, want its run's failure", err)
	}
}

// gate forwards connections to a Redis while up; while down it closes
// every connection it holds and every new one (a Redis that is down:
// connections reset, nothing runs).
type gate struct {
	ln       net.Listener
	upstream string
	down     atomic.Bool
	mu       sync.Mutex
	conns    []net.Conn
}

func newGate(t *testing.T, upstream string) *gate {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{ln: ln, upstream: upstream}
	t.Cleanup(func() { _ = ln.Close(); g.setDown(true) })
	go g.serve()
	return g
}

func (g *gate) serve() {
	for {
		conn, err := g.ln.Accept()
		if err != nil {
			return
		}
		if g.down.Load() {
			_ = conn.Close()
			continue
		}
		up, err := net.Dial("tcp", g.upstream)
		if err != nil {
			_ = conn.Close()
			continue
		}
		g.mu.Lock()
		g.conns = append(g.conns, conn, up)
		g.mu.Unlock()
		go func() { _, _ = io.Copy(up, conn); _ = up.Close() }()
		go func() { _, _ = io.Copy(conn, up); _ = conn.Close() }()
	}
}

// setDown takes the gate down (closing every connection) or up.
func (g *gate) setDown(down bool) {
	g.down.Store(down)
	if !down {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.conns {
		_ = c.Close()
	}
	g.conns = nil
}

// A Redis that is down fails decisions open (errors at once, the caller's
// failure mode admits), and every request so admitted is charged to the
// quota and usage once Redis is back, so both count every admission.
func TestRedisDownFailsOpenAndChargesWhenBack(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.MustClient(t)
	g := newGate(t, rdb.Options().Addr)
	client := redis.NewClient(&redis.Options{Addr: g.ln.Addr().String(), MaxRetries: -1, DialTimeout: 100 * time.Millisecond,
		ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	// Timeout 2 s: a run is waited for that long (not the 1 s default), so
	// that on a loaded machine no run whose reply was merely late counts as
	// lost (its requests would be charged twice: the documented bound).
	l := mustLoaded(t, New(client, Options{Prefix: prefix, FailOpen: true, Timeout: 2 * time.Second}))
	req := &limit.Request{KeyID: "k1", PlanID: "p1", Quota: &limit.Quota{Limit: 1000, Period: plans.PeriodDay}}
	admitted := 0
	decide := func(wantErr bool) {
		t.Helper()
		d, err := l.Decide(t.Context(), req)
		if (err != nil) != wantErr {
			t.Fatalf("Decide: got %+v, %v, want error %v", d, err, wantErr)
		}
		if err != nil || d.Allowed {
			admitted++ // an error: the failure mode open admits it
		}
	}
	for range 3 {
		decide(false)
	}
	g.setDown(true)
	for range 5 {
		decide(true)
	}
	if p, _ := l.PendingCharges(); p != 5 {
		t.Fatalf("pending charges while Redis is down: got %d, want 5", p)
	}
	g.setDown(false)
	deadline := time.Now().Add(10 * time.Second)
	for { // decisions fail at once for Options.Timeout, then the client redials
		d, err := l.Decide(t.Context(), req)
		if err == nil {
			if d.Allowed {
				admitted++
			}
			break
		}
		admitted++
		if time.Now().After(deadline) {
			t.Fatalf("Decide after Redis came back: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	settleCharges(t, l)
	if n := usageSum(t, l, "k1"); n != int64(admitted) {
		t.Fatalf("usage after Redis came back: got %d, want %d (every admission, decided or open)", n, admitted)
	}
	st, err := l.QuotaState(t.Context(), "k1", "p1", plans.Quota{Limit: 1000, Period: plans.PeriodDay})
	if err != nil || st.Remaining != int64(1000-admitted) {
		t.Fatalf("quota after Redis came back: remaining %d (%v), want %d", st.Remaining, err, 1000-admitted)
	}
}

// With both cores saturated (GOMAXPROCS goroutines of CPU work beside 64
// concurrent callers on each of two engines sharing one Redis) and the
// production deadline, a quota of N admits exactly N, counting the
// requests a failure mode "open" would admit, and usage says N. Not
// parallel: its spinning goroutines would slow the package's other tests.
func TestQuotaExactWithBothCoresSaturated(t *testing.T) {
	if testing.Short() {
		t.Skip("saturates the machine")
	}
	const quota, workers = 2000, 64
	rdb, prefix := redistest.MustClient(t)
	second := redis.NewClient(rdb.Options())
	t.Cleanup(func() { _ = second.Close() })
	nodes := []*Engine{
		mustLoaded(t, New(rdb, Options{Prefix: prefix, FailOpen: true})), // Timeout: DefaultTimeout
		mustLoaded(t, New(second, Options{Prefix: prefix, FailOpen: true})),
	}
	stop := make(chan struct{})
	var spin sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		spin.Go(func() {
			buf := make([]byte, 4096)
			for {
				select {
				case <-stop:
					return
				default:
					sum := sha256.Sum256(buf)
					buf[0] = sum[0]
				}
			}
		})
	}
	var admitted, open, refused atomic.Int64
	var wg sync.WaitGroup
	for _, e := range nodes {
		for range workers {
			wg.Go(func() {
				req := &limit.Request{KeyID: "k1", PlanID: "p1", API: "api1", Stage: "prod",
					Buckets: []limit.Bucket{{Level: limit.LevelPlan, RateLimit: 1e6, BurstLimit: 1e6},
						{Level: limit.LevelAccount, RateLimit: 1e6, BurstLimit: 1e6}},
					Quota: &limit.Quota{Limit: quota, Period: plans.PeriodDay}}
				for seen := 0; seen < 20; {
					d, err := e.Decide(context.Background(), req)
					switch {
					case err != nil:
						if open.Add(1) == 1 {
							t.Logf("first failed decision: %v", err)
						}
					case d.Allowed:
						admitted.Add(1)
					default:
						refused.Add(1)
						seen++
					}
				}
			})
		}
	}
	wg.Wait()
	close(stop)
	spin.Wait()
	for _, e := range nodes {
		settleCharges(t, e)
		if _, dropped := e.PendingCharges(); dropped != 0 {
			t.Errorf("dropped charges: %d", dropped)
		}
	}
	t.Logf("admitted %d by decision, %d without one; %d refusals", admitted.Load(), open.Load(), refused.Load())
	if got := admitted.Load() + open.Load(); got != quota {
		t.Errorf("admitted %d (%d without a decision), want exactly the quota %d", got, open.Load(), quota)
	}
	if n := usageSum(t, nodes[0], "k1"); n != quota {
		t.Errorf("usage: got %d, want %d", n, quota)
	}
}
