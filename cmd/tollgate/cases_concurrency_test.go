package main

import (
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"
)

// concurrencyTrials is how many fresh keys each limit of
// TestConcurrencyNeverOvershoots is raced with.
const concurrencyTrials = 25

// TestConcurrencyNeverOvershoots races 40 concurrent requests of one fresh
// key, split across both gateways, against a quota of 10 and against a
// burst of 7, concurrencyTrials times each: every trial admits exactly the
// limit, each admitted request sees its own Remaining, and the upstream
// sees exactly the admitted ones.
func TestConcurrencyNeverOvershoots(t *testing.T) {
	t.Parallel()
	s := mustStack(t)
	api := s.mustCaseAPI(t)
	for _, tc := range []struct {
		name  string
		plan  planSpec
		limit int
	}{
		{"quota 10 per DAY", planSpec{Throttle: throttle(10000, 10000), Quota: quota(10, types.QuotaPeriodTypeDay, 0)}, 10},
		{"plan burst 7", planSpec{Throttle: throttle(0.001, 7)}, 7},
		{"plan-method burst 4", planSpec{Method: map[string]types.ThrottleSettings{"/items/GET": {RateLimit: 0.001, BurstLimit: 4}}}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := s.mustPlan(t, api.id, tc.plan)
			s.sync(t)
			want := make([]string, tc.limit)
			for i := range want {
				want[i] = itoa(i)
			}
			slices.Sort(want)
			for trial := range concurrencyTrials {
				_, key := s.mustKey(t, p)
				before := s.echo.Hits()
				ok, rem := s.countOK(t, api.id, key, 40)
				slices.Sort(rem)
				if ok != tc.limit || !slices.Equal(rem, want) {
					t.Errorf("trial %d: %d of 40 admitted with Remaining %v, want %d with %v", trial+1, ok, rem, tc.limit, want)
				}
				if hits := s.echo.Hits() - before; hits != int64(ok) {
					t.Errorf("trial %d: upstream hits %d, want %d", trial+1, hits, ok)
				}
			}
		})
	}
}
