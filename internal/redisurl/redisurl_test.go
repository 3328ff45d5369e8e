package redisurl

import (
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestOpen(t *testing.T) {
	tests := []struct {
		url     string
		kind    string
		seeds   []string // cluster seeds
		wantErr bool
	}{
		{"redis://127.0.0.1:6379/0", "single", nil, false},
		{"rediss://:pw@127.0.0.1:6380/1", "single", nil, false},
		{"redis-cluster://127.0.0.1:7000?addr=127.0.0.1:7001", "cluster", []string{"127.0.0.1:7000", "127.0.0.1:7001"}, false},
		{"redis-cluster://127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002", "cluster", []string{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"}, false},
		{"redis-cluster://u:p@127.0.0.1:7000,127.0.0.1:7001?addr=127.0.0.1:7002&max_redirects=5", "cluster",
			[]string{"127.0.0.1:7000", "127.0.0.1:7002", "127.0.0.1:7001"}, false},
		{"redis-cluster://127.0.0.1:7000", "cluster", []string{"127.0.0.1:7000"}, false},
		{"rediss-cluster://127.0.0.1:7000,127.0.0.1:7001", "cluster", []string{"127.0.0.1:7000", "127.0.0.1:7001"}, false},
		{"rediss-cluster://", "", nil, true},
		{"redis-cluster://", "", nil, true},
		{"redis-cluster://127.0.0.1:7000,,x:1", "", nil, true},
		{"redis-sentinel://127.0.0.1:26379,127.0.0.1:26380/0?master=mymaster", "failover", nil, false},
		{"redis-sentinel://127.0.0.1:26379", "", nil, true},
		{"memcached://x", "", nil, true},
		{"127.0.0.1:6379", "", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			c, err := Open(tt.url)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("got a client, want an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			kind, deadlines := "", false
			switch c := c.(type) {
			case *redis.Client:
				kind = "single"
				if c.Options().Addr == "FailoverClient" { // how go-redis's NewFailoverClient names its client
					kind = "failover"
				}
				deadlines = c.Options().ContextTimeoutEnabled
			case *redis.ClusterClient:
				kind = "cluster"
				deadlines = c.Options().ContextTimeoutEnabled
				if got := c.Options().Addrs; !slices.Equal(got, tt.seeds) {
					t.Errorf("seeds: got %v, want %v", got, tt.seeds)
				}
			}
			if kind != tt.kind {
				t.Errorf("got %T, want %s", c, tt.kind)
			}
			if !deadlines {
				t.Errorf("ContextTimeoutEnabled: got false, want true (TOLLGATE_REDIS_TIMEOUT must bound every call)")
			}
		})
	}
}
