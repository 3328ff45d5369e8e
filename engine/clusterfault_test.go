package engine

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"tollgate/internal/clocktest"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redistest"
	"tollgate/limit"
	"tollgate/plans"
	"tollgate/script"
)

// On Redis Cluster too, a run whose reply is lost is never sent again,
// although the client retries other commands after a network error
// (MaxRetries 3): here the reply of phase 2 (the key's own state) is lost
// once. The decision fails, the quota was charged exactly once, and the
// shared token phase 1 took stays taken (phase 2 may have run: an
// under-admission of one token, never an over-admission).
func TestClusterLostReplyIsNotSentAgain(t *testing.T) {
	t.Parallel()
	shared, prefix := redistest.MustCluster(t)
	c := clocktest.New(at(t, "2026-06-15T12:00:00Z"))
	direct := mustLoaded(t, New(shared, Options{Prefix: prefix, Timeout: testTimeout, Clock: c.Now}))
	drop := &replyDropper{marker: []byte(direct.r.keys.Quota("k1", "p1"))} // in phase 2's run only
	lossy := redis.NewClusterClient(&redis.ClusterOptions{Addrs: shared.Options().Addrs, MaxRetries: 3,
		ContextTimeoutEnabled: true, Dialer: drop.dial})
	t.Cleanup(func() { _ = lossy.Close() })
	e := New(lossy, Options{Prefix: prefix, Timeout: testTimeout, Clock: c.Now})
	req := &limit.Request{KeyID: "k1", PlanID: "p1", API: "a1", Stage: "prod",
		Buckets: []limit.Bucket{{Level: limit.LevelStage, RateLimit: 0.001, BurstLimit: 100, Method: "GET", Path: "/x"}},
		Quota:   &limit.Quota{Limit: 10, Period: plans.PeriodDay}}
	if d, err := e.Decide(t.Context(), req); err == nil {
		t.Fatalf("decision whose phase-2 reply was lost: got %+v, want an error", d)
	}
	e.settle()
	if !drop.fired.Load() {
		t.Fatal("no reply was dropped: the test did not reach phase 2")
	}
	st, err := direct.quotaStateErr(t, "k1", "p1", plans.Quota{Limit: 10, Period: plans.PeriodDay})
	if err != nil || st.Remaining != 9 {
		t.Fatalf("quota after one decision whose reply was lost: remaining %d (%v), want 9 (charged once)", st.Remaining, err)
	}
	probe := mustDecide(t, direct, &keyedRequest{Buckets: []keyedBucket{{Key: direct.r.keys.StageBucket("a1", "prod", "GET", "/x"), RateLimit: 0.001, BurstLimit: 100, Level: limit.LevelPlan}}})
	if probe.Plan.Remaining != 98 {
		t.Fatalf("stage bucket after the lost decision and a probe: got %d left, want 98 (its token kept)", probe.Plan.Remaining)
	}
}

// replyDropper dials Redis through connections that, the first time a
// command holding marker is written, let Redis run it, read the start of
// its reply and then close: the command ran, its reply never arrives.
// While down, it refuses to dial and fails every write, as a Redis that
// is not reachable does; arm sets a marker later.
type replyDropper struct {
	marker []byte // set before the first dial
	fired  atomic.Bool
	armed  atomic.Pointer[[]byte]
	down   atomic.Bool
}

// arm drops the reply of the next command holding marker.
func (d *replyDropper) arm(marker []byte) {
	d.armed.Store(&marker)
	d.fired.Store(false)
}

// matches reports whether b holds the marker.
func (d *replyDropper) matches(b []byte) bool {
	if d.marker != nil && bytes.Contains(b, d.marker) {
		return true
	}
	m := d.armed.Load()
	return m != nil && bytes.Contains(b, *m)
}

func (d *replyDropper) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if d.down.Load() {
		return nil, errors.New("refused: the test took Redis down")
	}
	var nd net.Dialer
	conn, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &droppingConn{Conn: conn, d: d}, nil
}

type droppingConn struct {
	net.Conn
	d     *replyDropper
	armed atomic.Bool
}

func (c *droppingConn) Write(b []byte) (int, error) {
	if c.d.down.Load() {
		_ = c.Conn.Close()
		return 0, errors.New("broken: the test took Redis down")
	}
	if c.d.matches(b) && c.d.fired.CompareAndSwap(false, true) {
		c.armed.Store(true)
	}
	return c.Conn.Write(b)
}

func (c *droppingConn) Read(b []byte) (int, error) {
	if c.armed.Load() {
		_, _ = c.Conn.Read(b) // Redis replies once the script ran
		_ = c.Conn.Close()
		return 0, io.ErrUnexpectedEOF
	}
	return c.Conn.Read(b)
}

// A master that lost its scripts (restarted, SCRIPT FLUSH, or a replica
// promoted without them) answers NOSCRIPT on the cluster path too: the
// engine loads the script on that master and sends the runs again (they
// did not run), in phase 1 and phase 2, so decisions succeed and charge
// once. On a cluster of its own (one master serving every slot), so that
// flushing its scripts disturbs no other test.
func TestClusterNoScriptReloadsAndDecides(t *testing.T) {
	t.Parallel()
	rdb, _ := redistest.MustClusterServer(t, 1)
	c := clocktest.New(at(t, "2026-06-15T12:00:00Z"))
	l := mustLoaded(t, New(rdb, Options{Prefix: "t", Timeout: testTimeout, Clock: c.Now}))
	k := l.r.keys
	plan := keyedBucket{Key: k.PlanBucket("k1", "p1"), RateLimit: 0.001, BurstLimit: 100, Level: limit.LevelPlan}
	stage := keyedBucket{Key: k.StageBucket("a1", "prod", "GET", "/x"), RateLimit: 0.001, BurstLimit: 100, Level: limit.LevelStage}
	quota := &keyedQuota{Key: k.Quota("k1", "p1"), Limit: 5, Period: script.PeriodDay}
	for i, v := range []struct {
		name  string
		req   *keyedRequest
		along func(context.Context, redis.Pipeliner)
	}{
		{"in phase 1 (a shared bucket)", &keyedRequest{Buckets: []keyedBucket{plan, stage}, Quota: quota}, nil},
		{"in phase 2 (the key's own state)", &keyedRequest{Buckets: []keyedBucket{plan}, Quota: quota}, nil},
		{"in phase 2, with cache reads", &keyedRequest{Buckets: []keyedBucket{plan}, Quota: quota},
			func(ctx context.Context, p redis.Pipeliner) { p.Get(ctx, "t:other") }},
	} {
		err := rdb.ForEachMaster(t.Context(), func(ctx context.Context, m *redis.Client) error { return m.ScriptFlush(ctx).Err() })
		if err != nil {
			t.Fatal(err)
		}
		resent := l.r.resent.Load()
		d, err := l.decideKeyed(t.Context(), v.req, v.along)
		if err != nil || !d.Allowed || d.Quota.Remaining != int64(4-i) || d.Plan.Remaining != int64(99-i) {
			t.Fatalf("NOSCRIPT %s: got %+v, %v, want admitted with quota %d and plan bucket %d left", v.name, d, err, 4-i, 99-i)
		}
		if l.r.resent.Load() == resent {
			t.Errorf("NOSCRIPT %s: no run was sent again, want the one that met NOSCRIPT", v.name)
		}
	}
}
