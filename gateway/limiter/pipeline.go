package limiter

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redisscript"
)

// Pending is a decision queued on a pipeline by Queue; read it with Result
// after the pipeline ran.
type Pending struct {
	l    *Limiter
	req  *Request
	plan int
	cmd  *redis.Cmd
	err  error
}

// Queue adds the decision of req alone to pipe (one EVALSHA of
// limiter.lua), for a caller that runs its own pipeline or transaction
// around it; the gateway uses DecideAlong, which batches. The caller's ctx
// carries the deadline (Options.Timeout is not applied here); run
// pipe.Exec, ignore its error, and call Result. req must not change until
// Result returns.
func (l *Limiter) Queue(ctx context.Context, pipe redis.Pipeliner, req *Request) *Pending {
	a := &batchArgs{stateIdx: map[string]uint16{}, usageIdx: map[string]uint16{}}
	plan, err := a.add(req)
	if err != nil {
		return &Pending{l: l, req: req, err: err}
	}
	keys, args := a.keysAndArgs(l.clock.arg(), 1)
	return &Pending{l: l, req: req, plan: plan, cmd: decideScript.EvalSha(ctx, pipe, keys, args...)}
}

// Result returns the queued decision. Inside a pipeline go-redis cannot
// fall back to EVAL, so a NOSCRIPT reply (a restarted or flushed Redis)
// loads the script and decides again with Decide: one more round trip, not
// an outage. The script did not run in that case, so nothing was charged
// twice. Errors are wrapped as Decide's.
func (p *Pending) Result(ctx context.Context) (Decision, error) {
	if p.err != nil {
		return Decision{}, p.err
	}
	reply, err := p.cmd.Text()
	if redisscript.IsNoScript(err) {
		return p.l.Decide(ctx, p.req)
	}
	if err == nil && len(reply) != replySize {
		err = fmt.Errorf("reply has %d bytes, want %d", len(reply), replySize)
	}
	if err != nil {
		return Decision{}, fmt.Errorf("limiter: decide: %w", err)
	}
	r := decodeReply(reply, 0)
	return parseDecision(&r, p.req, p.plan), nil
}
