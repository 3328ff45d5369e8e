package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redisurl"
	"tollgate/internal/waittest"
)

// SentinelMaster is the master name the Sentinel of MustSentinel monitors.
const SentinelMaster = "tg"

// Sentinel is a Sentinel topology of a test's own (MustSentinel).
type Sentinel struct {
	// URL opens a failover client of it through redisurl, as production
	// does: redis-sentinel://127.0.0.1:port/0?master=tg.
	URL string
	// Primary and Replica are the data servers; Sentinel is the Sentinel
	// process.
	Primary, Replica, Sentinel *Server
}

// MustSentinel starts a Sentinel topology of the test's own: a primary
// (MustServerProcess with the extra arguments args), one replica of it
// (synchronised before it returns) and a Sentinel that monitors the
// primary as master SentinelMaster with a quorum of 1 and a down-after of
// one second, so that it promotes the replica on its own once the primary
// stops answering. It returns when the Sentinel names the primary and
// lists the replica; every process is killed at cleanup.
func MustSentinel(tb testing.TB, args ...string) *Sentinel {
	tb.Helper()
	return mustSentinel(tb, nil, args)
}

// MustSentinelOn is MustSentinel with the primary and the replica on the
// wall clock c (a SteppedClock the test moves), the Sentinel on the
// test's own: their TIME, script time and key expiry follow c's steps.
// Steps should stay below the replication timeout (60 s).
func MustSentinelOn(tb testing.TB, c *SteppedClock, args ...string) *Sentinel {
	tb.Helper()
	return mustSentinel(tb, c.Env(tb), args)
}

// mustSentinel starts the topology of MustSentinel, its data servers with
// the environment env added (nil: none).
func mustSentinel(tb testing.TB, env, args []string) *Sentinel {
	tb.Helper()
	// no delay before a diskless sync: the replica synchronises at once
	fast := append([]string{"--repl-diskless-sync-delay", "0"}, args...)
	primary := startServer(tb, env, fast)
	host, port, _ := net.SplitHostPort(primary.Addr)
	replica := startServer(tb, env, append([]string{"--replicaof", host, port}, fast...))
	conf := filepath.Join(tb.TempDir(), "sentinel.conf") // Sentinel rewrites it: a file of its own
	text := fmt.Sprintf("sentinel monitor %[1]s %[2]s %[3]s 1\n"+
		"sentinel down-after-milliseconds %[1]s 1000\n"+
		"sentinel failover-timeout %[1]s 10000\n", SentinelMaster, host, port)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		tb.Fatalf("redistest: write %s: %v", conf, err)
	}
	sentinel := startRedis(tb, nil, []string{conf, "--sentinel"}, nil)
	sc := redis.NewSentinelClient(&redis.Options{Addr: sentinel.Addr, ContextTimeoutEnabled: true})
	defer sc.Close()
	var master []string
	var reps []map[string]string
	var merr, rerr error
	if _, ok := waittest.Poll(30*time.Second, func() bool {
		master, merr = sc.GetMasterAddrByName(context.Background(), SentinelMaster).Result()
		reps, rerr = sc.Replicas(context.Background(), SentinelMaster).Result()
		if merr != nil || rerr != nil || len(master) != 2 || net.JoinHostPort(master[0], master[1]) != primary.Addr {
			return false
		}
		for _, r := range reps {
			if net.JoinHostPort(r["ip"], r["port"]) == replica.Addr && r["flags"] == "slave" && r["master-link-status"] == "ok" {
				return true
			}
		}
		return false
	}); !ok {
		tb.Fatalf("redistest: the Sentinel on %s does not name %s with its replica %s: %v %v %v %v",
			sentinel.Addr, primary.Addr, replica.Addr, master, merr, reps, rerr)
	}
	return &Sentinel{
		URL:     fmt.Sprintf("redis-sentinel://%s/0?master=%s", sentinel.Addr, SentinelMaster),
		Primary: primary, Replica: replica, Sentinel: sentinel,
	}
}

// Dial returns a failover client of the topology (redisurl.Open of URL),
// answering, closed at cleanup.
func (s *Sentinel) Dial(tb testing.TB) redis.UniversalClient {
	tb.Helper()
	c, err := redisurl.Open(s.URL)
	if err != nil {
		tb.Fatalf("redistest: %s: %v", s.URL, err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		tb.Fatalf("redistest: %s does not answer: %v", s.URL, err)
	}
	return c
}

// sentinels are the topologies of the sentinel backend, by the test that
// opened each: its Dial finds the test's own.
var sentinels sync.Map // testing.TB → *Sentinel

// SentinelBackend is a Sentinel topology of each test's own (MustSentinel):
// Open starts it and returns a failover client and a fresh prefix, Dial one
// more failover client of the topology the test opened (Open first). The
// topology dies with the test, its keys with it.
var SentinelBackend = Backend{"sentinel",
	func(tb testing.TB) (redis.UniversalClient, string) {
		tb.Helper()
		s := MustSentinel(tb)
		sentinels.Store(tb, s)
		tb.Cleanup(func() { sentinels.Delete(tb) })
		return s.Dial(tb), MustPrefix(tb)
	},
	func(tb testing.TB) redis.UniversalClient {
		tb.Helper()
		s, ok := sentinels.Load(tb)
		if !ok {
			tb.Fatal("redistest: the sentinel backend's Dial needs the test's Open first")
		}
		return s.(*Sentinel).Dial(tb)
	},
}
