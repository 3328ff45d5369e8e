package ledgertest

import (
	"context"
	"testing"
	"time"

	"tollgate/internal/redistest"
	"tollgate/internal/waittest"
)

var (
	ctx   = context.Background()
	today = time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// drainKeys drains once and returns the key ids handed out.
func drainKeys(t *testing.T, s *RedisSource) map[string]bool {
	t.Helper()
	obs, _, err := s.Drain(ctx, 10)
	must(t, err)
	out := map[string]bool{}
	for _, o := range obs {
		out[o.KeyID] = true
	}
	return out
}

// A Drain whose read fails after it took pairs puts them back: the next
// Drain hands them out (a source that kept them held would lose them).
func TestAFailedReadPutsThePairsBack(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.MustClient(t)
	s := NewRedisSource(rdb, prefix)
	must(t, s.Count(ctx, "k1", "p1", today, 6))
	must(t, s.Count(ctx, "k2", "p1", today, 1))
	must(t, rdb.HSet(ctx, s.usageKey("k2", "p1"), "2026-03-10", "not a count").Err())
	if obs, token, err := s.Drain(ctx, 10); err == nil || obs != nil || token != "" {
		t.Fatalf("Drain with an unreadable count: got %v, %q, %v; want no observations, no token, an error", obs, token, err)
	}
	if held, err := s.Held(ctx); err != nil || held != 0 {
		t.Fatalf("after a failed Drain: got %d pairs held (%v), want 0", held, err)
	}
	must(t, rdb.HSet(ctx, s.usageKey("k2", "p1"), "2026-03-10", "1").Err())
	if got := drainKeys(t, s); !got["k1"] || !got["k2"] {
		t.Fatalf("Drain after a failed one: got keys %v, want k1 and k2", got)
	}
}

// What a Drain hands out and nobody acknowledges is handed out again once
// HoldFor has passed, never before.
func TestAHoldEndsAfterHoldFor(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.MustClient(t)
	s := NewRedisSource(rdb, prefix)
	s.HoldFor = time.Hour
	must(t, s.Count(ctx, "k1", "p1", today, 1))
	if got := drainKeys(t, s); !got["k1"] {
		t.Fatalf("first Drain: got keys %v, want k1", got)
	}
	if got := drainKeys(t, s); len(got) != 0 {
		t.Fatalf("Drain while k1 is held for an hour: got keys %v, want none", got)
	}
	s.HoldFor = time.Millisecond
	must(t, s.Requeue(ctx))
	_ = drainKeys(t, s) // held for 1 ms now
	waittest.Until(t, "Drain handing out k1 again after its hold", 10*time.Second, func() bool { return drainKeys(t, s)["k1"] })
}
