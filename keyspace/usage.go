package keyspace

import (
	"strconv"
	"strings"
	"sync"
)

// UsageChanges names the set of one Redis Cluster slot's usage hashes
// whose counts changed since the ledger's flush worker last took them
// (docs/usage.md): <p>:{<tag>}:uc, where <tag> is SlotTag(slot), so the
// set sits in slot and the limiter script that counts a key's usage marks
// it changed in the same atomic run. On one primary (a single server or
// Sentinel) the engine uses slot 0's set for every key. slot must be in
// 0..Slots-1.
func (s Space) UsageChanges(slot int) string {
	return s.prefix() + ":{" + SlotTag(slot) + "}:uc"
}

// UsageHolds names the score of the last hold the ledger's flush worker
// took in slot's usage change set: <p>:{<tag>}:uh, beside the set.
func (s Space) UsageHolds(slot int) string {
	return s.prefix() + ":{" + SlotTag(slot) + "}:uh"
}

// SlotTag returns the shortest hash tag "c<n>" (n the smallest such
// decimal number) whose Redis Cluster slot is slot (0..Slots-1): Slot of
// "{"+SlotTag(s)+"}" is s. The table of all tags is computed once, on
// first use (about 10⁵ CRC16s).
func SlotTag(slot int) string {
	slotTagsOnce.Do(func() {
		slotTags = make([]string, Slots)
		left := Slots
		for n := 0; left > 0; n++ {
			tag := "c" + strconv.Itoa(n)
			if s := Slot(tag); slotTags[s] == "" {
				slotTags[s] = tag
				left--
			}
		}
	})
	return slotTags[slot]
}

var (
	slotTagsOnce sync.Once
	slotTags     []string
)

// ParseUsage returns the key id and plan id of a usage hash name that
// Usage built under this Space's prefix; ok is false for any other name.
func (s Space) ParseUsage(name string) (keyID, planID string, ok bool) {
	rest, ok := strings.CutPrefix(name, s.prefix()+":{k:")
	if !ok {
		return "", "", false
	}
	escKey, escPlan, ok := strings.Cut(rest, "}:u:")
	if !ok || escKey == "" || escPlan == "" {
		return "", "", false
	}
	if keyID, ok = unescape(escKey); !ok {
		return "", "", false
	}
	if planID, ok = unescape(escPlan); !ok {
		return "", "", false
	}
	return keyID, planID, s.Usage(keyID, planID) == name
}

// unescape reverses escapeID; ok is false for a malformed escape.
func unescape(s string) (string, bool) {
	if !strings.Contains(s, "%") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", false
		}
		n, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", false
		}
		b.WriteByte(byte(n))
		i += 2
	}
	return b.String(), true
}

// RunWindow names the run window of one node in one slot: the runs of
// the node's engine (numbered by node, a random 32-bit number per
// process) that ran there, so that requests are counted exactly once
// (docs/behaviour.md, "What an outage costs"): <p>:{<tag>}:run:<node in
// hex>, in slot (SlotTag). On one primary the engine uses slot 0.
func (s Space) RunWindow(slot int, node uint32) string {
	return s.prefix() + ":{" + SlotTag(slot) + "}:run:" + strconv.FormatUint(uint64(node), 16)
}
