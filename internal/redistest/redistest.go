// Package redistest gives each test its own keyspace on the real Redis
// server that tests run against (TOLLGATE_TEST_REDIS_URL, default
// redis://127.0.0.1:6379/0) and on the real Redis Cluster
// (TOLLGATE_TEST_REDIS_CLUSTER_URL, see ClusterURL), and starts private
// servers for fault tests (MustServer). Tests never FLUSHDB: each gets a unique key
// prefix and its keys are deleted at cleanup, so tests may run in parallel.
package redistest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redisurl"
	"tollgate/internal/waittest"
)

// URL returns the Redis URL tests use.
func URL() string {
	if u := os.Getenv("TOLLGATE_TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// MustClient returns a client of the test Redis and a fresh key prefix
// ("t" + 12 hex characters) to use instead of "tg". It fails the test when
// Redis does not answer (a missing service never skips). At cleanup it
// deletes every key under the prefix and closes the client.
func MustClient(tb testing.TB) (*redis.Client, string) {
	tb.Helper()
	opt, err := redis.ParseURL(URL())
	if err != nil {
		tb.Fatalf("redistest: parse %s: %v", URL(), err)
	}
	opt.ContextTimeoutEnabled = true // as production clients (cmd/tollgate)
	c := redis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		tb.Fatalf("redistest: Redis at %s does not answer: %v", URL(), err)
	}
	prefix := MustPrefix(tb)
	tb.Cleanup(func() {
		DeletePrefix(context.Background(), c, prefix)
		_ = c.Close()
	})
	return c, prefix
}

// MustPrefix returns a fresh unique key prefix.
func MustPrefix(tb testing.TB) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "t" + hex.EncodeToString(b[:])
}

// DeletePrefix deletes every key that starts with prefix + ":", one
// UNLINK per key in pipelines (on a Redis Cluster node a multi-key UNLINK
// would cross slots).
func DeletePrefix(ctx context.Context, c *redis.Client, prefix string) {
	iter := c.Scan(ctx, 0, prefix+":*", 1000).Iterator()
	pipe := c.Pipeline()
	for iter.Next(ctx) {
		pipe.Unlink(ctx, iter.Val())
		if pipe.Len() == 500 {
			_, _ = pipe.Exec(ctx)
		}
	}
	_, _ = pipe.Exec(ctx)
}

// MustServer starts a redis-server of the test's own on a free loopback
// port, with no persistence and the extra arguments (e.g. "--maxmemory",
// "4mb"), and returns its address ("127.0.0.1:port") and a client of it;
// both are stopped at cleanup. For fault tests that stop, flush or
// reconfigure a server: never the shared one.
func MustServer(tb testing.TB, args ...string) (string, *redis.Client) {
	tb.Helper()
	s := MustServerProcess(tb, args...)
	return s.Addr, s.Client
}

// Server is a redis-server process of a test's own (MustServerProcess).
type Server struct {
	Addr   string
	Client *redis.Client
	cmd    *exec.Cmd
	// clock is the moving clock of a server of MustServerStepped
	clock *SteppedClock
}

// Pause stops the server's process (SIGSTOP): connections stay open and
// what clients send waits, unanswered, in its socket buffers.
func (s *Server) Pause(tb testing.TB) {
	tb.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		tb.Fatalf("redistest: SIGSTOP: %v", err)
	}
}

// Resume continues a paused server (SIGCONT): it runs what waited.
func (s *Server) Resume(tb testing.TB) {
	tb.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		tb.Fatalf("redistest: SIGCONT: %v", err)
	}
}

// MustServerProcess is MustServer returning the process too, for tests
// that pause it.
func MustServerProcess(tb testing.TB, args ...string) *Server {
	tb.Helper()
	return startServer(tb, nil, args)
}

// MustServerAhead is MustServerProcess with the server's wall clock moved
// by offset (see ClockEnv): its TIME, its scripts' time and its key expiry
// are offset away from the test's own clock.
func MustServerAhead(tb testing.TB, offset time.Duration, args ...string) *Server {
	tb.Helper()
	return startServer(tb, ClockEnv(tb, offset), args)
}

