package keyspace

import (
	"strings"
	"testing"
)

func TestRuleStateNames(t *testing.T) {
	s := Space{Prefix: "tg"}
	got := s.RuleState("c0unter1id", "203.0.113.7", "sw")
	want := "tg:{r:c0unter1id:" + RuleDigest("203.0.113.7") + "}:sw"
	if got != want || len(RuleDigest("x")) != 32 {
		t.Errorf("got %q, want %q", got, want)
	}
	if Slot(s.RuleState("c", "v", "cc")) != Slot(s.RuleState("c", "v", "tb")) {
		t.Error("one rule value's states are in different slots")
	}
}

// FuzzRuleState: distinct (counter id, value, kind) give distinct names,
// and the hash tag holds the counter id and the value's digest whatever
// the inputs.
func FuzzRuleState(f *testing.F) {
	f.Add("c1", "v", "sw", "c1", "v ", "sw")
	f.Add("c}", "a", "tb", "c", "}a", "tb")
	f.Add("c:1", "", "cc", "c", "1:", "cc")
	f.Fuzz(func(t *testing.T, c1, v1, k1, c2, v2, k2 string) {
		s := Space{Prefix: "tg"}
		n1, n2 := s.RuleState(c1, v1, k1), s.RuleState(c2, v2, k2)
		same := c1 == c2 && v1 == v2 && k1 == k2
		if (n1 == n2) != same {
			t.Fatalf("(%q %q %q) → %q and (%q %q %q) → %q: equal %v, want %v", c1, v1, k1, n1, c2, v2, k2, n2, n1 == n2, same)
		}
		if tag := HashTag(n1); tag != "r:"+escapeID(c1)+":"+RuleDigest(v1) || strings.ContainsAny(tag, "{}") {
			t.Fatalf("%q: hash tag %q", n1, tag)
		}
	})
}
