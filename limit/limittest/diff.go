package limittest

import (
	"fmt"
	"time"

	"tollgate/limit"
)

// Diff describes how decision got differs from want, "" when they agree:
// exactly on admission, level, units granted, remaining counts, limits and
// windows, and to within 1 µs on retry-after, lease waits, delays and
// resets (float rounding in the script); rule outcomes likewise.
func Diff(got, want limit.Decision) string {
	switch {
	case got.Allowed != want.Allowed:
		return diff("Allowed", got.Allowed, want.Allowed)
	case got.Refused != want.Refused:
		return diff("Refused", got.Refused, want.Refused)
	case got.NoRetry != want.NoRetry:
		return diff("NoRetry", got.NoRetry, want.NoRetry)
	case abs(got.RetryAfter-want.RetryAfter) > time.Microsecond:
		return diff("RetryAfter", got.RetryAfter, want.RetryAfter)
	case !got.Now.Equal(want.Now):
		return diff("Now", got.Now, want.Now)
	case got.Granted != want.Granted:
		return diff("Granted", got.Granted, want.Granted)
	case abs(got.LeaseWait-want.LeaseWait) > time.Microsecond:
		return diff("LeaseWait", got.LeaseWait, want.LeaseWait)
	case abs(got.Delay-want.Delay) > time.Microsecond:
		return diff("Delay", got.Delay, want.Delay)
	case len(got.Rules) != len(want.Rules):
		return diff("len(Rules)", len(got.Rules), len(want.Rules))
	case got.Refused == limit.LevelRule && got.RefusedRule != want.RefusedRule:
		return diff("RefusedRule", got.RefusedRule, want.RefusedRule)
	}
	if s := diffState("Plan", got.Plan, want.Plan); s != "" {
		return s
	}
	if s := diffState("Quota", got.Quota, want.Quota); s != "" {
		return s
	}
	if s := diffState("Customer", got.Customer, want.Customer); s != "" {
		return s
	}
	for i := range got.Rules {
		g, w := got.Rules[i], want.Rules[i]
		name := fmt.Sprintf("Rules[%d]", i)
		switch {
		case g.Admitted != w.Admitted:
			return diff(name+".Admitted", g.Admitted, w.Admitted)
		case g.NoRetry != w.NoRetry:
			return diff(name+".NoRetry", g.NoRetry, w.NoRetry)
		case abs(g.RetryAfter-w.RetryAfter) > time.Microsecond:
			return diff(name+".RetryAfter", g.RetryAfter, w.RetryAfter)
		case abs(g.Delay-w.Delay) > time.Microsecond:
			return diff(name+".Delay", g.Delay, w.Delay)
		}
		if s := diffState(name+".State", &g.State, &w.State); s != "" {
			return s
		}
	}
	return ""
}

func diffState(name string, got, want *limit.State) string {
	switch {
	case (got == nil) != (want == nil):
		return diff(name, got, want)
	case got == nil:
		return ""
	case got.Limit != want.Limit:
		return diff(name+".Limit", got.Limit, want.Limit)
	case got.Remaining != want.Remaining:
		return diff(name+".Remaining", got.Remaining, want.Remaining)
	case got.Reset.IsZero() != want.Reset.IsZero() || abs(got.Reset.Sub(want.Reset)) > time.Microsecond:
		return diff(name+".Reset", got.Reset, want.Reset)
	case got.Window != want.Window:
		return diff(name+".Window", got.Window, want.Window)
	}
	return ""
}

func diff(field string, got, want any) string {
	return fmt.Sprintf("%s: got %v, want %v", field, got, want)
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