// MustServerStepped is MustServerProcess with a wall clock the test moves
// while the server runs (a SteppedClock): offset away from the test's
// clock at start, then wherever StepClock or ClockAt sets it. Its TIME,
// script time and key expiry follow (a step forward expires what a wait
// as long would).
func MustServerStepped(tb testing.TB, offset time.Duration, args ...string) *Server {
	tb.Helper()
	return MustServerOn(tb, NewSteppedClock(tb, offset), args...)
}

// MustServerOn is MustServerStepped on the clock c, which other servers
// of the test may follow too.
func MustServerOn(tb testing.TB, c *SteppedClock, args ...string) *Server {
	tb.Helper()
	srv := startServer(tb, c.Env(tb), args)
	srv.clock = c
	return srv
}

// StepClock moves the wall clock of a server of MustServerStepped to
// offset away from the test's clock.
func (s *Server) StepClock(tb testing.TB, offset time.Duration) {
	tb.Helper()
	if s.clock == nil {
		tb.Fatal("redistest: StepClock needs a server of MustServerStepped")
	}
	s.clock.Set(tb, offset)
}

// ClockAt moves the wall clock of a server of MustServerStepped so that it
// reads at now (approximately: the offset is taken from the test's clock
// at the call) and returns the offset set.
func (s *Server) ClockAt(tb testing.TB, at time.Time) time.Duration {
	tb.Helper()
	if s.clock == nil {
		tb.Fatal("redistest: ClockAt needs a server of MustServerStepped")
	}
	return s.clock.At(tb, at)
}

// SteppedClock is a wall clock offset that redis-servers started with its
// Env follow while they run, and across their restarts.
type SteppedClock struct{ file string }

// NewSteppedClock returns a SteppedClock offset away from the test's
// clock; its file is removed at cleanup.
func NewSteppedClock(tb testing.TB, offset time.Duration) *SteppedClock {
	tb.Helper()
	c := &SteppedClock{file: filepath.Join(tb.TempDir(), "clock")}
	c.Set(tb, offset)
	return c
}

// Env is the environment that starts a redis-server on c (ClockEnv and
// the shim's clock file).
func (c *SteppedClock) Env(tb testing.TB) []string {
	tb.Helper()
	return append(ClockEnv(tb, 0), "REDISTEST_CLOCK_FILE="+c.file)
}

// Set moves c to offset away from the test's clock: one 8-byte write in
// place (the shim maps the file and reads it whole).
func (c *SteppedClock) Set(tb testing.TB, offset time.Duration) {
	tb.Helper()
	f, err := os.OpenFile(c.file, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		tb.Fatalf("redistest: clock file: %v", err)
	}
	defer f.Close()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(offset.Nanoseconds()))
	if _, err := f.WriteAt(b[:], 0); err != nil {
		tb.Fatalf("redistest: clock file: %v", err)
	}
}

// At moves c so that it reads at now (the offset taken from the test's
// clock at the call) and returns the offset set.
func (c *SteppedClock) At(tb testing.TB, at time.Time) time.Duration {
	tb.Helper()
	off := time.Until(at)
	c.Set(tb, off)
	return off
}

func startServer(tb testing.TB, env, args []string) *Server {
	tb.Helper()
	return startRedis(tb, env, nil, args)
}

// startRedis starts a redis-server with the arguments lead first (a
// configuration file must come first), then the port, loopback, no
// persistence, a directory of its own and args, and waits until it
// answers PING.
func startRedis(tb testing.TB, env, lead, args []string) *Server {
	tb.Helper()
	port := FreePort(tb)
	addr := net.JoinHostPort("127.0.0.1", port)
	argv := append(slices.Clip(lead), "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", tb.TempDir())
	cmd := exec.Command("redis-server", append(argv, args...)...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		tb.Fatalf("redistest: start redis-server: %v", err)
	}
	tb.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGCONT); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	tb.Cleanup(func() { _ = c.Close() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if c.Ping(context.Background()).Err() == nil {
			return &Server{Addr: addr, Client: c, cmd: cmd}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: redis-server on %s did not answer: %s", addr, out.String())
		}
	}
}

