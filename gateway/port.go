package gateway

import (
	"context"

	"tollgate/cache"
	"tollgate/limit"
)

// Engine is the port through which the gateway reaches Redis: limit
// decisions and the stage response cache. The gateway holds no Redis
// client and builds no Redis key name; *engine.Engine implements Engine
// (cmd wires it), and bounds its own waits on Redis (docs/behaviour.md,
// "When Redis cannot decide"), so the gateway adds no deadline of its own.
type Engine interface {
	// Decide makes the atomic limit decision of one request
	// (docs/behaviour.md, "Throttles and quota"). An error (Redis down
	// or not answering) means it could not decide: the failure mode
	// applies.
	Decide(ctx context.Context, req *limit.Request) (limit.Decision, error)
	// DecideLookup is Decide for a request of a caching method: in the
	// same round trip it reads the stage's cache generation and, unless
	// lk.Refresh, the entry, and fills lk's outputs (cache.Lookup).
	DecideLookup(ctx context.Context, req *limit.Request, lk *cache.Lookup) (limit.Decision, error)
	// Fill stores ent as the entry lk names (after the response was sent),
	// kept for ent.TTL plus ent.Keep (its stale windows), within a deadline
	// of its own, whatever ctx allows.
	Fill(ctx context.Context, lk *cache.Lookup, ent *cache.Entry) error
	// KeyUsage reads the usage of a key in a plan now, charging nothing
	// (the partner usage endpoint): the limiter's time, the quota q's state
	// in its current period (none when q is nil) and the count of the
	// limiter's UTC day.
	KeyUsage(ctx context.Context, keyID, planID string, q *limit.Quota) (limit.Usage, error)
	// Settle charges an admitted request once its response is known: a
	// settled cost's difference from its reservation, and its usage count
	// when it was decided limit.Request.Uncounted (limit.Settlement).
	Settle(ctx context.Context, s limit.Settlement) error
}
