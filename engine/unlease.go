package engine

import (
	"context"
	"fmt"
	"time"

	"tollgate/limit"
	"tollgate/script"
)

// unleaseTimeout bounds one Unlease.
const unleaseTimeout = time.Second

// Unlease ends capacity leases (engine/lease): each lease's unspent units
// go back to every level it took them from (op "unlease": a TOKEN_BUCKET
// rule's state as a bucket's, a window rule's to the window of the take),
// and the
// requests the node admitted on it are counted in usage on the UTC day of
// its take. One run per slot, in one pipeline on Redis Cluster. A run is
// sent once (a charging run: see onceCmd); when it fails, its unspent
// units are lost (never over-admitted) and so is the usage of its spent
// requests, and the error says so (docs/leases.md states the bound).
func (e *Engine) Unlease(ctx context.Context, returns []limit.Return) error {
	ctx, cancel := context.WithTimeout(ctx, unleaseTimeout)
	defer cancel()
	type slotLeases struct {
		args    *runArgs
		leases  int
		spec    []byte
		changes string
	}
	bySlot := map[int]*slotLeases{}
	var slots []int
	at := func(slot int) *slotLeases {
		sl := bySlot[slot]
		if sl == nil {
			sl = &slotLeases{args: newRunArgs()}
			bySlot[slot] = sl
			slots = append(slots, slot)
		}
		return sl
	}
	slotOf := e.r.slotOf
	for _, rt := range returns {
		var kr keyedRequest
		var q, cq keyedQuota
		e.res.resolve(rt.Req, &kr, nil, &q, &cq)
		home := slotOf(kr.home())
		// the lease's part in each slot: its buckets and window rules
		// there, and in its home slot its quota and usage
		parts := map[int]*leasePart{}
		var partSlots []int
		part := func(s int) *leasePart {
			p := parts[s]
			if p == nil {
				p = &leasePart{}
				parts[s] = p
				partSlots = append(partSlots, s)
			}
			return p
		}
		for i := range kr.Buckets {
			p := part(slotOf(kr.Buckets[i].Key))
			p.buckets = append(p.buckets, leasedBucket{kr.Buckets[i].Key, takenAt(&rt, i)})
		}
		for i := range kr.Rules {
			r := &kr.Rules[i]
			switch r.Rule.Algorithm {
			case limit.TokenBucket:
				p := part(slotOf(r.Key))
				p.buckets = append(p.buckets, leasedBucket{r.Key, takenAt(&rt, len(kr.Buckets)+i)})
			case limit.FixedWindow, limit.SlidingWindow:
				p := part(slotOf(r.Key))
				p.windows = append(p.windows, leasedWindow{r, takenAt(&rt, len(kr.Buckets)+i)})
			}
		}
		if kr.Quota != nil || kr.UsageKey != "" {
			part(home)
		}
		for _, s := range partSlots {
			sl, p := at(s), parts[s]
			a := sl.args
			ls := script.LeaseSpec{Buckets: uint8(len(p.buckets)), Windows: uint8(len(p.windows)), Day: int32(rt.At.Unix() / 86400),
				PeriodStartS: rt.PeriodStart.Unix()}
			if s == home {
				if kr.Quota != nil {
					ls.Quota = index(&a.states, a.stateIdx, kr.Quota.Key)
					if !rt.KeepQuota {
						ls.Unspent = rt.Unspent
					}
				}
				if kr.UsageKey != "" {
					ls.Usage = index(&a.usages, a.usageIdx, kr.UsageKey)
					ls.Spent = rt.Spent
					sl.changes = e.r.changesOf(s)
				}
			}
			sl.spec = ls.Append(sl.spec)
			for _, lb := range p.buckets {
				b := script.LeaseBucketSpec{Key: index(&a.states, a.stateIdx, lb.key), Taken: rt.Taken,
					Unspent: rt.Unspent, TakenAtUS: lb.at.UnixMicro()}
				sl.spec = b.Append(sl.spec)
			}
			for _, lw := range p.windows {
				r := lw.rule
				w := script.LeaseWindowSpec{Key: index(&a.states, a.stateIdx, r.Key), Algorithm: uint8(r.Rule.Algorithm),
					WindowUS: windowUS(r.Rule), TakenAtUS: lw.at.UnixMicro(), Unspent: rt.Unspent}
				sl.spec = w.Append(sl.spec)
			}
			sl.leases++
		}
		if c := kr.Customer; c != nil { // its own entry, in its own slot on Redis Cluster
			sl := at(slotOf(c.Key))
			start := rt.PeriodStart
			if !rt.CustomerPeriodStart.IsZero() {
				start = rt.CustomerPeriodStart // its own period (the plan's calendar)
			}
			ls := script.LeaseSpec{Quota: index(&sl.args.states, sl.args.stateIdx, c.Key), Unspent: rt.Unspent,
				PeriodStartS: start.Unix()}
			sl.spec = ls.Append(sl.spec)
			sl.leases++
		}
	}
	runs := make([]*slotRun, 0, len(slots))
	for _, s := range slots {
		sl := bySlot[s]
		a := sl.args
		keys := append(append([]string(nil), a.states...), a.usages...)
		head := script.UnleaseArgs{Leases: uint16(sl.leases), States: uint16(len(a.states)), Usages: uint16(len(a.usages))}
		if sl.changes != "" {
			keys = append(keys, sl.changes)
			head.Changes = uint16(len(keys))
		}
		spec := append(head.Append(nil), sl.spec...)
		runs = append(runs, &slotRun{slot: s, keys: keys, argv: []any{script.OpUnlease, e.r.clockArg(), spec}})
	}
	if len(runs) > 0 {
		e.r.trips.Add(1) // one run on one primary; one pipeline on Redis Cluster
	}
	e.r.runSlots(ctx, runs)
	for _, r := range runs {
		if r.err != nil {
			return fmt.Errorf("engine: lease give-back: %w", r.err)
		}
	}
	return nil
}

// leasePart is what one lease took in one slot: its token buckets (its
// buckets and TOKEN_BUCKET rules) and its window rules.
type leasePart struct {
	buckets []leasedBucket
	windows []leasedWindow
}

// leasedWindow is a window rule and when the lease took its units (the
// window they go back to).
type leasedWindow struct {
	rule *keyedRule
	at   time.Time
}

// leasedBucket is a token bucket's state key and when the lease took its
// tokens.
type leasedBucket struct {
	key string
	at  time.Time
}

// takenAt returns when level i of rt's lease (its buckets, then its rules)
// gave its units: by its own slot's clock on Redis Cluster
// (limit.Return.TakenAt), else at the take's time.
func takenAt(rt *limit.Return, i int) time.Time {
	if i < len(rt.TakenAt) && !rt.TakenAt[i].IsZero() {
		return rt.TakenAt[i]
	}
	return rt.At
}
