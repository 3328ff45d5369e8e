package script

import (
	"fmt"
	"strconv"
	"strings"
)

// DayUsage is one UTC day of a usage hash: the requests counted and their
// cost units.
type DayUsage struct {
	Requests, Units int64
}

// ParseUsage reads the fields of a usage hash (usage.lua: "YYYY-MM-DD" →
// requests, "YYYY-MM-DD#x" → cost units beyond one per request) into
// each day's usage, by "YYYY-MM-DD"; fields of another shape are skipped.
// A count that is not an integer is an error; negative counts are passed
// on (plans.UsageObservation.Validate refuses them).
func ParseUsage(fields map[string]string) (map[string]DayUsage, error) {
	out := make(map[string]DayUsage, len(fields))
	for f, v := range fields {
		day, extra := strings.CutSuffix(f, UsageExtra)
		if !isDate(day) {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("script: usage field %s: count %q", f, v)
		}
		u := out[day]
		if extra {
			u.Units += n
		} else {
			u.Requests += n
			u.Units += n
		}
		out[day] = u
	}
	return out, nil
}

// isDate reports whether s has the shape YYYY-MM-DD.
func isDate(s string) bool {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return false
	}
	for i := range len(s) {
		if i != 4 && i != 7 && (s[i] < '0' || s[i] > '9') {
			return false
		}
	}
	return true
}
