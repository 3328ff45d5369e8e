package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"tollgate/limit"
	"tollgate/script"
)

// chargeTimeout bounds one Charge run.
const chargeTimeout = time.Second

// Charge counts the quota and usage of requests a node admitted without a
// decision (engine/failopen), exactly once: one run of op "decide" per
// slot (charges only, under the node's run window), in one pipeline. A
// charge whose Run the window holds was decided by that run and is
// dropped; any other is counted in the day and quota period of its At,
// and its Run entered in the window, so that a late copy of that run does
// nothing.
//
// It returns the charges not counted, to try again: those of a slot that
// awaits its restore (after the limiter lost its data: they count once it
// is restored), and those of a run that failed (err says why). A charge
// of a failed run that was never decided by another run comes back with
// that run's number, so a retry never counts it twice. Charges without
// quota and usage are dropped.
func (e *Engine) Charge(ctx context.Context, charges []limit.Charge) ([]limit.Charge, error) {
	ctx, cancel := context.WithTimeout(ctx, chargeTimeout)
	defer cancel()
	type slotCharges struct {
		slot    int
		args    *runArgs
		charges []limit.Charge
		run     *slotRun
	}
	bySlot := map[int]*slotCharges{}
	var order []*slotCharges
	for _, ch := range charges {
		var kr keyedRequest
		var q keyedQuota
		e.res.resolve(ch.Req, &kr, nil, &q, nil)
		home := kr.home()
		if kr.Quota == nil && kr.UsageKey == "" {
			continue
		}
		slot := e.r.slotOf(home)
		sc := bySlot[slot]
		if sc == nil {
			sc = &slotCharges{slot: slot, args: newRunArgs()}
			bySlot[slot] = sc
			order = append(order, sc)
		}
		sc.args.addCharge(&kr, ch.Units, ch.Requests, min(ch.At.UnixMicro(), time.Now().Add(time.Hour).UnixMicro()), ch.Run)
		sc.charges = append(sc.charges, ch)
	}
	if len(order) == 0 {
		return nil, nil
	}
	runs := make([]*slotRun, len(order))
	for i, sc := range order {
		r := &slotRun{slot: sc.slot}
		r.keys, r.argv, r.run = sc.args.build(runOpts{clock: e.r.clockArg(), changes: e.r.changesOf(r.slot),
			window: e.r.keys.RunWindow(r.slot, e.r.node), run: e.r.runs.Add(1), await: e.r.awaitRestore})
		sc.run, runs[i] = r, r
	}
	e.r.runSlots(ctx, runs)
	var kept []limit.Charge
	var errs error
	for _, sc := range order {
		r := sc.run
		var head script.DecideReply
		err := r.err
		if err == nil {
			_, err = head.Decode(r.reply)
		}
		switch {
		case err == nil && head.Status == script.RunUnrestored:
			kept = append(kept, sc.charges...)
			errs = errors.Join(errs, fmt.Errorf("slot %d: %w", r.slot, limit.ErrNotRestored))
		case err == nil && head.Status == script.RunDone:
		default: // failed, or a duplicate (cannot be: its number is new)
			if err == nil {
				err = errDuplicateRun
			}
			errs = errors.Join(errs, fmt.Errorf("slot %d: %w", r.slot, err))
			for _, ch := range sc.charges {
				if ch.Run == 0 && !isReply(err) {
					ch.Run = r.run // counted by this run, or by none
				}
				kept = append(kept, ch)
			}
		}
	}
	if errs != nil {
		return kept, fmt.Errorf("engine: charge: %w", errs)
	}
	return kept, nil
}
