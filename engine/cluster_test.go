package engine

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redistest"
)

// backend is a Redis the engine runs on: one primary, or the three-master
// Redis Cluster (TOLLGATE_TEST_REDIS_CLUSTER_URL).
type backend struct {
	name string
	open func(tb testing.TB) (redis.UniversalClient, string)
}

var backends = []backend{
	{"primary", func(tb testing.TB) (redis.UniversalClient, string) { return redistest.MustClient(tb) }},
	{"cluster", func(tb testing.TB) (redis.UniversalClient, string) { return redistest.MustCluster(tb) }},
}

// mustEngineOn returns an Engine on b with a fresh prefix and opts (Prefix
// and a zero Timeout filled in), its scripts loaded.
func mustEngineOn(tb testing.TB, b backend, opts Options) *Engine {
	tb.Helper()
	rdb, prefix := b.open(tb)
	opts.Prefix = prefix
	if opts.Timeout == 0 {
		opts.Timeout = testTimeout
	}
	return mustLoaded(tb, New(rdb, opts))
}

func TestClusterSmoke(t *testing.T) {
	l := mustEngineOn(t, backends[1], Options{})
	req := nodeRequest(l, "k1", 0, 2, 3)
	for i, want := range []bool{true, true, false} {
		d, err := l.decideKeyed(t.Context(), req, nil)
		if err != nil || d.Allowed != want {
			t.Fatalf("decision %d: got %+v, %v, want allowed=%v", i+1, d, err, want)
		}
	}
}
