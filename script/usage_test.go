package script

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// A usage hash's day fields read back as the requests and units counted
// into them, whatever else the hash holds.
func TestParseUsageSumsRequestsAndExtraUnits(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		fields := map[string]string{"note": "x", "2026-13": "1"}
		want := map[string]DayUsage{}
		for d := range r.IntN(5) {
			day := "2026-12-0" + strconv.Itoa(d+1)
			req := r.Int64N(1000) + 1
			extra := r.Int64N(5000) - req // a day of requests costing 0 has extra -req
			fields[day] = strconv.FormatInt(req, 10)
			if extra != 0 {
				fields[day+UsageExtra] = strconv.FormatInt(extra, 10)
			}
			want[day] = DayUsage{Requests: req, Units: req + extra}
		}
		got, err := ParseUsage(fields)
		if err != nil || len(got) != len(want) {
			t.Fatalf("%v: got %v, %v; want %v", fields, got, err, want)
		}
		for day, w := range want {
			if got[day] != w {
				t.Fatalf("%v: day %s got %+v, want %+v", fields, day, got[day], w)
			}
		}
	}
	if _, err := ParseUsage(map[string]string{"2026-12-01": "many"}); err == nil {
		t.Error("a count that is no integer: got no error")
	}
}
