package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"tollgate/limit"
	"tollgate/script"
)

// chargeTimeout bounds one Charge run.
const chargeTimeout = time.Second

// Charge counts charges exactly once (limit.Charge): the quota, customer
// quota and usage of requests a node admitted without a decision
// (engine/failopen), and the settles of admitted requests once their
// response is known. One run of op "decide" per slot (charges only, under
// the node's run window), in one pipeline; on Redis Cluster a customer
// quota in a slot of its own is charged by that slot's run (part
// limit.PartCustomer), the rest by the run of the key's slot. A charge
// part whose Run the window holds was decided by that run (see
// script.ChargeSpec for what a settle charges then); a part whose Prev
// the window holds was counted by that earlier try. Every other part is
// counted in the day and quota period of its At (Redis's time; zero: now,
// as the node estimates it), and its Run and Prev entered in the window,
// so that a late copy of either does nothing.
//
// It returns the charges not counted, to try again: those of a slot that
// awaits its restore (after the limiter lost its data: they count once it
// is restored), and those of a run that failed (err says why), with the
// parts that did land in Done and the failed run in Prev when Redis did
// not reply (so a retry never counts them twice). Charges without quota,
// customer quota or usage are dropped.
func (e *Engine) Charge(ctx context.Context, charges []limit.Charge) ([]limit.Charge, error) {
	ctx, cancel := context.WithTimeout(ctx, chargeTimeout)
	defer cancel()
	type slotCharges struct {
		args  *runArgs
		parts []chargePart
		run   *slotRun
	}
	bySlot := map[int]*slotCharges{}
	var order []*slotCharges
	for i := range charges {
		for _, p := range e.chargeParts(&charges[i], i) {
			sc := bySlot[p.slot]
			if sc == nil {
				sc = &slotCharges{args: newRunArgs(), run: &slotRun{slot: p.slot}}
				bySlot[p.slot] = sc
				order = append(order, sc)
			}
			sc.args.addCharge(&p)
			sc.parts = append(sc.parts, p)
		}
	}
	if len(order) == 0 {
		return nil, nil
	}
	runs := make([]*slotRun, len(order))
	for i, sc := range order {
		r := sc.run
		r.keys, r.argv, r.run = sc.args.build(runOpts{clock: e.r.clockArg(), changes: e.r.changesOf(r.slot),
			window: e.r.keys.RunWindow(r.slot, e.r.node), run: e.r.nextRun(r.slot), await: e.r.awaitRestore})
		runs[i] = r
	}
	if e.r.cc != nil {
		e.r.trips.Add(1) // one pipeline
	} else {
		e.r.trips.Add(int64(len(runs)))
	}
	e.r.runSlots(ctx, runs)
	var failed []chargePart // to try again
	var errs error
	for _, sc := range order {
		r := sc.run
		var head script.DecideReply
		err := r.err
		if err == nil {
			_, err = head.Decode(r.reply)
		}
		switch {
		case err == nil && head.Status == script.RunDone:
			continue
		case err == nil && head.Status == script.RunUnrestored:
			err = limit.ErrNotRestored
		case err == nil: // a duplicate: cannot be, its number is new
			err = errDuplicateRun
		}
		errs = errors.Join(errs, fmt.Errorf("slot %d: %w", r.slot, err))
		for _, p := range sc.parts {
			if p.prev == 0 && err != limit.ErrNotRestored && !isReply(err) {
				p.prev = r.run // counted by this run, or by none: every later try names it
			}
			failed = append(failed, p)
		}
	}
	var kept []limit.Charge
	for _, p := range failed {
		ch := charges[p.charge]
		ch.Done |= p.all &^ p.parts // the other slot's part landed, or is a retry of its own
		ch.Prev = p.prev
		kept = append(kept, ch)
	}
	if errs != nil {
		return kept, fmt.Errorf("engine: charge: %w", errs)
	}
	return kept, nil
}

// chargePart is the part of a charge counted in one slot.
type chargePart struct {
	charge     int // index of its charge
	slot       int
	parts, all limit.Parts // its parts, and those of the whole charge counted now
	spec       script.ChargeSpec
	period     *keyedQuota // the rule of the key quota's period
	custPeriod *keyedQuota // the customer quota's own (the plan's calendar)
	quotaKey   string
	custKey    string
	bucketKey  string
	usageKey   string
	prev       int64
}

// chargeParts splits ch (charges[i]) into its parts, one per slot: the
// key's own state (with the customer quota when it shares the key's
// slot), and the customer quota when it lives in another slot (Redis
// Cluster). Parts in ch.Done, and parts with nothing to count, are left
// out.
func (e *Engine) chargeParts(ch *limit.Charge, i int) []chargePart {
	if ch.Req.KeyID == "" {
		return nil
	}
	var kr keyedRequest
	var q, cq keyedQuota
	var buckets [4]keyedBucket
	e.res.resolve(ch.Req, &kr, buckets[:0], &q, &cq)
	settle := ch.Kind != limit.ChargeAdmitted
	requests, usage := ch.Requests, kr.UsageKey
	if settle { // counted, or marked for the ledger when its quota changes
		usage = e.r.keys.Usage(ch.Req.KeyID, ch.Req.PlanID)
	} else if requests == 0 {
		requests = ch.Units
	}
	now := e.r.estimate() // Redis's time
	at := ch.At
	if at.IsZero() {
		at = now
	}
	spec := script.ChargeSpec{Units: ch.Units, AtUS: min(at.UnixMicro(), now.Add(time.Hour).UnixMicro()),
		Run: ch.Run, Kind: uint8(ch.Kind), Reserved: ch.Reserved, Prev: ch.Prev}
	key := chargePart{charge: i, slot: e.r.slotOf(cmp.Or(kr.home(), usage)), spec: spec, period: cmp.Or(kr.Quota, kr.Customer), prev: ch.Prev}
	if ch.Done&limit.PartKey == 0 {
		key.parts = limit.PartKey
		if kr.Quota != nil {
			key.quotaKey = kr.Quota.Key
		}
		if usage != "" && (requests > 0 || settle && kr.Quota != nil) {
			key.usageKey, key.spec.Requests = usage, requests
		}
		if i := kr.planIndex(); i >= 0 && ch.Bucket {
			key.bucketKey = kr.Buckets[i].Key
		}
	}
	var out []chargePart
	cust := kr.Customer
	if cust != nil && ch.Done&limit.PartCustomer == 0 && !(ch.CustomerTaken && !settle) {
		if s := e.r.slotOf(cust.Key); s == key.slot {
			key.custKey, key.custPeriod = cust.Key, cust
			key.parts |= limit.PartCustomer
		} else {
			cp := chargePart{charge: i, slot: s, parts: limit.PartCustomer, spec: spec, custPeriod: cust, custKey: cust.Key, prev: ch.Prev}
			cp.spec.Run = ch.CustomerRun
			if ch.CustomerTaken { // a settle whose customer units its own slot's run took
				cp.spec.Kind = uint8(limit.ChargeSettle)
			}
			out = append(out, cp)
		}
	}
	if key.quotaKey != "" || key.usageKey != "" || key.custKey != "" || key.bucketKey != "" {
		out = append(out, key)
	}
	var all limit.Parts
	for _, p := range out {
		all |= p.parts
	}
	for j := range out {
		out[j].all = all
	}
	return out
}
