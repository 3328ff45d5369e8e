package redistest

import (
	"testing"
	"time"
)

// A server started ahead answers TIME and runs its scripts offset away from
// the test's clock (both ways), while a TTL still counts true seconds.
func TestServerAheadMovesTimeAndScriptTimeNotTTLs(t *testing.T) {
	for _, offset := range []time.Duration{72 * time.Hour, -50 * time.Hour} {
		s := MustServerAhead(t, offset)
		ctx := t.Context()
		at, err := s.Client.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if d := at.Sub(time.Now()) - offset; d < -5*time.Second || d > 5*time.Second {
			t.Errorf("offset %v: TIME is %v, want about %v", offset, at, time.Now().Add(offset))
		}
		sec, err := s.Client.Eval(ctx, "return tonumber(redis.call('TIME')[1])", nil).Int64()
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Unix(sec, 0).Sub(at); d < -5*time.Second || d > 5*time.Second {
			t.Errorf("offset %v: script time %v, TIME %v: want the same clock", offset, time.Unix(sec, 0), at)
		}
		if err := s.Client.Set(ctx, "k", "v", 10*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
		if ttl := s.Client.TTL(ctx, "k").Val(); ttl <= 0 || ttl > 10*time.Second {
			t.Errorf("offset %v: a 10 s key has TTL %v", offset, ttl)
		}
	}
}

// A stepped server's TIME follows each step while it runs, both ways.
func TestSteppedServerFollowsEachStep(t *testing.T) {
	s := MustServerStepped(t, 0)
	ctx := t.Context()
	for _, offset := range []time.Duration{40 * 24 * time.Hour, -3 * time.Hour, 400 * 24 * time.Hour} {
		s.StepClock(t, offset)
		at, err := s.Client.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if d := at.Sub(time.Now()) - offset; d < -5*time.Second || d > 5*time.Second {
			t.Errorf("offset %v: TIME is %v, want about %v", offset, at, time.Now().Add(offset))
		}
	}
}
