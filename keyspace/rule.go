package keyspace

import (
	"crypto/sha256"
	"encoding/hex"
)

// RuleState names the state of one rate-limit rule for one combination of
// the request values it counts by (docs/rules.md):
// <p>:{r:<counterId>:<digest>}:<kind>, where digest is 32 hex digits of
// the SHA-256 of value (so any value, however long or odd, gives a short
// name that cannot move the hash tag) and kind is the algorithm's
// ("tb", "sw", "fw", "cc", "lb", "qt"). All the state of one (rule, value)
// shares one hash tag, so one Redis Cluster slot; different values of a
// rule spread over the slots. counterId changes when the rule's algorithm
// or key does, so a changed rule starts afresh.
func (s Space) RuleState(counterID, value, kind string) string {
	return s.prefix() + ":{r:" + escapeID(counterID) + ":" + RuleDigest(value) + "}:" + escapeID(kind)
}

// RuleDigest returns the 32 lower-case hex digits (128 bits) of the
// SHA-256 of value that RuleState puts in a rule state's hash tag.
func RuleDigest(value string) string {
	sum := sha256.Sum256([]byte(value))
	return hex.EncodeToString(sum[:16])
}
