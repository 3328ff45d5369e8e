package keyspace

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redistest"
)

// Slot agrees with the live Redis Cluster's CLUSTER KEYSLOT on a corpus:
// hash tag edge cases (empty, unclosed, nested, several, at either end),
// every kind of name this package builds, and random names of random
// bytes, many with braces.
func TestSlotMatchesClusterKeyslot(t *testing.T) {
	t.Parallel()
	rdb, _ := redistest.MustCluster(t)
	node := redis.NewClient(&redis.Options{Addr: rdb.Options().Addrs[0]})
	t.Cleanup(func() { _ = node.Close() })
	corpus := []string{"", "foo", "{foo}bar", "x{foo}", "{}foo", "{}", "{", "}", "}{", "{foo", "foo}", "{{foo}}",
		"{foo}{bar}", "a{}{b}", "a{b}{c}", "{}{b}", "{ }", "{\x00}", "ключ{ключ}", "{k:abcdefghij}:tb:p1"}
	s := Space{Prefix: "tg"}
	corpus = append(corpus, s.PlanBucket("abcdefghij", "p1"), s.PlanMethodBucket("a{b}", "p{1}", "api", "prod", "GET", "/pets/{id}"),
		s.Quota("k}", "p1"), s.Usage("{k", "p1"), s.StageBucket("api", "st{a}ge", "GET", "/{proxy+}"), s.AccountBucket(),
		s.CacheGeneration("api", "prod"), s.CacheEntry("d1g3st"))
	rng := rand.New(rand.NewPCG(9, 16384))
	alphabet := []byte("ab{}{}:\x00\xff")
	for range 2000 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			if rng.IntN(2) == 0 {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			} else {
				b[i] = byte(rng.IntN(256))
			}
		}
		corpus = append(corpus, string(b))
	}
	cmds := make([]*redis.IntCmd, len(corpus))
	pipe := node.Pipeline()
	for i, k := range corpus {
		cmds[i] = pipe.ClusterKeySlot(context.Background(), k)
	}
	if _, err := pipe.Exec(context.Background()); err != nil {
		t.Fatalf("CLUSTER KEYSLOT: %v", err)
	}
	for i, k := range corpus {
		if got, want := Slot(k), int(cmds[i].Val()); got != want {
			t.Errorf("Slot(%s): got %d, want %d (CLUSTER KEYSLOT)", fmt.Sprintf("%q", k), got, want)
		}
	}
}
