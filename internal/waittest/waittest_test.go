package waittest

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestPollReturnsOnceTheConditionHolds(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	took, ok := Poll(time.Minute, func() bool { return calls.Add(1) == 5 })
	if !ok || calls.Load() != 5 {
		t.Fatalf("Poll: got ok %v after %d checks, want true after 5", ok, calls.Load())
	}
	if took >= time.Minute {
		t.Errorf("Poll: took %v, want less than its limit", took)
	}
}

func TestPollGivesUpAfterItsLimit(t *testing.T) {
	t.Parallel()
	took, ok := Poll(20*time.Millisecond, func() bool { return false })
	if ok || took < 20*time.Millisecond {
		t.Fatalf("Poll of a condition that never holds: got (%v, %v), want (≥ 20ms, false)", took, ok)
	}
}