// ClusterURL returns the Redis Cluster URL tests use
// (TOLLGATE_TEST_REDIS_CLUSTER_URL; default the three masters that
// scripts/cluster.sh starts, which `make test` runs first).
func ClusterURL() string {
	if u := os.Getenv("TOLLGATE_TEST_REDIS_CLUSTER_URL"); u != "" {
		return u
	}
	return "redis-cluster://127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103"
}

// MustCluster returns a client of the test Redis Cluster and a fresh key
// prefix, as MustClient. It fails the test when the cluster does not
// answer or is not ok (a missing service never skips). At cleanup it
// deletes every key under the prefix on every master and closes the
// client.
func MustCluster(tb testing.TB) (*redis.ClusterClient, string) {
	tb.Helper()
	u, err := redisurl.Open(ClusterURL())
	if err != nil {
		tb.Fatalf("redistest: %s: %v", ClusterURL(), err)
	}
	c, ok := u.(*redis.ClusterClient)
	if !ok {
		tb.Fatalf("redistest: %s is not a redis-cluster:// URL", ClusterURL())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := c.ClusterInfo(ctx).Result()
	if err != nil || !strings.Contains(info, "cluster_state:ok") {
		tb.Fatalf("redistest: Redis Cluster at %s does not answer or is not ok (run scripts/cluster.sh): %v %s", ClusterURL(), err, info)
	}
	prefix := MustPrefix(tb)
	tb.Cleanup(func() {
		_ = c.ForEachMaster(context.Background(), func(ctx context.Context, m *redis.Client) error {
			DeletePrefix(ctx, m, prefix)
			return nil
		})
		_ = c.Close()
	})
	return c, prefix
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("redistest: find a free port: %v", err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// MustClusterServer starts a Redis Cluster of the test's own: masters
// redis-servers in cluster mode (MustServer with the extra arguments args,
// each with a free cluster bus port) that share the 16384 slots in equal
// ranges, and returns a cluster client of it and a client of each master
// (all closed at cleanup). For fault tests on the Redis Cluster path that
// flush or reconfigure a master: never the shared cluster.
func MustClusterServer(tb testing.TB, masters int, args ...string) (*redis.ClusterClient, []*redis.Client) {
	tb.Helper()
	c, ms, _ := MustClusterWithReplicas(tb, masters, 0, args...)
	nodes := make([]*redis.Client, len(ms))
	for i, m := range ms {
		nodes[i] = m.Client
	}
	return c, nodes
}

// MustClusterWithReplicas is MustClusterServer with a replica of the first
// master when replicas is 1 (its data synchronised before it returns), and
// the servers' processes: tests kill a master and watch its replica take
// over.
func MustClusterWithReplicas(tb testing.TB, masters, replicas int, args ...string) (*redis.ClusterClient, []*Server, []*Server) {
	tb.Helper()
	return mustCluster(tb, masters, replicas, nil, args)
}

// MustClusterStepped is MustClusterServer with every master on the wall
// clock c (a SteppedClock the test moves): their TIME, script time and
// key expiry follow its steps. Steps should stay below the cluster's
// --cluster-node-timeout (pass a long one in args): the cluster bus times
// its peers by the wall clock.
func MustClusterStepped(tb testing.TB, masters int, c *SteppedClock, args ...string) *redis.ClusterClient {
	tb.Helper()
	cc, _, _ := mustCluster(tb, masters, 0, c.Env(tb), args)
	return cc
}

// mustCluster starts the cluster of MustClusterWithReplicas, its servers
// with the environment env added (nil: none).
func mustCluster(tb testing.TB, masters, replicas int, env, args []string) (*redis.ClusterClient, []*Server, []*Server) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addrs := make([]string, masters)
	nodes := make([]*Server, masters)
	bus := make([]string, masters+replicas) // cluster bus ports
	start := func(i int) *Server {
		bus[i] = FreePort(tb)
		return startServer(tb, env, append([]string{"--cluster-enabled", "yes", "--cluster-port", bus[i],
			"--cluster-config-file", "nodes.conf"}, args...))
	}
	meet := func(n *Server) {
		host, port, _ := net.SplitHostPort(addrs[0])
		if err := n.Client.Do(ctx, "cluster", "meet", host, port, bus[0]).Err(); err != nil {
			tb.Fatalf("redistest: CLUSTER MEET from %s: %v", n.Addr, err)
		}
	}
	for i := range masters {
		nodes[i] = start(i)
		addrs[i] = nodes[i].Addr
		first, last := i*16384/masters, (i+1)*16384/masters-1
		if err := nodes[i].Client.Do(ctx, "cluster", "addslotsrange", first, last).Err(); err != nil {
			tb.Fatalf("redistest: CLUSTER ADDSLOTSRANGE %d %d on %s: %v", first, last, addrs[i], err)
		}
		if i > 0 {
			meet(nodes[i])
		}
	}
	waitOK := func(n *Server, known int) {
		want := fmt.Sprintf("cluster_known_nodes:%d", known)
		for {
			info, err := n.Client.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, want) {
				return
			}
			if ctx.Err() != nil {
				tb.Fatalf("redistest: the cluster of %v is not ok: %v %s", addrs, err, info)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for _, n := range nodes {
		waitOK(n, masters)
	}
	var reps []*Server
	for r := range replicas {
		rep := start(masters + r)
		meet(rep)
		waitOK(rep, masters+1)
		id, err := nodes[0].Client.Do(ctx, "cluster", "myid").Text()
		if err != nil {
			tb.Fatalf("redistest: CLUSTER MYID: %v", err)
		}
		for rep.Client.Do(ctx, "cluster", "replicate", id).Err() != nil { // the replica learns the master's id by gossip
			if ctx.Err() != nil {
				tb.Fatalf("redistest: CLUSTER REPLICATE %s on %s did not succeed", id, rep.Addr)
			}
			time.Sleep(10 * time.Millisecond)
		}
		for {
			info, _ := rep.Client.Info(ctx, "replication").Result()
			if strings.Contains(info, "master_link_status:up") {
				break
			}
			if ctx.Err() != nil {
				tb.Fatalf("redistest: replica %s never synchronised: %s", rep.Addr, info)
			}
			time.Sleep(10 * time.Millisecond)
		}
		reps = append(reps, rep)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ContextTimeoutEnabled: true})
	tb.Cleanup(func() { _ = c.Close() })
	return c, nodes, reps
}

// WaitReplicated waits until replica has applied every write its master s
// had taken when called. WAIT cannot say this for another client's writes:
// it counts acknowledgements of the calling connection's own last write.
func (s *Server) WaitReplicated(tb testing.TB, replica *Server) {
	tb.Helper()
	offset := func(c *redis.Client, field string) int64 {
		info, err := c.Info(context.Background(), "replication").Result()
		if err != nil {
			return -1
		}
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, field+":"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		return -1
	}
	want := offset(s.Client, "master_repl_offset")
	if want < 0 {
		tb.Fatalf("redistest: no replication offset on %s", s.Addr)
	}
	waittest.Until(tb, fmt.Sprintf("replica %s at offset %d of %s", replica.Addr, want, s.Addr), 30*time.Second,
		func() bool { return offset(replica.Client, "slave_repl_offset") >= want })
}

// Kill kills the server's process (SIGKILL), as a machine that dies.
func (s *Server) Kill(tb testing.TB) {
	tb.Helper()
	if err := s.cmd.Process.Kill(); err != nil {
		tb.Fatalf("redistest: kill: %v", err)
	}
}

// Backend is a Redis the limiter runs on: one primary (MustClient), the
// three-master Redis Cluster (MustCluster) or a primary found through
// Sentinel (SentinelBackend).
type Backend struct {
	Name string
	// Open returns a client and a fresh key prefix, as MustClient.
	Open func(tb testing.TB) (redis.UniversalClient, string)
	// Dial returns one more client of the same Redis (one per gateway node
	// of a test), closed at cleanup.
	Dial func(tb testing.TB) redis.UniversalClient
}

// Backends are the primary and the cluster: EachBackend's. A Sentinel's
// primary is a primary to the engine, which decides on it exactly as on
// "primary"; what Sentinel adds is the failover client and its topology,
// which cost three processes per test. So only the lease contract's tests
// (engine/lease) run on Sentinel too (AllBackends), the others here.
var Backends = []Backend{
	{"primary", func(tb testing.TB) (redis.UniversalClient, string) { return MustClient(tb) }, dialURL(URL)},
	{"cluster", func(tb testing.TB) (redis.UniversalClient, string) { return MustCluster(tb) }, dialURL(ClusterURL)},
}

// AllBackends are Backends and SentinelBackend: one primary, Redis
// Cluster and Sentinel, the backends docs/leases.md's contract is tested on.
var AllBackends = append(slices.Clip(Backends), SentinelBackend)

// dialURL returns a Backend.Dial of the Redis at url().
func dialURL(url func() string) func(tb testing.TB) redis.UniversalClient {
	return func(tb testing.TB) redis.UniversalClient {
		tb.Helper()
		c, err := redisurl.Open(url())
		if err != nil {
			tb.Fatalf("redistest: %s: %v", url(), err)
		}
		tb.Cleanup(func() { _ = c.Close() })
		return c
	}
}

// EachBackend runs test as a parallel subtest on every backend of
// Backends.
func EachBackend(t *testing.T, test func(t *testing.T, b Backend)) {
	EachBackendOf(t, Backends, test)
}

// EachBackendOf runs test as a parallel subtest on every backend of bs.
func EachBackendOf(t *testing.T, bs []Backend, test func(t *testing.T, b Backend)) {
	for _, b := range bs {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			test(t, b)
		})
	}
}

//go:embed testdata/clockshift.c
var clockShiftSource []byte

var clockShift struct {
	once sync.Once
	path string
	err  error
}

// ClockEnv returns the environment that starts a redis-server with its wall
// clock moved by offset: testdata/clockshift.c, preloaded (LD_PRELOAD).
// It is compiled with the C compiler cgo uses, once per version of the
// source, into the temporary directory (where later runs find it). Only the
// server's process is moved; the test and the nodes keep the true time.
func ClockEnv(tb testing.TB, offset time.Duration) []string {
	tb.Helper()
	clockShift.once.Do(func() { clockShift.path, clockShift.err = buildClockShift() })
	if clockShift.err != nil {
		tb.Fatalf("redistest: build the clock shift: %v", clockShift.err)
	}
	return []string{"LD_PRELOAD=" + clockShift.path, "REDISTEST_CLOCK_OFFSET_NS=" + strconv.FormatInt(offset.Nanoseconds(), 10)}
}

func buildClockShift() (string, error) {
	sum := sha256.Sum256(clockShiftSource)
	lib := filepath.Join(os.TempDir(), "redistest-clockshift-"+hex.EncodeToString(sum[:8])+".so")
	if _, err := os.Stat(lib); err == nil {
		return lib, nil
	}
	dir, err := os.MkdirTemp("", "redistest-clockshift-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	src, out := filepath.Join(dir, "clockshift.c"), filepath.Join(dir, "clockshift.so")
	if err := os.WriteFile(src, clockShiftSource, 0o644); err != nil {
		return "", err
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if msg, err := exec.Command(cc, "-shared", "-fPIC", "-O2", "-o", out, src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s: %v: %s", cc, err, msg)
	}
	return lib, os.Rename(out, lib) // atomic: a concurrent test binary finds a whole file or none
}
