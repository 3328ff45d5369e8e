package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"tollgate/internal/waittest"
)

// redisProc is a redis-server of the test's own, on its own port, that the
// test may stop and start (never the shared server). It keeps an
// append-only file fsynced on every write in a temporary directory, as
// docs/operations.md ("Redis") asks of the limiter Redis: a restart comes back with its data
// but without loaded scripts; wipe makes the next start come back empty.
type redisProc struct {
	port   int
	dir    string
	env    []string // added to the server's environment (redistest.ClockEnv)
	cmd    *exec.Cmd
	client *redis.Client
}

// mustRedisServer starts a redis-server on a free port; it is stopped at
// cleanup.
func mustRedisServer(t *testing.T) *redisProc {
	t.Helper()
	return mustRedisServerWith(t, nil)
}

// mustRedisServerWith is mustRedisServer with env added to the server's
// environment at every start.
func mustRedisServerWith(t *testing.T, env []string) *redisProc {
	t.Helper()
	r := &redisProc{port: freePort(t), dir: t.TempDir(), env: env}
	r.client = redis.NewClient(&redis.Options{Addr: r.addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = r.client.Close(); r.stop(t) })
	r.start(t)
	return r
}

func (r *redisProc) addr() string { return fmt.Sprintf("127.0.0.1:%d", r.port) }

// url is the redis:// URL of the server.
func (r *redisProc) url() string { return "redis://" + r.addr() + "/0" }

// start runs the server and waits until it answers PING.
func (r *redisProc) start(t *testing.T) {
	t.Helper()
	r.cmd = exec.Command("redis-server", "--port", fmt.Sprint(r.port), "--bind", "127.0.0.1",
		"--dir", r.dir, "--save", "", "--appendonly", "yes", "--appendfsync", "always",
		"--maxmemory-policy", "noeviction")
	r.cmd.Stdout, r.cmd.Stderr = io.Discard, io.Discard
	if r.env != nil {
		r.cmd.Env = append(os.Environ(), r.env...)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	if _, ok := waittest.Poll(5*time.Second, func() bool { return r.client.Ping(context.Background()).Err() == nil }); !ok {
		t.Fatalf("redis-server on %s does not answer after 5s", r.addr())
	}
}

// stop kills the server (as a crash would) and waits for it to exit.
func (r *redisProc) stop(t *testing.T) {
	t.Helper()
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
}

// wipe deletes the stopped server's files: the next start is empty.
func (r *redisProc) wipe(t *testing.T) {
	t.Helper()
	if err := os.RemoveAll(r.dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

// freePort returns a TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// counterValue returns the sum of the counter named name in m's registry.
func counterValue(t *testing.T, m *Main, name string) float64 {
	t.Helper()
	mfs, err := m.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return sumCounter(mfs, name)
}

func sumCounter(mfs []*dto.MetricFamily, name string) float64 {
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// logCount counts log lines whose message is msg.
func logCount(logs *logBuffer, msg string) int {
	return strings.Count(logs.String(), "msg=\""+msg+"\"")
}
