package gateway

import (
	"time"

	"tollgate/internal/clientaddr"
)

// Failed key attempts per client address (docs/behaviour.md, "Order of work"): a local token
// bucket per address, refilled at FailedKeyRate per second up to
// FailedKeyBurst; each refused key takes a token, and an address with no
// token left gets 429 before any key lookup.
const (
	FailedKeyRate  = 20.0
	FailedKeyBurst = 40.0
	// maxFailedAddrs bounds the addresses remembered.
	maxFailedAddrs = 65536
)

// newAttempts returns the failed key attempt limiter on the clock now.
func newAttempts(now func() time.Time) *clientaddr.Failures {
	return clientaddr.NewFailures(FailedKeyRate, FailedKeyBurst, maxFailedAddrs, now)
}
