package cache

import (
	"errors"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestMemoryFull(t *testing.T) {
	info := func(used, limit int, policy string) string {
		return "# Memory\r\nused_memory:" + strconv.Itoa(used) + "\r\nmaxmemory:" + strconv.Itoa(limit) + "\r\nmaxmemory_policy:" + policy + "\r\n"
	}
	cases := []struct {
		name string
		info string
		want bool
	}{
		{"noeviction under the share", info(70, 100, "noeviction"), false},
		{"noeviction at the share", info(80, 100, "noeviction"), true},
		{"noeviction without maxmemory", info(1e9, 0, "noeviction"), false},
		{"allkeys-lru over", info(99, 100, "allkeys-lru"), false},
		{"volatile-lru over", info(99, 100, "volatile-lru"), false},
		{"empty reply", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := memoryFull(c.info); got != c.want {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

// TestPutStopsBeforeOutOfMemory fills a Redis of its own (maxmemory 4 MB,
// noeviction, as a limiter Redis runs) with 512 KiB entries: Put refuses
// with ErrFull before Redis refuses anything, so other writes still succeed.
func TestPutStopsBeforeOutOfMemory(t *testing.T) {
	rdb := ownRedis(t, "--maxmemory", "4mb", "--maxmemory-policy", "noeviction")
	s := New(rdb, Options{Prefix: "t"})
	ctx := t.Context()
	e := &Entry{Status: 200, Header: http.Header{}, Body: make([]byte, 512<<10), Stored: time.Now(), TTL: time.Hour}
	var err error
	for i := 0; i < 20 && err == nil; i++ {
		if cerr := s.checkMemory(ctx); cerr != nil {
			t.Fatalf("checkMemory: %v", cerr)
		}
		err = s.Put(ctx, "t:cache:e:"+strconv.Itoa(i), http.Header{}, e)
	}
	if !errors.Is(err, ErrFull) {
		t.Fatalf("Put until full: got %v, want ErrFull", err)
	}
	if err := rdb.Set(ctx, "t:limiter", "1", 0).Err(); err != nil {
		t.Errorf("a limiter write after the cache stopped: got %v, want success", err)
	}
}

// ownRedis starts a redis-server of the test's own on a unix socket, with
// no persistence and the extra arguments, and stops it at cleanup.
func ownRedis(t *testing.T, args ...string) *redis.Client {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "redis.sock")
	cmd := exec.Command("redis-server", append([]string{"--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no"}, args...)...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: sock})
	t.Cleanup(func() { _ = c.Close() })
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if c.Ping(t.Context()).Err() == nil {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not answer: %s", out.String())
		}
	}
}
