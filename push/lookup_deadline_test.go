package push

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redistest"
	"tollgate/plans"
)

// stallHook holds every pipeline until release is closed, ignoring the
// context, as go-redis's dial retries against a dead server did.
type stallHook struct{ release chan struct{} }

func (h stallHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h stallHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h stallHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		<-h.release
		return next(ctx, cmds)
	}
}

// TestLookupBoundedByLookupTimeout: a cold lookup whose Redis read overruns
// its deadline still answers (KindUnavailable: the gateway's 503) once
// LookupTimeout has passed, without waiting for the read.
func TestLookupBoundedByLookupTimeout(t *testing.T) {
	c, prefix := redistest.MustClient(t)
	hook := stallHook{release: make(chan struct{})}
	c.AddHook(hook)
	r := NewReader(c, ReaderOptions{Prefix: prefix, LookupTimeout: 20 * time.Millisecond})
	done := make(chan error, 1)
	go func() {
		_, err := r.Lookup(context.Background(), "0000")
		done <- err
	}()
	select {
	case err := <-done:
		if plans.ErrorKind(err) != plans.KindUnavailable {
			t.Errorf("got error %v, want KindUnavailable", err)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("Lookup still waiting for a stalled read 5s after its 20ms LookupTimeout")
	}
	close(hook.release)
}
