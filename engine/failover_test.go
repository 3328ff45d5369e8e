package engine

import (
	"bytes"
	"net"
	"sync/atomic"
	"testing"

	"tollgate/internal/clocktest"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redistest"
	"tollgate/limit"
	"tollgate/plans"
)

// What a primary failover can lose (docs/scale.md, "Failover"): Redis
// replicates asynchronously, so the writes the new primary had not yet
// received when it took over are lost, and nothing else. Here ten
// decisions are replicated (WAIT), the replica is promoted, and five more
// decisions land on the old primary only (the failover window): on the
// new primary the key has used exactly the ten, its state is whole, and
// the engine decides there without an error (its script is loaded again
// on NOSCRIPT).
func TestFailoverLosesOnlyUnreplicatedWrites(t *testing.T) {
	t.Parallel()
	primaryAddr, primary := redistest.MustServer(t)
	host, port, _ := net.SplitHostPort(primaryAddr)
	_, replica := redistest.MustServer(t, "--replicaof", host, port)
	c := clocktest.New(at(t, "2026-06-15T12:00:00Z"))
	old := mustLoaded(t, New(primary, Options{Prefix: "t", Timeout: testTimeout, Clock: c.Now}))
	req := &limit.Request{KeyID: "k1", PlanID: "p1", API: "a1", Stage: "prod",
		Buckets: []limit.Bucket{{Level: limit.LevelPlan, RateLimit: 0.001, BurstLimit: 100}, {Level: limit.LevelAccount, RateLimit: 0.001, BurstLimit: 1000}},
		Quota:   &limit.Quota{Limit: 100, Period: plans.PeriodDay}}
	decide := func(e *Engine, n int) limit.Decision {
		var d limit.Decision
		for i := range n {
			var err error
			if d, err = e.Decide(t.Context(), req); err != nil || !d.Allowed {
				t.Fatalf("decision %d: got %+v, %v, want admitted", i+1, d, err)
			}
		}
		return d
	}
	decide(old, 10)
	if n, err := primary.Wait(t.Context(), 1, 5000).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT for the replica: got %d, %v", n, err)
	}
	if err := replica.ReplicaOf(t.Context(), "NO", "ONE").Err(); err != nil { // the failover
		t.Fatal(err)
	}
	if d := decide(old, 5); d.Quota.Remaining != 85 { // on the old primary, never replicated
		t.Fatalf("old primary: quota remaining %d, want 85", d.Quota.Remaining)
	}
	promoted := New(replica, Options{Prefix: "t", Timeout: testTimeout, Clock: c.Now}) // scripts not loaded
	d := decide(promoted, 1)
	if d.Quota.Remaining != 89 || d.Plan.Remaining != 89 {
		t.Fatalf("new primary: quota %d and plan bucket %d remaining, want 89 and 89 (the 5 unreplicated decisions lost, nothing else)",
			d.Quota.Remaining, d.Plan.Remaining)
	}
	usage, err := promoted.usageOn(t, "k1", "p1", c.Now())
	if err != nil || usage["2026-06-15"] != 11 {
		t.Fatalf("usage on the new primary: got %v, %v, want 11", usage, err)
	}
}

// A run whose reply is lost (the connection dies after Redis ran it) is
// never sent again: the decision fails (the failure mode decides) and
// Redis charged it once, although go-redis retries other commands after
// such an error.
func TestLostReplyIsNotSentAgain(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.MustClient(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go dropReplies(ln, rdb.Options().Addr)
	lossy := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: 3, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = lossy.Close() })
	c := clocktest.New(at(t, "2026-06-15T12:00:00Z"))
	if err := limitsScript.Load(t.Context(), rdb).Err(); err != nil {
		t.Fatal(err)
	}
	e := New(lossy, Options{Prefix: prefix, Timeout: testTimeout, Clock: c.Now})
	req := &limit.Request{KeyID: "k1", PlanID: "p1", Quota: &limit.Quota{Limit: 10, Period: plans.PeriodDay}}
	if d, err := e.Decide(t.Context(), req); err == nil {
		t.Fatalf("decision without a reply: got %+v, want an error", d)
	}
	direct := New(rdb, Options{Prefix: prefix, Timeout: testTimeout, Clock: c.Now})
	st, err := direct.quotaStateErr(t, "k1", "p1", plans.Quota{Limit: 10, Period: plans.PeriodDay})
	if err != nil || st.Remaining != 9 {
		t.Fatalf("quota after one decision whose reply was lost: remaining %d (%v), want 9 (charged once)", st.Remaining, err)
	}
}

// dropReplies accepts connections on ln and passes everything between
// clients and upstream, except that once a client sent an EVALSHA, the
// connection is closed as soon as upstream answers it: the script runs,
// its reply never arrives (the handshake before it passes through).
func dropReplies(ln net.Listener, upstream string) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer conn.Close()
			up, err := net.Dial("tcp", upstream)
			if err != nil {
				return
			}
			defer up.Close()
			var script atomic.Bool
			go func() {
				buf := make([]byte, 64<<10)
				for {
					n, err := conn.Read(buf)
					if n > 0 {
						if bytes.Contains(bytes.ToLower(buf[:n]), []byte("evalsha")) {
							script.Store(true)
						}
						_, _ = up.Write(buf[:n])
					}
					if err != nil {
						return
					}
				}
			}()
			buf := make([]byte, 64<<10)
			for {
				n, err := up.Read(buf)
				if err != nil || script.Load() {
					return // the script's reply: dropped with the connection
				}
				_, _ = conn.Write(buf[:n])
			}
		}()
	}
}
