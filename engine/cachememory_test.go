package engine

import (
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"tollgate/cache"
	"tollgate/internal/redistest"
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
// with ErrCacheFull before Redis refuses anything, so other writes still succeed.
func TestFillStopsBeforeOutOfMemory(t *testing.T) {
	_, rdb := redistest.MustServer(t, "--maxmemory", "4mb", "--maxmemory-policy", "noeviction")
	s := New(rdb, Options{Prefix: "t"}).cache
	ctx := t.Context()
	e := &cache.Entry{Status: 200, Header: http.Header{}, Body: make([]byte, 512<<10), Stored: time.Now(), TTL: time.Hour}
	var err error
	for i := 0; i < 20 && err == nil; i++ {
		if cerr := s.checkMemory(ctx); cerr != nil {
			t.Fatalf("checkMemory: %v", cerr)
		}
		err = s.put(ctx, "t:cache:e:"+strconv.Itoa(i), http.Header{}, e)
	}
	if !errors.Is(err, ErrCacheFull) {
		t.Fatalf("put until full: got %v, want ErrCacheFull", err)
	}
	if err := rdb.Set(ctx, "t:limiter", "1", 0).Err(); err != nil {
		t.Errorf("a limiter write after the cache stopped: got %v, want success", err)
	}
}
