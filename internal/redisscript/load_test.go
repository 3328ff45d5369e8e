package redisscript

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redistest"
)

// TestIsNoScript checks IsNoScript against the reply of a real
// server to an EVALSHA of a script it never loaded, inside a pipeline
// (where go-redis does not fall back to EVAL).
func TestIsNoScript(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.MustClient(t)
	ctx := context.Background()
	unknown := redis.NewScript("return '" + prefix + " never loaded'")
	pipe := rdb.Pipeline()
	unknown.EvalSha(ctx, pipe, []string{prefix + ":x"})
	_, err := pipe.Exec(ctx)
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"server NOSCRIPT reply", err, true},
		{"other error", errors.New("ERR wrong number of arguments"), false},
		{"nil", nil, false},
	}
	for _, c := range cases {
		if got := IsNoScript(c.err); got != c.want {
			t.Errorf("%s (%v): got %v, want %v", c.name, c.err, got, c.want)
		}
	}
}
