package limiter

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Pending is a decision queued on a pipeline by Queue; read it with Result
// after the pipeline ran.
type Pending struct {
	l    *Limiter
	req  *Request
	plan int
	cmd  *redis.Cmd
}

// Queue adds the decision of req to pipe (EVALSHA), so the gateway can read
// its cache entry in the same round trip (DESIGN.md 4.2 step 3). The
// caller's ctx carries the deadline (Options.Timeout is not applied here);
// run pipe.Exec, ignore its error, and call Result. req must not change
// until Result returns.
func (l *Limiter) Queue(ctx context.Context, pipe redis.Pipeliner, req *Request) *Pending {
	keys, args, plan := l.decideArgs(req)
	return &Pending{l: l, req: req, plan: plan, cmd: decideScript.EvalSha(ctx, pipe, keys, args...)}
}

// Result returns the queued decision. Inside a pipeline go-redis cannot
// fall back to EVAL, so a NOSCRIPT reply (a restarted or flushed Redis)
// loads the script and decides again with Decide: one more round trip, not
// an outage. The script did not run in that case, so nothing was charged
// twice. Errors are wrapped as Decide's.
func (p *Pending) Result(ctx context.Context) (Decision, error) {
	v, err := p.cmd.Slice()
	if err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT")) {
		return p.l.Decide(ctx, p.req)
	}
	if err != nil {
		return Decision{}, fmt.Errorf("limiter: decide: %w", err)
	}
	return parseDecision(v, p.req, p.plan)
}
