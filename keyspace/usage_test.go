package keyspace

import "testing"

func TestSlotTagHashesToItsSlot(t *testing.T) {
	t.Parallel()
	for slot := range Slots {
		if got := Slot("{" + SlotTag(slot) + "}"); got != slot {
			t.Fatalf("SlotTag(%d) = %q hashes to slot %d", slot, SlotTag(slot), got)
		}
	}
	if got := Slot(Space{Prefix: "x"}.UsageChanges(1234)); got != 1234 {
		t.Fatalf("UsageChanges(1234) is in slot %d", got)
	}
}

func TestParseUsageReversesUsage(t *testing.T) {
	t.Parallel()
	for _, sp := range []Space{{}, {Prefix: "t:1"}} {
		for _, c := range [][2]string{{"abcdefghij", "a1b2c3"}, {"k%:{}/x", "p:1"}, {"%25", "%"}} {
			name := sp.Usage(c[0], c[1])
			k, p, ok := sp.ParseUsage(name)
			if !ok || k != c[0] || p != c[1] {
				t.Errorf("ParseUsage(%q) = %q, %q, %v; want %q, %q", name, k, p, ok, c[0], c[1])
			}
		}
		for _, bad := range []string{"", sp.Quota("k", "p"), sp.PlanBucket("k", "p"), sp.Usage("k", "p") + "x%", "other:{k:a}:u:b"} {
			if _, _, ok := sp.ParseUsage(bad); ok {
				t.Errorf("ParseUsage(%q) accepted", bad)
			}
		}
	}
}
