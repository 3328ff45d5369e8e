package engine

import (
	"context"

	"tollgate/cache"
	"tollgate/limit"
)

// Port is what the gateway consumes (its gateway.Engine): decisions go
// through Top, the limiter layers stacked on the engine (cmd stacks them:
// refusal memory, capacity leases, fail-open charges), and everything else
// comes from the engine itself.
type Port struct {
	*Engine
	Top limit.Decider
	// Settler, when not nil, takes the settles (engine/failopen's Charges:
	// batched, tried again until counted, exactly once); nil means one
	// try of Engine.Settle each.
	Settler Settler
}

// Settler takes settles to count (limit.Settlement).
type Settler interface {
	Settle(ctx context.Context, s limit.Settlement) error
}

// Settle settles s through the Settler, or Engine.Settle without one.
func (p Port) Settle(ctx context.Context, s limit.Settlement) error {
	if p.Settler != nil {
		return p.Settler.Settle(ctx, s)
	}
	return p.Engine.Settle(ctx, s)
}

// Decide decides req through the layers.
func (p Port) Decide(ctx context.Context, req *limit.Request) (limit.Decision, error) {
	return p.Top.Decide(ctx, req)
}

// DecideLookup is Engine.DecideLookup through the layers.
func (p Port) DecideLookup(ctx context.Context, req *limit.Request, lk *cache.Lookup) (limit.Decision, error) {
	return p.Engine.DecideLookup(ctx, p.Top, req, lk)
}
