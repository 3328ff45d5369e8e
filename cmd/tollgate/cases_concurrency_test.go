package main

import (
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"
)

// concurrencyTrials returns how many fresh keys each limit of
// TestConcurrencyNeverOvershoots is raced with: 10, or
// TOLLGATE_TEST_TRIALS for a longer run (e.g. 200 before a release).
func concurrencyTrials(t *testing.T) int {
	v := os.Getenv("TOLLGATE_TEST_TRIALS")
	if v == "" {
		return 10
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("TOLLGATE_TEST_TRIALS=%q: want a positive integer", v)
	}
	return n
}

// TestConcurrencyNeverOvershoots races 40 concurrent requests of one fresh
// key, split across both gateways, against a quota of 10, a plan burst of 7
// and a plan-method burst of 4, concurrencyTrials times each: every trial
// admits exactly the limit, each admitted request sees its own Remaining,
// and the upstream sees exactly the admitted ones.
func TestConcurrencyNeverOvershoots(t *testing.T) {
	t.Parallel()
	// Failure mode closed: a decision past its deadline must show as a 503,
	// never as an admission without limits that would look like overshoot.
	s := mustStackWith(t, stackOptions{failureMode: "closed"})
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
			trials := concurrencyTrials(t)
			for trial := range trials {
				_, key := s.mustKey(t, p)
				before := s.echo.Hits()
				ok, rem := s.countOK(t, api.id, key, 40)
				slices.Sort(rem)
				if ok != tc.limit || !slices.Equal(rem, want) {
					t.Errorf("trial %d of %d: %d of 40 admitted with Remaining %v, want %d with %v", trial+1, trials, ok, rem, tc.limit, want)
				}
				if hits := s.echo.Hits() - before; hits != int64(ok) {
					t.Errorf("trial %d: upstream hits %d, want %d", trial+1, hits, ok)
				}
			}
			t.Logf("%d trials of 40 concurrent requests over two gateways", trials)
		})
	}
}
