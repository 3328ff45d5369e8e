package engine

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"tollgate/cache"
	"tollgate/internal/redistest"
	"tollgate/keyspace"
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
// noeviction, as a limiter Redis runs) with 512 KiB entries: Fill refuses
// with errCacheFull before Redis refuses anything, so other writes still succeed.
func TestFillStopsBeforeOutOfMemory(t *testing.T) {
	_, rdb := redistest.MustServer(t, "--maxmemory", "4mb", "--maxmemory-policy", "noeviction")
	s := New(rdb, Options{Prefix: "t"}).cache
	ctx := t.Context()
	e := &cache.Entry{Status: 200, Header: http.Header{}, Body: make([]byte, 512<<10), Stored: time.Now(), TTL: time.Hour}
	var err error
	for i := 0; i < 20 && err == nil; i++ {
		if cerr := s.memory.check(ctx); cerr != nil {
			t.Fatalf("check: %v", cerr)
		}
		err = s.put(ctx, "t:cache:e:"+strconv.Itoa(i), http.Header{}, e)
	}
	if !errors.Is(err, errCacheFull) {
		t.Fatalf("put until full: got %v, want errCacheFull", err)
	}
	if err := rdb.Set(ctx, "t:limiter", "1", 0).Err(); err != nil {
		t.Errorf("a limiter write after the cache stopped: got %v, want success", err)
	}
}

// On a Redis Cluster the cache is full when one master is: here the
// second of two masters of a cluster of the test's own (maxmemory 4 MB,
// noeviction) is filled past the share, the first is empty, and Fill
// refuses (check reads every master, not one node picked at random).
func TestFillStopsWhenOneClusterMasterIsFull(t *testing.T) {
	t.Parallel()
	rdb, masters := redistest.MustClusterServer(t, 2)
	ctx := t.Context()
	if err := masters[1].ConfigSet(ctx, "maxmemory", "4mb").Err(); err != nil {
		t.Fatal(err)
	}
	if err := masters[1].ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	s := New(rdb, Options{Prefix: "t"}).cache
	if err := s.memory.check(ctx); err != nil || s.memory.isFull.Load() {
		t.Fatalf("empty cluster: got full=%v (%v), want not full", s.memory.isFull.Load(), err)
	}
	big := strings.Repeat("x", 512<<10)
	for i := 0; ; i++ { // values in the second master's slots (8192..16383) until it is past the share
		k := "t:fill:" + strconv.Itoa(i)
		if keyspace.Slot(k) < 8192 {
			continue
		}
		if err := rdb.Set(ctx, k, big, time.Hour).Err(); err != nil {
			t.Fatalf("filling the second master: %v", err)
		}
		info, err := masters[1].Info(ctx, "memory").Result()
		if err != nil {
			t.Fatal(err)
		}
		if memoryFull(info) {
			break
		}
	}
	for range 5 { // whichever node a single INFO would have picked
		if err := s.memory.check(ctx); err != nil || !s.memory.isFull.Load() {
			t.Fatalf("one master full: got full=%v (%v), want full", s.memory.isFull.Load(), err)
		}
	}
	e := &cache.Entry{Status: 200, Header: http.Header{}, Stored: time.Now(), TTL: time.Hour}
	if err := s.put(ctx, "t:cache:e:1", http.Header{}, e); !errors.Is(err, errCacheFull) {
		t.Fatalf("Fill with one master full: got %v, want errCacheFull", err)
	}
}
