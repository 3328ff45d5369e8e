package limit

import "testing"

func TestLevelString(t *testing.T) {
	t.Parallel()
	cases := []struct {
		l    Level
		want string
	}{
		{LevelNone, "none"}, {LevelPlan, "plan"}, {LevelPlanMethod, "method"}, {LevelStage, "stage"},
		{LevelAccount, "account"}, {LevelQuota, "quota"}, {LevelRule, "rule"}, {Level(99), "none"},
	}
	for _, tc := range cases {
		if got := tc.l.String(); got != tc.want {
			t.Errorf("Level(%d).String(): got %q, want %q", uint8(tc.l), got, tc.want)
		}
	}
}
