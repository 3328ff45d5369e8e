package limit

import "testing"

func TestLevelString(t *testing.T) {
	t.Parallel()
	cases := []struct {
		l    Level
		want string
	}{
		{LevelNone, "none"}, {LevelPlan, "plan"}, {LevelPlanMethod, "method"}, {LevelStage, "stage"},
		{LevelAccount, "account"}, {LevelQuota, "quota"}, {LevelRule, "rule"}, {LevelCustomer, "customer"}, {Level(99), "none"},
	}
	for _, tc := range cases {
		if got := tc.l.String(); got != tc.want {
			t.Errorf("Level(%d).String(): got %q, want %q", uint8(tc.l), got, tc.want)
		}
	}
}

// The plan bucket of a request is its first bucket of a per-key level,
// whichever of the two it is; shared buckets never are.
func TestPlanBucketIsTheFirstPerKeyBucket(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		levels []Level
		want   bool
	}{
		{[]Level{LevelPlan, LevelStage}, true}, {[]Level{LevelPlanMethod, LevelAccount}, true},
		{[]Level{LevelStage, LevelAccount}, false}, {nil, false},
	} {
		r := &Request{}
		for _, l := range tc.levels {
			r.Buckets = append(r.Buckets, Bucket{Level: l})
		}
		if got := r.PlanBucket() != nil; got != tc.want || (got && r.PlanBucket() != &r.Buckets[0]) {
			t.Errorf("%v: PlanBucket: got %v, want %v (the first bucket)", tc.levels, got, tc.want)
		}
	}
}
