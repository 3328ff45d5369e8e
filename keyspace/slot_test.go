package keyspace

import "testing"

// Values from Redis's CLUSTER KEYSLOT (TestSlotMatchesClusterKeyslot asks
// the live cluster for a larger corpus).
func TestSlotMatchesRedis(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		want int
	}{
		{"foo", 12182},
		{"bar", 5061},
		{"hello", 866},
		{"{foo}bar", 12182},
		{"x{foo}", 12182},
		{"{}foo", 9500}, // an empty tag hashes the whole name
		{"", 0},
	}
	for _, c := range cases {
		if got := Slot(c.name); got != c.want {
			t.Errorf("Slot(%q): got %d, want %d", c.name, got, c.want)
		}
	}
	if Slot("{}foo") == Slot("foo") {
		t.Errorf("Slot(%q) equals Slot(%q): an empty tag must hash the whole name", "{}foo", "foo")
	}
}

func TestPerKeyStateSharesOneSlot(t *testing.T) {
	t.Parallel()
	s := Space{}
	want := Slot(s.Quota("abcdefghij", "p1"))
	for _, n := range []string{s.PlanBucket("abcdefghij", "p1"), s.Usage("abcdefghij", "p2"),
		s.PlanMethodBucket("abcdefghij", "p3", "api", "prod", "GET", "/pets/{id}")} {
		if got := Slot(n); got != want {
			t.Errorf("Slot(%q): got %d, want %d (the key's slot)", n, got, want)
		}
	}
}

func TestSlotDoesNotAllocate(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = Slot("tg:{k:abcdefghij}:q:p1") }); n != 0 {
		t.Fatalf("Slot: got %v allocations, want 0", n)
	}
}
