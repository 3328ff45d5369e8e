package limiter

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestQueueInPipeline(t *testing.T) {
	t.Parallel()
	l := mustLimiter(t)
	other := l.keys.Prefix + ":other"
	if err := l.rdb.Set(t.Context(), other, "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	req := nodeRequest(l, "k1", 0, 1, 5)
	for i, want := range []bool{true, false} {
		pipe := l.rdb.Pipeline()
		get := pipe.Get(t.Context(), other)
		p := l.Queue(t.Context(), pipe, req)
		_, _ = pipe.Exec(t.Context())
		d, err := p.Result(t.Context())
		if err != nil || d.Allowed != want {
			t.Fatalf("request %d: got allowed=%v err=%v, want %v", i+1, d.Allowed, err, want)
		}
		if v, err := get.Result(); err != nil || v != "v" {
			t.Fatalf("GET in the same pipeline: got %q, %v, want %q", v, err, "v")
		}
	}
}

// A NOSCRIPT reply inside a pipeline is answered by deciding again.
func TestQueueNoScriptDecidesAgain(t *testing.T) {
	t.Parallel()
	l := mustLimiter(t)
	req := nodeRequest(l, "k1", 0, 2, 5)
	a := &batchArgs{stateIdx: map[string]uint16{}, usageIdx: map[string]uint16{}}
	plan, err := a.add(req)
	if err != nil {
		t.Fatal(err)
	}
	keys, args := a.keysAndArgs(l.clock.arg(), 1)
	pipe := l.rdb.Pipeline()
	p := &Pending{l: l, req: req, plan: plan, cmd: pipe.EvalSha(t.Context(), "0000000000000000000000000000000000000000", keys, args...)}
	_, _ = pipe.Exec(t.Context())
	if err := p.cmd.Err(); !redis.HasErrorPrefix(err, "NOSCRIPT") {
		t.Fatalf("setup: got %v, want NOSCRIPT", err)
	}
	d, err := p.Result(t.Context())
	if err != nil || !d.Allowed || d.Quota.Remaining != 4 || d.Plan.Remaining != 1 {
		t.Fatalf("got %+v, %v, want admitted once (quota 4, plan 1 left)", d, err)
	}
}
