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
// go back to every level it took them from (op "unlease"; a TOKEN_BUCKET
// rule's state as a bucket's), and the
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
		buckets := leasedBuckets(&kr)
		// the lease's part in each slot: its buckets there, and in its
		// home slot its quota and usage
		parts := map[int][]int{}
		var partSlots []int
		for i, key := range buckets {
			s := slotOf(key)
			if _, ok := parts[s]; !ok {
				partSlots = append(partSlots, s)
			}
			parts[s] = append(parts[s], i)
		}
		if _, ok := parts[home]; !ok && (kr.Quota != nil || kr.UsageKey != "") {
			parts[home] = nil
			partSlots = append(partSlots, home)
		}
		for _, s := range partSlots {
			sl := at(s)
			a := sl.args
			ls := script.LeaseSpec{Buckets: uint8(len(parts[s])), Day: int32(rt.At.Unix() / 86400), PeriodStartS: rt.PeriodStart.Unix()}
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
			for _, bi := range parts[s] {
				at := rt.At
				if bi < len(rt.TakenAt) && !rt.TakenAt[bi].IsZero() {
					at = rt.TakenAt[bi] // by its own slot's clock (Redis Cluster)
				}
				b := script.LeaseBucketSpec{Key: index(&a.states, a.stateIdx, buckets[bi]), Taken: rt.Taken,
					Unspent: rt.Unspent, TakenAtUS: at.UnixMicro()}
				sl.spec = b.Append(sl.spec)
			}
			sl.leases++
		}
		if c := kr.Customer; c != nil { // its own entry, in its own slot on Redis Cluster
			sl := at(slotOf(c.Key))
			ls := script.LeaseSpec{Quota: index(&sl.args.states, sl.args.stateIdx, c.Key), Unspent: rt.Unspent,
				PeriodStartS: rt.PeriodStart.Unix()}
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

// leasedBuckets returns the state keys of the token buckets a lease of kr
// took tokens of: its buckets, then its TOKEN_BUCKET rules (the only
// rules a lease takes: decide.lua).
func leasedBuckets(kr *keyedRequest) []string {
	keys := make([]string, 0, len(kr.Buckets)+len(kr.Rules))
	for i := range kr.Buckets {
		keys = append(keys, kr.Buckets[i].Key)
	}
	for i := range kr.Rules {
		if kr.Rules[i].Rule.Algorithm == limit.TokenBucket {
			keys = append(keys, kr.Rules[i].Key)
		}
	}
	return keys
}
